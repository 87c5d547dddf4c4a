"""Check a query result written by query.py: open it and print what it holds.

Usage: python3 check_result.py RESULT.csv|RESULT.md [--min-rows N]

Prints the number of rows and columns, the header and the first rows; exits 1, naming the
problem, when the file is missing, has no header, has rows of the wrong width, or fewer rows
than ``--min-rows`` (default 1).
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

SHOWN = 5


def markdown_rows(text: str) -> list[list[str]]:
    """The cells of a Markdown table, header first, the ``|---|`` line left out."""
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("|"):
            continue
        cells = [c.strip().replace("\x00", "|") for c in line.strip("|").replace("\\|", "\x00").split("|")]
        if all(set(c) <= set("-: ") and c for c in cells):
            continue
        rows.append(cells)
    return rows


def problems_and_rows(path: Path) -> tuple[list[str], list[list[str]]]:
    """Problems found in the result file, and its rows (header first)."""
    if not path.is_file():
        return [f"{path} does not exist; run query.py with --out {path}"], []
    text = path.read_text(encoding="utf-8-sig")
    rows = markdown_rows(text) if path.suffix.lower() == ".md" else list(csv.reader(text.splitlines()))
    if not rows:
        return [f"{path} holds no table; run query.py again"], []
    problems = [f"line {n + 1} has {len(r)} cells, the header has {len(rows[0])}" for n, r in enumerate(rows) if len(r) != len(rows[0])]
    if any(not h.strip() for h in rows[0]):
        problems.append("a column has no name; name every column in the SELECT (... AS name)")
    return problems, rows


def main() -> None:
    parser = argparse.ArgumentParser(description="Open a query result and print what it holds.")
    parser.add_argument("result")
    parser.add_argument("--min-rows", type=int, default=1)
    args = parser.parse_args()
    problems, rows = problems_and_rows(Path(args.result))
    if rows:
        header, body = rows[0], rows[1:]
        print(f"{args.result}: {len(body)} rows, {len(header)} columns: {', '.join(header)}")
        for r in body[:SHOWN]:
            print("  " + " | ".join(r))
        if len(body) < args.min_rows:
            problems.append(f"{len(body)} rows, fewer than {args.min_rows}; check the WHERE and JOIN conditions")
    if problems:
        print("\n".join(f"problem: {p}" for p in problems))
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
