"""Check a research brief against the uploaded sources it cites.

Usage: python3 check_brief.py BRIEF.md --sources UPLOADS_DIR

Checks: the sections Summary, Findings and Sources are there; every ``[n]`` in the text is a
source listed under ``## Sources``; every line there names an uploaded file under the number
sources.py gave it; every listed source is cited; every direct quote ``"..." [n]`` is found in
source n (spaces and case aside); every URL appears in some uploaded file; no template
``<placeholder>`` is left. Prints what it found, then OK or each problem with what to fix.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sources import URL, clean_url, list_sources  # noqa: E402

SECTIONS = ("Summary", "Findings", "Sources")
CITE = re.compile(r"\[(\d+)\](?!\()")
QUOTE = re.compile(r"[\"\u201c]([^\"\u201c\u201d]{8,})[\"\u201d]\s*((?:\[\d+\]\s*)+)")
SOURCE_LINE = re.compile(r"^[-*]?\s*\[(\d+)\]\s*:?\s*(\S+)")


def squash(text: str) -> str:
    """Lowercase text with runs of whitespace made one space, for quote matching."""
    return " ".join(text.lower().split())


def split_sections(text: str) -> tuple[dict[str, list[str]], list[str]]:
    """Lines per ``## `` section, and the lines of the brief outside ## Sources."""
    sections: dict[str, list[str]] = {}
    body: list[str] = []
    current = ""
    for line in text.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            sections[current] = []
            continue
        sections.setdefault(current, []).append(line)
        if current != "Sources":
            body.append(line)
    return sections, body


def check(text: str, folder: Path) -> tuple[list[str], dict[int, str], int]:
    """Problems with the brief ``text``, the sources it lists (number -> file name) and its quote count."""
    problems: list[str] = []
    uploaded = {s.number: s for s in list_sources(folder)}
    by_name = {s.name: s for s in uploaded.values()}
    if not text.lstrip().startswith("# "):
        problems.append("start the brief with a title line '# <Topic>'")
    sections, body = split_sections(text)
    missing = [s for s in SECTIONS if s not in sections]
    if missing:
        problems.append(f"add the sections {', '.join('## ' + s for s in missing)}")
    listed: dict[int, str] = {}
    for line in (x.strip() for x in sections.get("Sources", [])):
        if not line:
            continue
        match = SOURCE_LINE.match(line)
        if not match:
            problems.append(f"under ## Sources write '[n] <file> - <title>' lines; cannot read {line[:60]!r}")
            continue
        number, name = int(match[1]), match[2].strip("`")
        name = name.removeprefix(f"{folder.as_posix().rstrip('/')}/")  # the path sources.py printed
        listed[number] = name
        if name not in by_name:
            problems.append(f"source [{number}] {name!r} is not an uploaded file; cite only the files sources.py lists")
        elif by_name[name].number != number:
            problems.append(f"source {name!r} is [{by_name[name].number}] in sources.py, not [{number}]; use its number")
    cited = {int(n) for line in body for n in CITE.findall(line)}
    for number in sorted(cited - set(listed)):
        problems.append(f"[{number}] is cited but not listed under ## Sources; add its line from sources.py or remove the citation")
    for number in sorted(set(listed) - cited):
        problems.append(f"source [{number}] is listed but never cited; cite it or remove its line")
    findings = [line for line in sections.get("Findings", []) if line.strip().startswith(("-", "*"))]
    if "Findings" in sections and not findings:
        problems.append("list the findings as '- <fact> [n]' lines under ## Findings")
    for line in findings:
        if not CITE.search(line):
            problems.append(f"finding without a source number: {line.strip()[:70]!r}; end it with [n]")
    quotes = 0
    for quote, numbers in QUOTE.findall("\n".join(body)):
        quotes += 1
        wanted = [uploaded.get(int(n)) for n in CITE.findall(numbers)]
        if not any(s is not None and s.text is not None and squash(quote) in squash(s.text) for s in wanted):
            problems.append(f"the quote {quote[:60]!r} is not in source {numbers.strip()}; copy the words exactly or drop the quotes")
    known = {u for s in uploaded.values() for u in s.urls}
    for url in sorted({clean_url(u) for u in URL.findall(text)}):
        if url not in known:
            problems.append(f"the URL {url} is in no uploaded file; remove it")
    placeholders = sorted(set(re.findall(r"<[A-Z][^<>]{0,40}>", text)))
    if placeholders:
        problems.append(f"replace the placeholders {', '.join(placeholders)}")
    return problems, listed, quotes


def main() -> None:
    parser = argparse.ArgumentParser(description="Check a research brief against the uploaded sources.")
    parser.add_argument("brief")
    parser.add_argument("--sources", required=True, help="the uploads folder (as given to sources.py)")
    args = parser.parse_args()
    path, folder = Path(args.brief), Path(args.sources)
    if not path.is_file():
        sys.exit(f"problem: {path} does not exist; write the brief there first")
    if not folder.is_dir():
        sys.exit(f"problem: --sources {folder} is not a folder")
    text = path.read_text(encoding="utf-8")
    problems, listed, quotes = check(text, folder)
    cites = len(CITE.findall("\n".join(split_sections(text)[1])))
    print(f"{path.name}: {cites} citations of {len(listed)} sources, {quotes} quotes")
    for number, name in sorted(listed.items()):
        print(f"  [{number}] {name}")
    if problems:
        print("\n".join(f"problem: {p}" for p in problems))
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
