"""What the task generators share: the virtual paths, a CSV writer and the task record.

``make_tasks.py`` (the development tasks) and ``heldout.py`` (the test split) both build their
tasks with :func:`task`, so every task has the same keys in the same order in ``tasks.yaml``.
"""

from __future__ import annotations

import csv
import io

WS = "/mnt/user-data/workspace"
OUT = "/mnt/user-data/outputs"
SPLITS = ("dev", "test")


def csv_text(header: list[str], rows: list[list]) -> str:
    """``rows`` under ``header`` as CSV text (Unix line ends)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def task(
    id: str,
    category: str,
    prompt: str,
    check: dict | list,
    files: dict | None = None,
    upload: bool = False,
    split: str = "dev",
    modes: dict[str, str] | None = None,
    mtimes: dict[str, int] | None = None,
) -> dict:
    """One task: its prompt, the files placed before it starts (``modes``: octal permission bits,
    ``mtimes``: modification times in Unix seconds, for some of them) and its check."""
    assert split in SPLITS, split
    t = {"id": id, "category": category, "split": split, "prompt": prompt, "files": files or {}, "check": check}
    if modes:
        t["modes"] = modes
    if mtimes:
        t["mtimes"] = mtimes
    if upload:
        t["upload"] = True
    return t
