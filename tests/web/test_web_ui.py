"""The web UI in a real browser: Playwright drives Debian's Chromium headless against a gateway
that serves the built UI (``web/dist``) and runs the scripted lead of ``web_support``.

Each test runs one scenario of ``e2e.mjs`` with node and asserts on the JSON line it prints;
screenshots are kept under ``tests/web/artifacts/``. Needs ``make web`` (the build) and the
``chromium`` package (``scripts/install-system.sh`` installs it); without them the tests are
skipped locally and fail in CI.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gateway.gateway_support import RunningGateway
from tests.web.web_support import REPO, WEB, web_gateway

SCRIPT = Path(__file__).with_name("e2e.mjs")
ARTIFACTS = Path(__file__).with_name("artifacts")
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")


def _missing() -> str | None:
    if not (WEB / "dist" / "index.html").is_file():
        return "the web UI is not built: run `make web`"
    if not (WEB / "node_modules" / "playwright-core").is_dir():
        return "web/node_modules is missing: run `make web`"
    if not shutil.which("node"):
        return "node is not installed"
    if not Path(CHROMIUM).exists():
        return f"no Chromium at {CHROMIUM}: apt-get install chromium (scripts/install-system.sh does)"
    return None


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    """One gateway serving the built UI for all the browser scenarios."""
    reason = _missing()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    ARTIFACTS.mkdir(exist_ok=True)
    with web_gateway(tmp_path_factory.mktemp("web-home")) as served:
        yield served


API_KEY = "web-test-key"


@pytest.fixture(scope="module")
def keyed_gateway(gateway: RunningGateway, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    """A second gateway, with auth on (``gateway.api_keys``)."""
    with web_gateway(tmp_path_factory.mktemp("web-keyed"), api_keys=[API_KEY]) as served:
        yield served


def run_scenario(gateway: RunningGateway, scenario: str) -> dict:
    """Run one browser scenario; its checks on success, a readable failure otherwise."""
    proc = subprocess.run(
        ["node", str(SCRIPT), scenario, gateway.url, str(ARTIFACTS)],
        capture_output=True, text=True, timeout=120, cwd=REPO, env={**os.environ, "WEB_API_KEY": API_KEY},
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, f"the {scenario} scenario printed no result (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    result = json.loads(lines[-1])
    assert result["ok"] and proc.returncode == 0, (
        f"browser scenario {scenario} failed: {result.get('error')}\nchecks: {result['checks']}\n"
        f"screenshots: {result['screenshots']}\n{proc.stderr[-2000:]}"
    )
    assert all(Path(s).is_file() for s in result["screenshots"]) and result["screenshots"]
    return result["checks"]


def test_send_message_and_see_streamed_answer(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "chat")
    assert checks["tokens streamed"]["distinct_lengths"] >= 3
    assert checks["thread listed"] and checks["output previewed"] and checks["run error shown"]


def test_three_parallel_subagents_show_three_live_cards(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "subagents")
    assert checks["three cards"] and checks["cards live together"]["running"] >= 2 and checks["all completed"]


def test_interrupts_answered_in_the_page(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "interrupt")
    assert checks["clarification answered"] and checks["approved call ran"]


def test_upload_by_drop_then_agent_reads_it(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "upload")
    assert checks["csv previewed as a table"] and checks["agent read the upload"]


def test_reload_mid_run_and_the_run_goes_on_in_the_page(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "reload")
    assert checks["rejoined the running stream"] and checks["all steps shown"]["after"] == 4


def test_gateway_down_is_shown_and_the_page_recovers(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "down")
    assert checks["down shown"] and checks["usable after recovery"]


def test_stop_cancels_the_run(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "stop")
    assert checks["run cancelled on the gateway"]["status"] != "busy"


def test_edit_and_regenerate_branch_from_a_checkpoint(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "branch")
    assert checks["edited branch"] and checks["regenerated in place"]


def test_api_key_set_in_the_page_and_previews_work_with_auth(keyed_gateway: RunningGateway) -> None:
    checks = run_scenario(keyed_gateway, "auth")
    assert checks["asks for the key"] and checks["image previewed with the key"] and checks["no errors left"]
