"""Read the Markdown a document is written in into blocks, for the .docx and .pdf builders.

Blocks: the title (the first ``# `` line), headings (``##`` to ``####``), paragraphs (lines
joined until a blank line), bullet and numbered lists (two spaces of indent per level),
tables (``| a | b |`` with a ``|---|---|`` line under the header), and images
(``![caption](path)`` alone on a line). Inline ``**bold**``, ``*italic*`` and `` `code` ``
become runs. Written by hand because only this subset is needed and the Debian system Python
of the sandbox has no Markdown parser that yields a block tree; every mistake names its line.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

INLINE_RE = re.compile(r"\*\*(.+?)\*\*|\*(.+?)\*|`(.+?)`")
LIST_RE = re.compile(r"(\s*)([-*+]|\d+[.)])\s+(.*)")
IMAGE_RE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")
CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")  # no XML document may hold these


@dataclass
class Block:
    """One block: ``kind`` is heading, paragraph, list, table or image."""

    kind: str
    text: str = ""
    level: int = 0
    ordered: bool = False
    items: list[tuple[int, str]] = field(default_factory=list)  # lists: (indent level, text)
    rows: list[list[str]] = field(default_factory=list)  # tables: the header row first
    path: str = ""  # images


def fail(message: str) -> None:
    """Exit with ``error: message`` and status 1."""
    sys.exit(f"error: {message}")


def runs(text: str) -> list[tuple[str, str]]:
    """``text`` as ``(piece, style)`` runs, style being "", "bold", "italic" or "code"."""
    out: list[tuple[str, str]] = []
    at = 0
    for match in INLINE_RE.finditer(text):
        if match.start() > at:
            out.append((text[at : match.start()], ""))
        bold, italic, code = match.groups()
        out.append((bold, "bold") if bold else (italic, "italic") if italic else (code, "code"))
        at = match.end()
    if at < len(text):
        out.append((text[at:], ""))
    return out


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def parse(text: str, source: Path) -> tuple[str, list[Block]]:
    """``(title, blocks)`` of the Markdown ``text``; relative image paths resolve against ``source``'s folder."""
    title = ""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line, stripped, number = lines[i].rstrip(), lines[i].strip(), i + 1
        i += 1
        if not stripped or stripped in ("---", "***"):
            continue
        heading = re.match(r"(#{1,6})\s+(.*)", stripped)
        if heading and len(heading.group(1)) == 1 and not title and not blocks:
            title = heading.group(2).strip()
        elif heading:
            blocks.append(Block("heading", heading.group(2).strip(), level=min(3, max(1, len(heading.group(1)) - 1))))
        elif image := IMAGE_RE.fullmatch(stripped):
            path = Path(image.group(2))
            path = path if path.is_absolute() else source.parent / path
            if not path.is_file():
                fail(f"{source} line {number}: the image {image.group(2)} does not exist; check the path with ls")
            blocks.append(Block("image", image.group(1).strip(), path=str(path)))
        elif stripped.startswith("|"):
            table = [_cells(stripped)]
            if i >= len(lines) or not re.fullmatch(r"\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?", lines[i].strip()):
                fail(f"{source} line {number + 1}: a table needs a line like |---|---| under its header row")
            i += 1
            while i < len(lines) and lines[i].strip().startswith("|"):
                row = _cells(lines[i])
                if len(row) != len(table[0]):
                    fail(f"{source} line {i + 1}: this table row has {len(row)} cells but the header has {len(table[0])}; make them equal")
                table.append(row)
                i += 1
            blocks.append(Block("table", rows=table))
        elif item := LIST_RE.fullmatch(line):
            ordered = item.group(2)[0].isdigit()
            block = Block("list", ordered=ordered)
            while item:
                block.items.append((len(item.group(1).expandtabs(2)) // 2, item.group(3).strip()))
                item = LIST_RE.fullmatch(lines[i].rstrip()) if i < len(lines) else None
                if item and not item.group(1) and item.group(2)[0].isdigit() != ordered:
                    item = None  # a list of the other kind starts here
                i += 1 if item else 0
            blocks.append(block)
        else:
            paragraph = [stripped]
            while i < len(lines) and lines[i].strip() and not re.match(r"#|\||!\[|\s*([-*+]|\d+[.)])\s", lines[i].strip()):
                paragraph.append(lines[i].strip())
                i += 1
            blocks.append(Block("paragraph", " ".join(paragraph)))
    return title, blocks


def load(path: Path) -> tuple[str, list[Block]]:
    """Parse the Markdown file at ``path``; exits with a message when it is missing or empty."""
    if not path.is_file():
        fail(f"{path} does not exist; write the document as Markdown there first")
    title, blocks = parse(CONTROL_RE.sub("", path.read_text(encoding="utf-8-sig", errors="replace")), path)
    if not title:
        fail(f"{path}: the first line must be the title, as '# Title'")
    if not blocks:
        fail(f"{path}: the document has a title but no content; add headings and paragraphs under it")
    return title, blocks
