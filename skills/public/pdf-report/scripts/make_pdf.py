"""Build a PDF report (A4) from Markdown, with reportlab: title, headings, text, lists, tables, images.

Usage: python3 make_pdf.py REPORT.md OUT.pdf [--author NAME]

The Markdown is the word-document skill's (markdown_blocks.py beside this script is a copy of
that skill's, kept equal by a test, so each skill works on its own): ``# Title`` first, ``##``
headings, paragraphs, lists, ``| a | b |`` tables with ``|---|`` under the header, and
``![caption](image.png)``.
Text is set in DejaVu Sans when the font is installed (every Latin, Greek and Cyrillic letter),
else in Helvetica. Pages are numbered. Every mistake exits with status 1 and says what to fix.
"""

from __future__ import annotations

import argparse
import sys
from html import escape
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from markdown_blocks import Block, fail, load, runs  # noqa: E402

DEJAVU = Path("/usr/share/fonts/truetype/dejavu")
TAGS = {"bold": ("<b>", "</b>"), "italic": ("<i>", "</i>"), "code": ('<font face="Courier">', "</font>"), "": ("", "")}


def markup(text: str) -> str:
    """``text`` with its inline Markdown as reportlab paragraph markup, everything else escaped."""
    return "".join(TAGS[style][0] + escape(piece, quote=False) + TAGS[style][1] for piece, style in runs(text))


def font_family() -> tuple[str, str]:
    """``(regular, bold)`` font names: DejaVu Sans registered when present, else Helvetica."""
    from reportlab.lib.fonts import addMapping
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

    faces = {"DejaVuSans": "DejaVuSans.ttf", "DejaVuSans-Bold": "DejaVuSans-Bold.ttf",
             "DejaVuSans-Oblique": "DejaVuSans-Oblique.ttf", "DejaVuSans-BoldOblique": "DejaVuSans-BoldOblique.ttf"}
    if not all((DEJAVU / f).is_file() for f in faces.values()):
        return "Helvetica", "Helvetica-Bold"
    for name, file in faces.items():
        pdfmetrics.registerFont(TTFont(name, str(DEJAVU / file)))
    for bold, italic, name in ((0, 0, "DejaVuSans"), (1, 0, "DejaVuSans-Bold"), (0, 1, "DejaVuSans-Oblique"), (1, 1, "DejaVuSans-BoldOblique")):
        addMapping("DejaVuSans", bold, italic, name)
    return "DejaVuSans", "DejaVuSans-Bold"


def flowables(title: str, blocks: list[Block], width: float) -> list:
    """The story of the report: reportlab flowables for the title and each block."""
    from reportlab.lib import colors
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.lib.units import cm
    from reportlab.platypus import Image, ListFlowable, ListItem, Paragraph, Spacer, Table, TableStyle
    from reportlab.lib.utils import ImageReader

    regular, bold = font_family()
    styles = getSampleStyleSheet()
    for style in styles.byName.values():
        style.fontName = bold if "Heading" in style.name or style.name == "Title" else regular
    story = [Paragraph(markup(title), styles["Title"])]
    for block in blocks:
        if block.kind == "heading":
            story.append(Paragraph(markup(block.text), styles[f"Heading{block.level}"]))
        elif block.kind == "paragraph":
            story.append(Paragraph(markup(block.text), styles["BodyText"]))
        elif block.kind == "list":
            items = [ListItem(Paragraph(markup(text), styles["BodyText"]), leftIndent=18 + 18 * level) for level, text in block.items]
            kind = {"bulletType": "1", "bulletFormat": "%s."} if block.ordered else {"bulletType": "bullet"}
            story += [ListFlowable(items, **kind), Spacer(1, 0.2 * cm)]
        elif block.kind == "table":
            cells = [[Paragraph(("<b>%s</b>" if r == 0 else "%s") % markup(c), styles["BodyText"]) for c in row] for r, row in enumerate(block.rows)]
            table = Table(cells, colWidths=[width / len(block.rows[0])] * len(block.rows[0]), repeatRows=1)
            table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.grey),
                                       ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#dde4ee")),
                                       ("VALIGN", (0, 0), (-1, -1), "TOP")]))
            story += [table, Spacer(1, 0.4 * cm)]
        elif block.kind == "image":
            try:
                w, h = ImageReader(block.path).getSize()
            except Exception as exc:  # reportlab raises whatever its image reader met
                fail(f"{block.path} is not an image a PDF can show (use PNG or JPEG): {exc}")
            scale = min(width / w, 12 * cm / h, 1.0 if w > 300 else width / w)
            story += [Spacer(1, 0.2 * cm), Image(block.path, width=w * scale, height=h * scale)]
            if block.text:
                story.append(Paragraph(f"<i>{escape(block.text, quote=False)}</i>", styles["BodyText"]))
            story.append(Spacer(1, 0.3 * cm))
    return story


def build(title: str, blocks: list[Block], out: Path, author: str) -> int:
    """Write the PDF to ``out``; returns its page count."""
    try:
        from reportlab.lib.pagesizes import A4
        from reportlab.lib.units import cm
        from reportlab.platypus import SimpleDocTemplate
    except ImportError:
        fail("reportlab is not installed in this sandbox; tell the user to run scripts/install-system.sh")

    def number_page(canvas, doc) -> None:
        canvas.setFont("Helvetica", 9)
        canvas.drawRightString(A4[0] - 2 * cm, 1.2 * cm, f"Page {doc.page}")

    doc = SimpleDocTemplate(str(out), pagesize=A4, title=title, author=author,
                            leftMargin=2 * cm, rightMargin=2 * cm, topMargin=2 * cm, bottomMargin=2 * cm)
    story = flowables(title, blocks, doc.width)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        doc.build(story, onFirstPage=number_page, onLaterPages=number_page)
    except OSError as exc:
        fail(f"cannot write {out}: {exc.strerror or exc}; write it under /mnt/user-data/outputs")
    return doc.page


def main(argv: list[str]) -> None:
    """``make_pdf.py REPORT.md OUT.pdf [--author NAME]``."""
    parser = argparse.ArgumentParser(description="Markdown report to PDF.")
    parser.add_argument("source")
    parser.add_argument("out")
    parser.add_argument("--author", default="")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if out.suffix.lower() != ".pdf":
        fail(f"the output {out} must end in .pdf")
    title, blocks = load(Path(args.source))
    pages = build(title, blocks, out, args.author)
    print(f"wrote {out}: {pages} page(s)")
    print(f"check it with: python3 {Path(__file__).with_name('check_pdf.py')} {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
