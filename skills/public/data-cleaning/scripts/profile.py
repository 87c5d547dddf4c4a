"""Profile a table with pandas: rows, duplicates, and per column its type, empty cells and values.

Usage: python3 profile.py FILE [--check]

Run it on the upload before cleaning, and with ``--check`` on the cleaned CSV: then it exits 1,
naming each problem still there (duplicate or empty rows, empty columns, cells with stray spaces
or placeholders such as "n/a", unnamed columns), and prints OK when there is none.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from clean import dates, numeric  # noqa: E402
from tables import MISSING, read_text_table  # noqa: E402


def describe(name: str, col) -> tuple[str, list[str]]:  # noqa: ANN001 - a pandas Series
    """One line about a column of text cells, and the problems it shows."""
    filled = col[col != ""]
    problems = []
    stray = int((filled != filled.str.strip()).sum())
    placeholders = int(filled.str.strip().str.lower().isin(MISSING).sum())
    if stray:
        problems.append(f"`{name}`: {stray} cells with spaces around the value")
    if placeholders:
        problems.append(f"`{name}`: {placeholders} placeholder cells (NA, n/a, null, -) stand for empty")
    head = f"- {name}: "
    as_num = numeric(filled.str.strip())
    if as_num is not None and len(filled):
        values = as_num.astype("float64")
        kind = f"number, min {values.min():g}, max {values.max():g}, mean {values.mean():.4g}"
    elif dates(filled.str.strip(), False) is not None and len(filled):
        kind = f"date, from {filled.min()} to {filled.max()}"
    else:
        top = ", ".join(f"{v} ({n})" for v, n in filled.value_counts().head(3).items())
        kind = f"text, most common: {top or 'none'}"
    missing = len(col) - len(filled)
    share = f" ({missing / len(col):.0%})" if len(col) else ""
    return f"{head}{kind}; {missing} empty{share}, {filled.nunique()} distinct", problems


def main() -> None:
    parser = argparse.ArgumentParser(description="Profile a table with pandas.")
    parser.add_argument("file")
    parser.add_argument("--check", action="store_true", help="exit 1 when the table still needs cleaning")
    args = parser.parse_args()
    frame = read_text_table(args.file)
    duplicates = int(frame.duplicated().sum())
    empty_rows = int((frame.apply(lambda c: c.str.strip()) == "").all(axis=1).sum())
    print(f"{Path(args.file).name}: {len(frame)} rows, {len(frame.columns)} columns")
    print(f"duplicate rows: {duplicates}; empty rows: {empty_rows}")
    problems = []
    if duplicates:
        problems.append(f"{duplicates} duplicate rows")
    if empty_rows:
        problems.append(f"{empty_rows} empty rows")
    for name in frame.columns:
        line, found = describe(str(name), frame[name])
        print(line)
        problems += found
        if str(name).startswith("Unnamed:") or not str(name).strip():
            problems.append(f"column {name!r} has no name in the header")
        elif (frame[name].str.strip() == "").all():
            problems.append(f"`{name}` is empty in every row")
    if not args.check:
        if problems:
            print("to clean: " + "; ".join(problems))
        return
    if problems:
        print("\n".join(f"problem: {p}" for p in problems))
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
