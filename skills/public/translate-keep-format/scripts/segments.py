"""Split a Markdown file into segments to translate, and put the translation back.

Usage:
  python3 segments.py split FILE.md --out SEGMENTS.txt
  python3 segments.py join FILE.md --segments TRANSLATED.txt --out FILE.<lang>.md

``split`` writes every line of text to translate as ``@@ n @@`` followed by the text. Front
matter, fenced and indented code blocks, HTML blocks, link reference definitions, rules, table
delimiter rows and blank lines are not segments: ``join`` copies them from the original byte for
byte. Heading marks, list markers, quote marks and indentation stay outside the segment text.
Inside a segment, inline code, link targets, URLs, HTML tags and ``{{...}}`` template fields are
replaced by tokens ``{{1}}``, ``{{2}}``...; the translation must keep each token once, and
``join`` puts the originals back. ``join`` refuses a translation with a missing or extra segment,
a lost token, or a table row with a different number of cells, and says which segment to fix.

Written by hand on the standard library: Markdown parsers (markdown-it, mistune) render to HTML
and do not give back the source byte for byte, which is what keeping the format needs here.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^( {0,3}#{1,6}[ \t]+)(.*?)([ \t]+#+)?([ \t]*)$")
PREFIX = re.compile(r"^([ \t]*(?:>[ \t]?)*[ \t]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+(?:\[[ xX]\][ \t]+)?)?)(.*?)([ \t]*)$")
LIST_ITEM = re.compile(r"^[ \t]*(?:>[ \t]?)*[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+")
RULE = re.compile(r"^ {0,3}([-*_])([ \t]*\1){2,}[ \t]*$")
REF_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:[ \t]*\S+")
TABLE_DELIMITER = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)+\|?[ \t]*$")
HTML_BLOCK = re.compile(r"^ {0,3}<(/?[A-Za-z][\w-]*[\s/>]|!--|/?[A-Za-z][\w-]*$)")
PROTECT = re.compile(
    r"\{\{.*?\}\}"  # template fields
    r"|(`+).+?\1"  # inline code
    r"|(?<=\]\()[^)\s]+(?:[ \t]+\"[^\"]*\")?(?=\))"  # link and image targets
    r"|(?<=\]\[)[^\]]+(?=\])"  # reference link labels
    r"|<https?://[^>]+>|https?://[^\s<>()\[\]]*[^\s<>()\[\].,;:!?]"  # autolinks and bare URLs
    r"|</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>"  # inline HTML tags
    r"|&[A-Za-z]+;|&#\d+;"  # entities
)
TOKEN = re.compile(r"\{\{(\d+)\}\}")
MARK = re.compile(r"^@@ (\d+) @@[ \t]*$", re.M)


@dataclass
class Segment:
    """One translatable line: the kept prefix and suffix, the text with tokens, the protected originals."""

    number: int
    prefix: str
    text: str
    suffix: str
    protected: list[str] = field(default_factory=list)
    table: bool = False


@dataclass
class Document:
    """A Markdown file as kept lines (str) and segments, in order, plus its code blocks."""

    parts: list[str | Segment]
    code_blocks: list[str]
    front_matter: str


def protect(text: str) -> tuple[str, list[str]]:
    """``text`` with inline code, link targets, URLs and tags replaced by ``{{n}}`` tokens."""
    kept: list[str] = []

    def token(match: re.Match[str]) -> str:
        kept.append(match[0])
        return "{{%d}}" % len(kept)

    return PROTECT.sub(token, text), kept


def parse(text: str) -> Document:
    """Split ``text`` into kept lines and segments; line endings stay on the kept parts."""
    lines = text.splitlines(keepends=True)
    parts: list[str | Segment] = []
    code_blocks: list[str] = []
    front = ""
    i = 0
    if lines and lines[0].rstrip("\r\n") == "---":
        end = next((j for j in range(1, len(lines)) if lines[j].rstrip("\r\n") in ("---", "...")), None)
        if end is not None:
            front = "".join(lines[: end + 1])
            parts.append(front)
            i = end + 1
    in_list = False
    previous_blank = True
    while i < len(lines):
        line = lines[i]
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        fence = FENCE.match(body)
        if fence:
            mark = fence[1]
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith(mark[0] * len(mark)) and not lines[j].strip().strip(mark[0])), len(lines) - 1)
            block = "".join(lines[i : end + 1])
            parts.append(block)
            code_blocks.append(block)
            i, previous_blank = end + 1, False
            continue
        if not body.strip():
            parts.append(line)
            i, previous_blank = i + 1, True
            continue
        if previous_blank and not in_list and (body.startswith("    ") or body.startswith("\t")):
            end = i
            while end + 1 < len(lines) and (lines[end + 1].startswith(("    ", "\t")) or not lines[end + 1].strip()):
                end += 1
            while end > i and not lines[end].strip():
                end -= 1
            block = "".join(lines[i : end + 1])
            parts.append(block)
            code_blocks.append(block)
            i, previous_blank = end + 1, False
            continue
        if previous_blank and HTML_BLOCK.match(body):
            end = i
            while end + 1 < len(lines) and lines[end + 1].strip():
                end += 1
            parts.append("".join(lines[i : end + 1]))
            i, previous_blank = end + 1, False
            continue
        previous_blank = False
        if RULE.match(body) or REF_DEF.match(body) or TABLE_DELIMITER.match(body):
            parts.append(line)
            i += 1
            continue
        is_table = "|" in body and (
            (i + 1 < len(lines) and TABLE_DELIMITER.match(lines[i + 1])) or (parts and isinstance(parts[-1], Segment) and parts[-1].table)
            or (parts and isinstance(parts[-1], str) and TABLE_DELIMITER.match(parts[-1]))
        )
        heading = HEADING.match(body)
        if is_table:
            prefix, content, suffix = "", body.rstrip(), body[len(body.rstrip()):]
        elif heading:
            prefix, content, suffix = heading[1], heading[2], (heading[3] or "") + heading[4]
        else:
            match = PREFIX.match(body)
            prefix, content, suffix = match[1], match[2], match[3]
        in_list = bool(LIST_ITEM.match(body)) or (in_list and body[:1] in (" ", "\t"))
        masked, kept = protect(content)
        if not re.search(r"[^\W\d_]", TOKEN.sub("", masked)):
            parts.append(line)  # nothing to translate: numbers, punctuation or tokens only
        else:
            number = sum(isinstance(p, Segment) for p in parts) + 1
            parts.append(Segment(number, prefix, masked, suffix + ending, kept, bool(is_table)))
        i += 1
    return Document(parts, code_blocks, front)


def segments(document: Document) -> list[Segment]:
    """The segments of ``document`` in order."""
    return [p for p in document.parts if isinstance(p, Segment)]


def cells(row: str) -> int:
    """The number of cells of a table row (escaped pipes do not count)."""
    pipes = re.sub(r"\\\|", "", row).strip()
    return pipes.strip("|").count("|") + 1


def read_segments(text: str) -> dict[int, str]:
    """Segment number -> text from a segments file; text over several lines is joined with spaces."""
    pieces = MARK.split(text)
    found: dict[int, str] = {}
    for number, body in zip(pieces[1::2], pieces[2::2]):
        found[int(number)] = " ".join(line.strip() for line in body.strip().splitlines() if line.strip())
    return found


def join(document: Document, translated: dict[int, str]) -> tuple[str, list[str]]:
    """The translated file, and the problems that keep it from being written."""
    problems: list[str] = []
    wanted = segments(document)
    numbers = {s.number for s in wanted}
    missing = sorted(numbers - set(translated))
    if missing:
        problems.append(f"segments {', '.join(map(str, missing))} are missing; keep every '@@ n @@' line and translate the text under it")
    extra = sorted(set(translated) - numbers)
    if extra:
        problems.append(f"there is no segment {', '.join(map(str, extra))} in the original; remove it")
    out: list[str] = []
    for part in document.parts:
        if isinstance(part, str):
            out.append(part)
            continue
        text = translated.get(part.number, part.text)
        tokens = TOKEN.findall(text)
        for n in range(1, len(part.protected) + 1):
            if tokens.count(str(n)) != 1:
                problems.append(f"segment {part.number}: keep {{{{{n}}}}} exactly once (it stands for {part.protected[n - 1]!r}); it appears {tokens.count(str(n))} times")
        for n in tokens:
            if not 1 <= int(n) <= len(part.protected):
                problems.append(f"segment {part.number}: there is no {{{{{n}}}}} in the original; remove it")
        if part.table and cells(text) != cells(part.text):
            problems.append(f"segment {part.number} is a table row with {cells(part.text)} cells; keep every '|' ({cells(text)} cells now)")
        restored = TOKEN.sub(lambda m: part.protected[int(m[1]) - 1] if 1 <= int(m[1]) <= len(part.protected) else m[0], text)
        out.append(part.prefix + restored + part.suffix)
    return "".join(out), problems


def main() -> None:
    parser = argparse.ArgumentParser(description="Split a Markdown file into segments to translate, or join a translation.")
    parser.add_argument("action", choices=["split", "join"])
    parser.add_argument("markdown", help="the original Markdown file")
    parser.add_argument("--out", required=True, help="split: the segments file to write; join: the translated Markdown file")
    parser.add_argument("--segments", help="join: the translated segments file")
    args = parser.parse_args()
    source = Path(args.markdown)
    if not source.is_file():
        sys.exit(f"error: {source} does not exist")
    document = parse(source.read_text(encoding="utf-8"))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.action == "split":
        found = segments(document)
        out.write_text("".join(f"@@ {s.number} @@\n{s.text}\n" for s in found), encoding="utf-8")
        print(f"wrote {out}: {len(found)} segments to translate; {len(document.code_blocks)} code blocks" + (" and the front matter" if document.front_matter else "") + " stay as they are")
        print("Translate the text under each '@@ n @@' line; keep the '@@ n @@' lines, every {{n}} and every '|'.")
        return
    if not args.segments:
        sys.exit("error: join needs --segments TRANSLATED.txt")
    if Path(args.segments).resolve() == out.resolve() or source.resolve() == out.resolve():
        sys.exit("error: --out must be a new file, not the original or the segments file")
    if not Path(args.segments).is_file():
        sys.exit(f"error: {args.segments} does not exist; write the translated segments there first")
    text, problems = join(document, read_segments(Path(args.segments).read_text(encoding="utf-8")))
    if problems:
        print("\n".join(f"error: {p}" for p in problems))
        print(f"fix {args.segments} and run join again; nothing was written")
        sys.exit(1)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}: {len(segments(document))} segments translated, {len(document.code_blocks)} code blocks kept")


if __name__ == "__main__":
    main()
