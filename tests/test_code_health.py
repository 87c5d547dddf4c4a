"""No class in ``src/`` over 500 lines or 35 methods: a class that size does several jobs.

Methods are the ``def`` and ``async def`` directly in the class body. A class still over the limit
is listed in :data:`DEBT` with its size today: it may shrink, never grow, and leaves the list once
it is split (the test says so when it is under the limit).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
MAX_LINES = 500
MAX_METHODS = 35
DEBT: dict[str, tuple[int, int]] = {}
"""Classes over the limit today, with their (lines, methods): to be split (issue #36)."""


def class_sizes() -> dict[str, tuple[int, int]]:
    """Every class under ``src/``: ``path:Name`` -> (lines, methods)."""
    sizes = {}
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                methods = sum(isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) for m in node.body)
                sizes[f"{path.relative_to(SRC)}:{node.name}"] = (node.end_lineno - node.lineno + 1, methods)
    return sizes


def test_no_class_is_over_500_lines_or_35_methods() -> None:
    sizes = class_sizes()
    over = {name: size for name, size in sizes.items() if size[0] > MAX_LINES or size[1] > MAX_METHODS}
    new = {name: size for name, size in over.items() if name not in DEBT}
    assert not new, f"classes over {MAX_LINES} lines or {MAX_METHODS} methods (split them, one job each): {new}"
    grown = {
        name: (sizes[name], DEBT[name])
        for name in over.keys() & DEBT.keys()
        if sizes[name][0] > DEBT[name][0] or sizes[name][1] > DEBT[name][1]
    }
    assert not grown, f"classes of the split-me list grew (now, then): {grown}"
    settled = sorted(DEBT.keys() - over.keys())
    assert not settled, f"under the limit now: remove them from DEBT: {settled}"


def test_every_noqa_and_type_ignore_in_src_says_why() -> None:
    """A ``# noqa: CODE`` in ``src/`` is followed by `` - `` and the reason the rule does not
    apply there, a ``# type: ignore[code]`` by a comment saying why the checker is wrong there:
    a reader need not guess whether either hides a bug."""
    import re

    bare = re.compile(r"#\s*noqa(?::\s*[A-Z0-9, ]+)?\s*$|#\s*type:\s*ignore(\[[^\]]*\])?\s*$")
    found = [
        f"{path.relative_to(SRC)}:{n}"
        for path in sorted(SRC.rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if bare.search(line)
    ]
    assert not found, f"noqa or type: ignore without a reason (add ' - why' or '  # why'): {found}"
