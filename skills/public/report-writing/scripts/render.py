"""Render a Markdown report to a self-contained HTML file and a simple PDF, standard library only.

Usage: python3 render.py REPORT.md   (writes REPORT.html and REPORT.pdf beside it)

Markdown handled: # headings, paragraphs, - / * / 1. lists, | tables |, ``` code blocks ```,
**bold**, *italic*, `code`, [links](url). The PDF holds the text in Helvetica on A4 pages.
"""

from __future__ import annotations

import html
import re
import sys
import textwrap
from pathlib import Path

CSS = (
    "body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;line-height:1.55;color:#222}"
    "h1,h2,h3{line-height:1.2}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3rem .6rem}"
    "pre{background:#f5f5f5;padding:.8rem;overflow:auto}code{background:#f5f5f5}"
)


def inline(text: str) -> str:
    text = html.escape(text)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", text)
    text = re.sub(r"\*([^*]+)\*", r"<em>\1</em>", text)
    return re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", r'<a href="\2">\1</a>', text)


def to_html(markdown: str) -> str:
    out: list[str] = []
    lines = markdown.splitlines()
    i = 0
    title = "Report"
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            block = []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                block.append(lines[i])
                i += 1
            out.append(f"<pre><code>{html.escape(chr(10).join(block))}</code></pre>")
        elif m := re.match(r"(#{1,6})\s+(.*)", line):
            level = len(m.group(1))
            if level == 1 and title == "Report":
                title = m.group(2)
            out.append(f"<h{level}>{inline(m.group(2))}</h{level}>")
        elif re.match(r"\s*([-*]|\d+\.)\s+", line):
            ordered = bool(re.match(r"\s*\d+\.", line))
            items = []
            while i < len(lines) and re.match(r"\s*([-*]|\d+\.)\s+", lines[i]):
                item = re.sub(r"^\s*([-*]|\d+\.)\s+", "", lines[i])
                items.append(f"<li>{inline(item)}</li>")
                i += 1
            tag = "ol" if ordered else "ul"
            out.append(f"<{tag}>{''.join(items)}</{tag}>")
            continue
        elif line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
                if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                    tag = "th" if not rows else "td"
                    rows.append("<tr>" + "".join(f"<{tag}>{inline(c)}</{tag}>" for c in cells) + "</tr>")
                i += 1
            out.append(f"<table>{''.join(rows)}</table>")
            continue
        elif line.strip():
            para = [line.strip()]
            while i + 1 < len(lines) and lines[i + 1].strip() and not re.match(r"(#|```|\||\s*([-*]|\d+\.)\s)", lines[i + 1]):
                i += 1
                para.append(lines[i].strip())
            out.append(f"<p>{inline(' '.join(para))}</p>")
        i += 1
    body = "\n".join(out)
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{CSS}</style></head>\n<body>\n{body}\n</body></html>\n"
    )


def to_pdf(markdown: str) -> bytes:
    """A4 pages of Helvetica text: headings bigger, lines wrapped at 90 characters."""
    lines: list[tuple[int, str]] = []
    for raw in markdown.splitlines():
        m = re.match(r"(#{1,6})\s+(.*)", raw)
        size = 16 if m and len(m.group(1)) == 1 else 13 if m else 10
        text = m.group(2) if m else re.sub(r"[*`]", "", raw)
        for piece in textwrap.wrap(text, 90) or [""]:
            lines.append((size, piece))
    pages: list[list[tuple[int, str]]] = [[]]
    used = 0
    for size, text in lines:
        if used + size + 4 > 760:
            pages.append([])
            used = 0
        pages[-1].append((size, text))
        used += size + 4

    def esc(s: str) -> str:
        s = s.encode("latin-1", "replace").decode("latin-1")
        return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>", b"", b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    kids = []
    for page in pages:
        y = 800
        ops = ["BT"]
        for size, text in page:
            ops.append(f"/F1 {size} Tf 1 0 0 1 50 {y} Tm ({esc(text)}) Tj")
            y -= size + 4
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        content_no = len(objects)
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>"
            % content_no
        )
        kids.append(len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    pdf = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, obj in enumerate(objects, 1):
        offsets.append(len(pdf))
        pdf += b"%d 0 obj\n" % n + obj + b"\nendobj\n"
    xref = len(pdf)
    pdf += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    pdf += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    pdf += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(pdf)


def main(path: str) -> None:
    source = Path(path)
    if not source.is_file():
        sys.exit(f"error: {path} does not exist; write the report there first")
    markdown = source.read_text(encoding="utf-8")
    html_path, pdf_path = source.with_suffix(".html"), source.with_suffix(".pdf")
    html_path.write_text(to_html(markdown), encoding="utf-8")
    pdf_path.write_bytes(to_pdf(markdown))
    print(f"wrote {html_path} and {pdf_path}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: render.py REPORT.md")
    main(sys.argv[1])
