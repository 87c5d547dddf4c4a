"""Check a cited report: every [n] has a source line under '## Sources', every source is cited,
and sources are numbered 1..N without gaps. Prints OK or one line per problem.

Usage: python3 check_citations.py REPORT.md
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def check(text: str) -> list[str]:
    parts = re.split(r"^##\s+Sources\s*$", text, maxsplit=1, flags=re.M | re.I)
    if len(parts) < 2:
        return ["no '## Sources' section: add one with a line '[n] <title> - <URL or path>' per source"]
    body, sources = parts
    sources = re.split(r"^##\s", sources, maxsplit=1, flags=re.M)[0]
    listed: dict[int, str] = {}
    problems: list[str] = []
    for line in sources.splitlines():
        m = re.match(r"\s*(?:[-*]\s*)?\[(\d+)\]\s*(.+)", line)
        if m:
            n = int(m.group(1))
            if n in listed:
                problems.append(f"source [{n}] is listed twice")
            listed[n] = m.group(2).strip()
            if not re.search(r"(https?://\S+|/\S+)", m.group(2)):
                problems.append(f"source [{n}] has no URL or file path: {m.group(2).strip()!r}")
    cited = {int(n) for group in re.findall(r"\[(\d+(?:\s*,\s*\d+)*)\]", body) for n in group.split(",")}
    for n in sorted(cited - set(listed)):
        problems.append(f"[{n}] is cited but not listed under Sources")
    for n in sorted(set(listed) - cited):
        problems.append(f"source [{n}] is listed but never cited; cite it or remove it")
    if listed and sorted(listed) != list(range(1, len(listed) + 1)):
        problems.append(f"sources should be numbered 1..{len(listed)} without gaps (found {sorted(listed)})")
    if not cited:
        problems.append("the report cites no source; cite each factual sentence as [n]")
    return problems


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: check_citations.py REPORT.md")
    path = Path(sys.argv[1])
    if not path.is_file():
        sys.exit(f"error: {path} does not exist; write the report first")
    found = check(path.read_text(encoding="utf-8"))
    for problem in found:
        print(problem)
    print("OK" if not found else f"{len(found)} problem(s)")
    sys.exit(1 if found else 0)
