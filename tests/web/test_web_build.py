"""The web UI's component tests (Vitest) and its benchmark, run from the Python suite."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.web.web_support import REPO, WEB

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")


def _need(*paths: Path) -> None:
    missing = [str(p) for p in paths if not p.exists()]
    if missing or not shutil.which("node"):
        reason = f"needs `make web` and node (missing: {', '.join(missing) or 'node'})"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)


def test_component_tests_pass() -> None:
    _need(WEB / "node_modules" / "vitest")
    out = subprocess.run(["npx", "--no-install", "vitest", "run"], cwd=WEB, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "failed" not in out.stdout.lower().replace("0 failed", "")


def test_web_ui_benchmark_prints_one_json_line() -> None:
    _need(WEB / "dist" / "index.html", WEB / "node_modules" / "playwright-core", Path(CHROMIUM))
    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "web_ui.py"), "--messages", "200", "--loads", "1"],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1
    figures = json.loads(lines[0])
    assert figures["bundle_kb"] > 0 and figures["time_to_interactive_ms"] > 0 and figures["render_1000_messages_ms"] > 0
    assert figures["messages_shown"] == 200


def test_gateway_serves_the_built_ui_without_shadowing_the_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fastapi.testclient import TestClient

    from herdsman_gateway.app import create_app
    from tests.support import make_config

    dist = tmp_path / "dist"
    (dist / "assets").mkdir(parents=True)
    (dist / "index.html").write_text("<!doctype html><title>Herdsman</title>")
    (dist / "assets" / "app.js").write_text("console.log(1)")
    monkeypatch.setenv("HERDSMAN_WEB_DIST", str(dist))
    client = TestClient(create_app(make_config(tmp_path / "home")))
    page = client.get("/")
    assert page.status_code == 200 and "Herdsman" in page.text and page.headers["content-type"].startswith("text/html")
    assert client.get("/assets/app.js").text == "console.log(1)"
    assert client.get("/api/health").json() == {"status": "ok"}
    assert "/" not in client.get("/openapi.json").json()["paths"]

    monkeypatch.setenv("HERDSMAN_WEB_DIST", str(tmp_path / "missing"))
    assert TestClient(create_app(make_config(tmp_path / "home2"))).get("/").status_code == 404
