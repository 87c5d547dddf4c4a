"""Red team: documents built to explode end as a clear error, and the gateway's memory stays flat.

Finding 3 of the hardening issue: a 66 KB DOCX (18 MB of XML) took the gateway from 147 MB to
796 MB and 63 s; a 327 KB one to 3.2 GB and 255 s. Conversion now runs in a child process with
memory, CPU and wall-time limits. The bombs are made here, small on disk.
"""

from __future__ import annotations

import resource
import zipfile
from pathlib import Path

import pytest

from herdsman.tools.documents import DocumentConversionError, document_to_markdown
from tests.tools.sample_documents import _DOCX_FILES, make_docx

pytest.importorskip("markitdown")


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _docx_bomb(path: Path, paragraphs: int) -> Path:
    """A DOCX whose document.xml repeats one paragraph ``paragraphs`` times (deflates ~1000:1)."""
    head = _DOCX_FILES["word/document.xml"].split("<w:body>")[0] + "<w:body>"
    para = "<w:p><w:r><w:t>" + "goat " * 40 + "</w:t></w:r></w:p>"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name, text in _DOCX_FILES.items():
            if name != "word/document.xml":
                zf.writestr(name, text)
        with zf.open("word/document.xml", "w", force_zip64=True) as fh:
            fh.write(head.encode())
            block = (para * 1000).encode()
            for _ in range(paragraphs // 1000):
                fh.write(block)
            fh.write(b"</w:body></w:document>")
    return path


def test_docx_bomb_is_refused_with_a_clear_error_and_flat_memory(tmp_path: Path) -> None:
    bomb = _docx_bomb(tmp_path / "bomb.docx", 400_000)  # ~90 MB of XML
    assert bomb.stat().st_size < 2_000_000
    before = _peak_rss_mb()
    with pytest.raises(DocumentConversionError, match="this document could not be converted: bomb.docx") as info:
        document_to_markdown(bomb, memory_mb=400, seconds=60)
    message = str(info.value)
    assert "memory" in message or "took longer" in message or "CPU" in message, message
    assert _peak_rss_mb() - before < 50, "the conversion grew the gateway's own memory"


def test_slow_conversion_is_stopped_at_the_wall_time(tmp_path: Path) -> None:
    bomb = _docx_bomb(tmp_path / "slow.docx", 200_000)
    with pytest.raises(DocumentConversionError, match="took longer than 1 s"):
        document_to_markdown(bomb, seconds=1)


def test_zip_bomb_entry_is_refused(tmp_path: Path) -> None:
    """One entry of 2 GB of zeros (about 9 MB on disk) in an XLSX. The converter reads the same
    2 GB whatever the level it was compressed at: level 1 makes it in half the CPU time of 9."""
    path = tmp_path / "zeros.xlsx"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        with zf.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as fh:
            chunk = b"\0" * (1 << 20)
            for _ in range(2048):
                fh.write(chunk)
    before = _peak_rss_mb()
    with pytest.raises(DocumentConversionError, match="could not be converted|could not be read"):
        document_to_markdown(path, memory_mb=400, seconds=60)
    assert _peak_rss_mb() - before < 50


def test_a_normal_document_still_converts(tmp_path: Path) -> None:
    text = document_to_markdown(make_docx(tmp_path / "plan.docx"))
    assert "Grazing plan" in text and "north field" in text
