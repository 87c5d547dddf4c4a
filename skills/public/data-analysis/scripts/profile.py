"""Profile a table: rows, and per column its type, empty cells, distinct values and a summary.

Usage: python3 profile.py FILE
"""

from __future__ import annotations

import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from table import number, read_table  # noqa: E402


def main(path: str) -> None:
    header, rows = read_table(path)
    print(f"{Path(path).name}: {len(rows)} rows, {len(header)} columns")
    for i, name in enumerate(header):
        values = [r[i].strip() for r in rows if i < len(r)]
        filled = [v for v in values if v]
        nums = [n for n in (number(v) for v in filled) if n is not None]
        empty = len(values) - len(filled)
        distinct = len(set(filled))
        if filled and len(nums) == len(filled):
            mean = statistics.fmean(nums)
            print(f"- {name}: number, {empty} empty, {distinct} distinct, min {min(nums):g}, max {max(nums):g}, mean {mean:.4g}, sum {sum(nums):g}")
        else:
            top = ", ".join(f"{v} ({n})" for v, n in Counter(filled).most_common(3))
            print(f"- {name}: text, {empty} empty, {distinct} distinct, most common: {top or 'none'}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: profile.py FILE")
    main(sys.argv[1])
