"""Which of the reference LangGraph server's operations the gateway serves.

The reference list is ``data/langgraph_api_operations.json``: the 64 operations (method, path,
operationId) of the OpenAPI that the langgraph-api wheel matching the installed langgraph-sdk
ships (its ``source`` says which). An operation is served when our app's OpenAPI has the same
method on the same path (parameter names aside), or, for ``GET /docs``, when the app serves its
docs page there (FastAPI keeps that route out of the schema).

Run ``python -m tests.gateway.langgraph_compat`` for the table; the compatibility tests write
the same report to ``tests/gateway/artifacts/langgraph_compat.json`` and print its summary line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

SUMMARY = pytest.StashKey[str]()  # the summary line of this run, printed at its end (conftest.py)
DATA = Path(__file__).parent / "data" / "langgraph_api_operations.json"
REPORT = Path(__file__).parent / "artifacts" / "langgraph_compat.json"
METHODS = ("get", "post", "put", "patch", "delete")

# Operations that cannot apply to Herdsman, and why (docs/langgraph-compat.md says the same).
SKIPPED = {
    (
        "POST",
        "/a2a/{}",
    ): "A2A: the agent-to-agent protocol endpoint of LangGraph Platform; Herdsman's agents talk through the LangGraph API",
    (
        "POST",
        "/mcp/",
    ): "the server's own MCP endpoint (exposing graphs as MCP tools); Herdsman is an MCP client, not a server",
    ("GET", "/mcp/"): "the server's own MCP endpoint; Herdsman is an MCP client, not a server",
    ("DELETE", "/mcp/"): "the server's own MCP endpoint; Herdsman is an MCP client, not a server",
}


def _shape(path: str) -> str:
    """The path with every ``{parameter}`` written ``{}``, so parameter names do not matter."""
    return re.sub(r"\{[^}]*\}", "{}", path)


def reference_operations() -> tuple[str, list[dict[str, str]]]:
    """Where the list came from, and its operations."""
    data = json.loads(DATA.read_text(encoding="utf-8"))
    return data["source"], data["operations"]


def served_operations(app: Any) -> set[tuple[str, str]]:
    """(METHOD, path shape) of every operation the app serves."""
    served = {
        (method.upper(), _shape(path))
        for path, item in app.openapi().get("paths", {}).items()
        for method in item
        if method in METHODS
    }
    if getattr(app, "docs_url", None):
        served.add(("GET", app.docs_url))
    return served


def compat_report(app: Any) -> dict[str, Any]:
    """Each reference operation with its status here: served, skipped (and why) or missing."""
    source, operations = reference_operations()
    served = served_operations(app)
    rows = []
    for op in operations:
        key = (op["method"], _shape(op["path"]))
        status = "served" if key in served else "skipped" if key in SKIPPED else "missing"
        rows.append({**op, "status": status, **({"why": SKIPPED[key]} if status == "skipped" else {})})
    counts = {s: sum(1 for r in rows if r["status"] == s) for s in ("served", "skipped", "missing")}
    return {"source": source, "total": len(rows), **counts, "operations": rows}


def summary_line(report: dict[str, Any]) -> str:
    """One line: how many operations are served, skipped by design, missing (and which)."""
    missing = [f"{r['method']} {r['path']}" for r in report["operations"] if r["status"] == "missing"]
    line = (
        f"LangGraph API compatibility: {report['served']}/{report['total']} reference operations served, "
        f"{report['skipped']} skipped by design, {report['missing']} missing"
    )
    return line + (f": {', '.join(missing)}" if missing else "")


def write_report(report: dict[str, Any], path: Path = REPORT) -> Path:
    """Write the report as JSON (the folder is made if needed); the path written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return path


def _main() -> None:
    from herdsman.config import parse_config
    from herdsman_gateway.app import create_app
    from tests.gateway.gateway_support import scripted_model

    report = compat_report(create_app(parse_config("{}", env={}), model=scripted_model()))
    for row in report["operations"]:
        print(f"{row['status']:8} {row['method']:6} {row['path']}")
    print(summary_line(report))


if __name__ == "__main__":
    _main()
