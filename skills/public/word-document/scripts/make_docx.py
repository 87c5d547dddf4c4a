"""Build a Word document (.docx) from Markdown, with python-docx.

Usage: python3 make_docx.py DOCUMENT.md OUT.docx

The Markdown: ``# Title`` first, then ``##`` headings, paragraphs, ``- `` or ``1. `` lists,
``| a | b |`` tables (with ``|---|---|`` under the header) and ``![caption](image.png)``
(see markdown_blocks.py). Every mistake exits with status 1 and says what to fix.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from markdown_blocks import Block, fail, load, runs  # noqa: E402

IMAGE_WIDTH_CM, IMAGE_HEIGHT_CM = 15.0, 20.0  # the most an image takes of an A4 or Letter page


def _add_runs(paragraph, text: str) -> None:
    for piece, style in runs(text):
        run = paragraph.add_run(piece)
        run.bold = style == "bold" or None
        run.italic = style == "italic" or None
        if style == "code":
            run.font.name = "Courier New"


def build(title: str, blocks: list[Block], out: Path) -> dict[str, int]:
    """Write the document to ``out``; returns how many of each block it holds."""
    try:
        from docx import Document
        from docx.shared import Cm
    except ImportError:
        fail("python-docx is not installed in this sandbox; tell the user to run scripts/install-system.sh")
    document = Document()
    document.core_properties.title = title
    document.add_heading(title, level=0)
    counts: dict[str, int] = {}
    for block in blocks:
        counts[block.kind] = counts.get(block.kind, 0) + 1
        if block.kind == "heading":
            document.add_heading(block.text, level=block.level)
        elif block.kind == "paragraph":
            _add_runs(document.add_paragraph(), block.text)
        elif block.kind == "list":
            base = "List Number" if block.ordered else "List Bullet"
            for level, text in block.items:
                _add_runs(document.add_paragraph(style=base if level == 0 else f"{base} {min(level, 2) + 1}"), text)
        elif block.kind == "table":
            header, *rows = block.rows
            table = document.add_table(rows=1, cols=len(header))
            table.style = "Table Grid"
            for cell, text in zip(table.rows[0].cells, header):
                cell.text = ""
                cell.paragraphs[0].add_run(text).bold = True
            for row in rows:
                for cell, text in zip(table.add_row().cells, row):
                    _add_runs(cell.paragraphs[0], text)
            document.add_paragraph()
        elif block.kind == "image":
            try:
                picture = document.add_picture(block.path)  # its own size at its own resolution
            except Exception as exc:  # python-docx raises whatever its image reader met
                fail(f"{block.path} is not an image Word can show (use PNG or JPEG): {exc}")
            scale = min(1.0, Cm(IMAGE_WIDTH_CM) / picture.width, Cm(IMAGE_HEIGHT_CM) / picture.height)
            picture.width, picture.height = int(picture.width * scale), int(picture.height * scale)
            if block.text:
                document.add_paragraph(block.text, style="Caption")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        document.save(str(out))
    except OSError as exc:
        fail(f"cannot write {out}: {exc.strerror or exc}; write it under /mnt/user-data/outputs")
    return counts


def main(argv: list[str]) -> None:
    """``make_docx.py DOCUMENT.md OUT.docx``."""
    if len(argv) != 2:
        fail("usage: make_docx.py DOCUMENT.md OUT.docx")
    source, out = Path(argv[0]), Path(argv[1])
    if out.suffix.lower() != ".docx":
        fail(f"the output {out} must end in .docx")
    title, blocks = load(source)
    counts = build(title, blocks, out)
    print(f"wrote {out}: " + ", ".join(f"{n} {kind}(s)" for kind, n in counts.items()))
    print(f"check it with: python3 {Path(__file__).with_name('check_docx.py')} {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
