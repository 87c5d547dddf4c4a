"""The one-way rule: herdsman (the harness) never imports herdsman_gateway (the app)."""

from __future__ import annotations

import ast

from tests.support import REPO


def test_harness_never_imports_gateway() -> None:
    offenders = []
    for path in (REPO / "src" / "herdsman").rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.relative_to(REPO)}: {n}" for n in names if n.split(".")[0] == "herdsman_gateway"]
    assert offenders == []
