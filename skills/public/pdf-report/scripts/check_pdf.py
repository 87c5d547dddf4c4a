"""Open a PDF with pypdf and print what it holds: pages, size, title, the text and images of each page.

Usage: python3 check_pdf.py REPORT.pdf

Then ``OK``, or one line per problem (no pages, a blank page, no title in the metadata, text
that cannot be extracted, placeholder text left in) and exit status 1.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

PLACEHOLDER_RE = re.compile(r"\[[A-Z][A-Za-z ]*\]|\bTODO\b|\bTBD\b|lorem ipsum", re.IGNORECASE)
EXCERPT = 160


def count_images(resources, depth: int = 0) -> int:
    """Image XObjects drawn from ``resources``, looking into form XObjects (not decoded, only counted)."""
    xobjects = resources.get_object().get("/XObject") if resources is not None else None
    if xobjects is None or depth > 5:
        return 0
    count = 0
    for ref in xobjects.get_object().values():
        obj = ref.get_object()
        if obj.get("/Subtype") == "/Image":
            count += 1
        elif obj.get("/Subtype") == "/Form":
            count += count_images(obj.get("/Resources"), depth + 1)
    return count


def describe(path: Path) -> tuple[list[str], list[str]]:
    """``(lines, problems)`` for the PDF at ``path``."""
    try:
        from pypdf import PdfReader
    except ImportError:
        sys.exit("error: pypdf is not installed in this sandbox; tell the user to run scripts/install-system.sh")
    try:
        reader = PdfReader(str(path))
        title = (reader.metadata.title if reader.metadata else None) or ""
        pages = reader.pages
    except Exception as exc:  # pypdf raises whatever it met first in a damaged file
        sys.exit(f"error: {path} is not a PDF pypdf can open ({exc}); build it again with make_pdf.py")
    problems: list[str] = []
    if not pages:
        return [f"{path.name}: no pages"], ["the PDF has no pages; build it again"]
    box = pages[0].mediabox
    lines = [f"{path.name}: {len(pages)} page(s), {float(box.width) / 72 * 25.4:.0f} x {float(box.height) / 72 * 25.4:.0f} mm, title {title!r}"]
    all_text = ""
    for number, page in enumerate(pages, start=1):
        text = " ".join((page.extract_text() or "").split())
        images = count_images(page.get("/Resources"))
        all_text += " " + text
        lines.append(f"page {number}: {len(text)} characters, {images} image(s): {text[:EXCERPT]}{'...' if len(text) > EXCERPT else ''}")
        if not text and not images:
            problems.append(f"page {number} is blank")
    if not title:
        problems.append("the PDF has no title in its metadata; build it with make_pdf.py")
    if not all_text.strip():
        problems.append("no text could be extracted; the PDF may be scanned images only")
    for found in sorted({m.group(0) for m in PLACEHOLDER_RE.finditer(all_text)}):
        problems.append(f"placeholder text {found!r} is left in the PDF; replace it with the real content")
    return lines, problems


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: check_pdf.py REPORT.pdf")
    pdf_path = Path(sys.argv[1])
    if not pdf_path.is_file():
        sys.exit(f"error: {pdf_path} does not exist; build it with make_pdf.py first")
    shown, found = describe(pdf_path)
    print("\n".join(shown + found))
    print("OK" if not found else f"{len(found)} problem(s)")
    sys.exit(1 if found else 0)
