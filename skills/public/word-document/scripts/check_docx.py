"""Open a .docx with python-docx and print what it holds: title, headings, paragraphs, tables, images.

Usage: python3 check_docx.py DOCUMENT.docx

Then ``OK``, or one line per problem (no title, no headings, an empty table cell row, text left
as a placeholder such as ``[Name]`` or ``TODO``) and exit status 1.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

PLACEHOLDER_RE = re.compile(r"\[[A-Z][A-Za-z ]*\]|\bTODO\b|\bTBD\b|\{\{?\w+\}?\}|lorem ipsum", re.IGNORECASE)


def describe(path: Path) -> tuple[list[str], list[str]]:
    """``(lines, problems)`` for the document at ``path``."""
    try:
        from docx import Document
    except ImportError:
        sys.exit("error: python-docx is not installed in this sandbox; tell the user to run scripts/install-system.sh")
    try:
        document = Document(str(path))
    except Exception as exc:  # a zip or XML error, whichever python-docx met first
        sys.exit(f"error: {path} is not a Word file python-docx can open ({exc}); build it again with make_docx.py")
    paragraphs = [p for p in document.paragraphs if p.text.strip()]
    headings = [p for p in paragraphs if p.style.name.startswith(("Heading", "Title"))]
    images = len(document.inline_shapes)
    words = sum(len(p.text.split()) for p in paragraphs)
    lines = [f"{path.name}: {len(paragraphs)} paragraphs ({words} words), {len(headings)} headings, {len(document.tables)} tables, {images} images"]
    lines += [f"  {p.style.name}: {p.text.strip()}" for p in headings]
    problems: list[str] = []
    for number, table in enumerate(document.tables, start=1):
        cells = [[c.text.strip() for c in row.cells] for row in table.rows]
        lines.append(f"  table {number}: {len(cells)} rows x {len(cells[0]) if cells else 0} columns; header: {' | '.join(cells[0]) if cells else ''}")
        for r, row in enumerate(cells[1:], start=2):
            if not any(row):
                problems.append(f"table {number} row {r} is empty; fill it or remove it")
    if not any(p.style.name == "Title" for p in headings) and not document.core_properties.title:
        problems.append("no title; start the Markdown with '# Title'")
    if not [p for p in headings if p.style.name.startswith("Heading")] and len(paragraphs) > 8:
        problems.append("a long document without headings; add '## ' section headings")
    texts = [p.text for p in paragraphs] + [c.text for t in document.tables for row in t.rows for c in row.cells]
    for found in sorted({m.group(0) for t in texts for m in PLACEHOLDER_RE.finditer(t)}):
        problems.append(f"placeholder text {found!r} is left in the document; replace it with the real content")
    return lines, problems


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: check_docx.py DOCUMENT.docx")
    doc_path = Path(sys.argv[1])
    if not doc_path.is_file():
        sys.exit(f"error: {doc_path} does not exist; build it with make_docx.py first")
    shown, found = describe(doc_path)
    print("\n".join(shown + found))
    print("OK" if not found else f"{len(found)} problem(s)")
    sys.exit(1 if found else 0)
