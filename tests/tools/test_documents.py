"""Uploaded PDF, DOCX, XLSX and PPTX files become Markdown beside the upload; damaged files give
a clear error. The documents are made by the tests (see sample_documents.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from herdsman.tools.documents import DocumentConversionError, convert_upload, is_convertible, markdown_path
from tests.tools.sample_documents import make_docx, make_pdf, make_pptx, make_xlsx


@pytest.mark.parametrize(
    "maker,name,expected",
    [
        (make_pdf, "schedule.pdf", ["Vaccination schedule for the herd"]),
        (make_docx, "plan.docx", ["# Grazing plan", "Move the herd to the north field on Monday."]),
        (make_xlsx, "herd.xlsx", ["## Herd", "| Goat | Age | Milk (l/day) |", "| Ada | 3 | 2.5 |"]),
        (make_pptx, "report.pptx", ["# Quarterly goat report", "Milk output rose by 12 percent"]),
    ],
)
def test_upload_becomes_markdown_beside_it(tmp_path: Path, maker, name: str, expected: list[str]) -> None:
    upload = maker(tmp_path / name)
    md = convert_upload(upload)
    assert md == tmp_path / f"{name}.md"
    text = md.read_text()
    for piece in expected:
        assert piece in text
    assert upload.exists()  # the original is kept
    assert sorted(p.name for p in tmp_path.iterdir()) == [name, f"{name}.md"]  # no temp files left


@pytest.mark.parametrize(
    "name,data,kind",
    [
        ("broken.pdf", b"%PDF-1.4\n1 0 obj garbage\n%%EOF", "PDF"),
        ("broken.docx", b"PK\x03\x04 not really a zip", "DOCX"),
        ("renamed.xlsx", b"Goat,Age\nAda,3\n", "XLSX"),
        ("broken.pptx", b"\x00" * 64, "PPTX"),
    ],
)
def test_corrupted_upload_gives_clear_error(tmp_path: Path, name: str, data: bytes, kind: str) -> None:
    upload = tmp_path / name
    upload.write_bytes(data)
    with pytest.raises(DocumentConversionError) as err:
        convert_upload(upload)
    message = str(err.value)
    assert name in message and f"not really a {kind}" in message and "upload it again" in message
    assert not markdown_path(upload).exists()


def test_truncated_xlsx_is_refused(tmp_path: Path) -> None:
    full = make_xlsx(tmp_path / "full.xlsx")
    cut = tmp_path / "cut.xlsx"
    cut.write_bytes(full.read_bytes()[:600])
    with pytest.raises(DocumentConversionError, match="cut.xlsx could not be read as a XLSX file"):
        convert_upload(cut)


def test_pdf_without_text_says_so(tmp_path: Path) -> None:
    empty = make_pdf(tmp_path / "scan.pdf", text="")
    with pytest.raises(DocumentConversionError, match="no text that can be extracted"):
        convert_upload(empty)


def test_which_files_convert() -> None:
    assert is_convertible("a/Report.PDF") and is_convertible("x.docx") and is_convertible("y.pptx")
    assert not is_convertible("notes.txt") and not is_convertible("image.png")
    with pytest.raises(DocumentConversionError, match="only PDF, DOCX, XLSX, PPTX"):
        convert_upload(Path("notes.txt"))


def test_sandbox_upload_is_converted_beside_it(config, home: Path) -> None:
    """What the uploads path calls: virtual paths in, a virtual .md path out."""
    from herdsman.sandbox.provider import build_sandbox_provider
    from herdsman.tools.documents import convert_sandbox_upload

    provider = build_sandbox_provider(config)
    try:
        sandbox = provider.acquire("t-docs")
        uploads = home / "threads" / "t-docs" / "user-data" / "uploads"
        make_xlsx(uploads / "herd.xlsx")
        (uploads / "broken.pdf").write_bytes(b"%PDF-1.4 nothing")
        (uploads / "notes.txt").write_text("plain")
        md = convert_sandbox_upload(sandbox, "/mnt/user-data/uploads/herd.xlsx")
        assert md == "/mnt/user-data/uploads/herd.xlsx.md"
        assert "| Ada | 3 | 2.5 |" in sandbox.read_text(md)
        assert convert_sandbox_upload(sandbox, "/mnt/user-data/uploads/notes.txt") is None
        with pytest.raises(DocumentConversionError) as err:
            convert_sandbox_upload(sandbox, "/mnt/user-data/uploads/broken.pdf")
        assert "broken.pdf could not be read as a PDF" in str(err.value)
        assert str(home) not in str(err.value) and "/tmp" not in str(err.value)
        with pytest.raises(DocumentConversionError, match="does not exist"):
            convert_sandbox_upload(sandbox, "/mnt/user-data/uploads/gone.docx")
    finally:
        provider.close()
