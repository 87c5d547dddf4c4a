"""Compare the structure of a Markdown file and its translation.

Usage: python3 check_translation.py ORIGINAL.md TRANSLATED.md

Checks that the translation keeps: the front matter byte for byte; every code block (fenced or
indented) byte for byte and in order; the same headings at the same levels; the same link and
image targets in order; the same tables (rows and cells per row); the same number of list items.
Also flags a translation that is mostly the original text (segments of four words or more left
unchanged). Prints what it compared, then OK or each problem with what to fix.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from segments import LIST_ITEM, TOKEN, Document, cells, parse, segments  # noqa: E402

TARGET = re.compile(
    r"\]\(\s*<?([^)\s>]+)|^ {0,3}\[[^\]]+\]:[ \t]*<?([^\s>]+)|<(https?://[^>]+)>"
    r"|(?<![(<\w/])(https?://[^\s<>()\[\]]*[^\s<>()\[\].,;:!?])",
    re.M,
)


def structure(document: Document) -> dict[str, list]:
    """The parts of ``document`` a translation must keep."""
    found = segments(document)
    ordered = [p if isinstance(p, str) else TOKEN.sub(lambda m, s=p: s.protected[int(m[1]) - 1], p.text) for p in document.parts]
    return {
        "headings": [len(s.prefix.strip()) for s in found if s.prefix.strip().startswith("#")],
        "code blocks": document.code_blocks,
        "links": [next(g for g in m.groups() if g) for m in TARGET.finditer("\n".join(o for o in ordered if o not in document.code_blocks))],
        "table rows": [cells(s.text) for s in found if s.table],
        "list items": [1 for s in found if LIST_ITEM.match(s.prefix)],
        "front matter": [document.front_matter] if document.front_matter else [],
    }


def check(original: str, translated: str) -> tuple[list[str], dict[str, int]]:
    """Problems with ``translated`` as a translation of ``original``, and counts of what was compared."""
    before, after = parse(original), parse(translated)
    a, b = structure(before), structure(after)
    problems: list[str] = []
    if a["front matter"] != b["front matter"]:
        problems.append("the front matter (--- ... --- at the top) changed; copy it from the original unchanged")
    if len(a["code blocks"]) != len(b["code blocks"]):
        problems.append(f"the original has {len(a['code blocks'])} code blocks, the translation {len(b['code blocks'])}; keep every code block")
    else:
        for n, (x, y) in enumerate(zip(a["code blocks"], b["code blocks"]), 1):
            if x != y:
                problems.append(f"code block {n} (starting {x.splitlines()[0].strip()!r}) changed; copy it from the original byte for byte")
    if a["headings"] != b["headings"]:
        problems.append(f"headings differ: the original has {len(a['headings'])} (levels {a['headings']}), the translation {len(b['headings'])} (levels {b['headings']})")
    if a["links"] != b["links"]:
        lost = [t for t in a["links"] if t not in b["links"]]
        added = [t for t in b["links"] if t not in a["links"]]
        problems.append("link targets differ" + (f"; missing: {', '.join(lost)}" if lost else "") + (f"; new: {', '.join(added)}" if added else "") + ("; same targets in another order" if not lost and not added else ""))
    if a["table rows"] != b["table rows"]:
        problems.append(f"tables differ: the original's rows have {a['table rows']} cells, the translation's {b['table rows']}; keep every row and '|'")
    if len(a["list items"]) != len(b["list items"]):
        problems.append(f"the original has {len(a['list items'])} list items, the translation {len(b['list items'])}")
    words = [s for s in segments(before) if len(TOKEN.sub("", s.text).split()) >= 4]
    same = {s.text for s in words} & {s.text for s in segments(after)}
    if words and len(same) * 2 > len(words):
        problems.append(f"{len(same)} of {len(words)} sentences are unchanged, e.g. {sorted(same)[0][:60]!r}; translate them")
    counts = {k: len(v) for k, v in a.items()}
    counts["segments"] = len(segments(before))
    return problems, counts


def main() -> None:
    parser = argparse.ArgumentParser(description="Compare a Markdown file's structure with its translation's.")
    parser.add_argument("original")
    parser.add_argument("translated")
    args = parser.parse_args()
    original, translated = Path(args.original), Path(args.translated)
    for path in (original, translated):
        if not path.is_file():
            sys.exit(f"problem: {path} does not exist")
    if original.resolve() == translated.resolve():
        sys.exit("problem: give the original and the translation, two different files")
    problems, counts = check(original.read_text(encoding="utf-8"), translated.read_text(encoding="utf-8"))
    print(f"{translated.name} against {original.name}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    if problems:
        print("\n".join(f"problem: {p}" for p in problems))
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
