"""``herdsman serve``: binds from config, loopback only without API keys, says so at start."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import httpx
import yaml

from tests.gateway.gateway_support import serve_subprocess
from tests.services import free_port
from tests.support import run_cli


def _write_config(tmp_path: Path, **gateway: object) -> Path:
    data = {
        "home": str(tmp_path / "home"),
        "checkpointer": {"type": "memory"},
        "models": [
            {
                "name": "scripted",
                "use": "herdsman.models.scripted:ScriptedChatModel",
                "responses": ["hello from the gateway"],
                "on_exhausted": "repeat_last",
            }
        ],
        "gateway": gateway,
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_serve_refuses_an_open_address_without_api_keys(tmp_path: Path) -> None:
    config = _write_config(tmp_path, host="0.0.0.0")
    result = run_cli("serve", "--config", str(config), cwd=tmp_path)
    assert result.returncode == 2
    assert "api_keys is empty" in result.stderr and "127.0.0.1" in result.stderr


def test_serve_starts_on_the_configured_port_and_answers(tmp_path: Path) -> None:
    port = free_port()
    config = _write_config(tmp_path, port=port)
    with serve_subprocess(config, port, tmp_path) as served:
        url = served.url
        thread = httpx.post(f"{url}/threads", json={}).json()
        values = httpx.post(
            f"{url}/threads/{thread['thread_id']}/runs/wait",
            json={"assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": "hi"}]}},
            timeout=30,
        ).json()
        assert values["messages"][-1]["content"] == "hello from the gateway"
    assert f"http://127.0.0.1:{port}" in served.stderr
    assert "auth is off" in served.stderr and "loopback" in served.stderr


def test_the_startup_line_says_to_open_the_web_ui_in_a_browser(tmp_path: Path, monkeypatch) -> None:
    """With a built web UI, the first line names the address to open in a browser, and that
    address serves the UI (not "the LangGraph API at /"); the configured port is the one named."""
    dist = tmp_path / "dist"
    dist.mkdir()
    (dist / "index.html").write_text("<!doctype html><title>Herdsman UI</title>")
    monkeypatch.setenv("HERDSMAN_WEB_DIST", str(dist))
    port = free_port()
    config = _write_config(tmp_path, port=port)
    with serve_subprocess(config, port, tmp_path) as served:
        page = httpx.get(f"{served.url}/")
        assert page.status_code == 200 and "Herdsman UI" in page.text
    first = served.stderr.splitlines()[0]
    assert f"open http://127.0.0.1:{port} in a browser" in first
    assert "LangGraph API at /" not in first


def test_the_startup_line_without_a_built_ui_says_so() -> None:
    from herdsman_gateway.serve import banner

    line = banner("127.0.0.1", 2026, web_ui=False)
    assert "http://127.0.0.1:2026" in line and "no web UI" in line and "make web" in line
    assert "in a browser" not in line
    assert "open http://127.0.0.1:8080 in a browser" in banner("0.0.0.0", 8080, web_ui=True)  # a wildcard is no URL
    assert "open http://[::1]:2026 in a browser" in banner("::1", 2026, web_ui=True)


def test_stopping_serve_ends_open_streams(tmp_path: Path) -> None:
    """SIGTERM while a client follows a long run: the stream ends and the server exits; it does
    not wait for the run (its model call takes 600 s)."""
    port = free_port()
    config = _write_config(tmp_path, port=port)
    data = yaml.safe_load(config.read_text())
    data["models"][0]["responses"] = [{"content": "slow", "delay": 600}]
    config.write_text(yaml.safe_dump(data))
    with serve_subprocess(config, port, tmp_path) as served:
        proc, url = served.proc, served.url
        tid = httpx.post(f"{url}/threads", json={}).json()["thread_id"]
        body = {"assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": "take your time"}]}}
        events = []
        with httpx.stream("POST", f"{url}/threads/{tid}/runs/stream", json=body, timeout=60) as stream:
            lines = stream.iter_lines()
            for line in lines:
                if line.startswith("event:"):
                    events.append(line.split(":", 1)[1].strip())
                    break  # the metadata event: the run is going
            proc.terminate()
            for line in lines:  # ends when the server closes the stream
                if line.startswith("event:"):
                    events.append(line.split(":", 1)[1].strip())
        assert events[0] == "metadata"
        proc.wait(timeout=20)  # not the run's 600 s
    assert proc.returncode in (0, -signal.SIGTERM)  # stopped by the signal (uvicorn re-raises it), not killed


def test_a_gateway_killed_mid_run_keeps_the_thread_up_to_its_last_checkpoint(tmp_path: Path) -> None:
    """SIGKILL while a run waits on its second model call, with ``runs.max_attempts: 1``: after a
    restart the run is not started again but reported lost (WorkerLost), the thread has every
    finished step (and the file it wrote), and a new run continues it. (With attempts left the
    run is resumed instead: test_gateway_recovery.py.)"""
    port = free_port()
    config = _write_config(tmp_path, port=port)
    data = yaml.safe_load(config.read_text())
    data["checkpointer"] = {"type": "sqlite"}
    data["runs"] = {"max_attempts": 1, "lease_seconds": 1, "poll_seconds": 0.1}
    write = {"name": "write_file", "args": {"path": "/mnt/user-data/outputs/a.txt", "content": "one"}}
    data["models"][0]["responses"] = [{"tool_calls": [write]}, {"content": "never", "delay": 600}]
    config.write_text(yaml.safe_dump(data))
    body = {"assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": "write a.txt"}]}}
    with serve_subprocess(config, port, tmp_path) as served:
        url = served.url
        tid = httpx.post(f"{url}/threads", json={}).json()["thread_id"]
        run_id = httpx.post(f"{url}/threads/{tid}/runs", json=body).json()["run_id"]
        for _ in range(400):  # until the tool's step is checkpointed
            messages = httpx.get(f"{url}/threads/{tid}/state").json()["values"].get("messages", [])
            if [m["type"] for m in messages] == ["human", "ai", "tool"]:
                break
            time.sleep(0.05)
        assert [m["type"] for m in messages] == ["human", "ai", "tool"]
        assert httpx.get(f"{url}/threads/{tid}/runs/{run_id}").json()["status"] == "running"
        served.proc.send_signal(signal.SIGKILL)
        served.proc.wait(timeout=20)

    data["models"][0]["responses"] = ["carried on"]
    config.write_text(yaml.safe_dump(data))
    with serve_subprocess(config, port, tmp_path) as served:
        url = served.url
        for _ in range(400):  # until a worker finds the run's lease expired
            lost = httpx.get(f"{url}/threads/{tid}/runs/{run_id}").json()
            if lost["status"] != "running":
                break
            time.sleep(0.05)
        assert lost["status"] == "error" and lost["error"]["error"] == "WorkerLost"
        assert "start a new run on the thread" in lost["error"]["message"]
        assert (
            httpx.get(f"{url}/threads/{tid}").json()["status"] == "error"
        )  # as after any failed run; it takes new runs (below)
        state = httpx.get(f"{url}/threads/{tid}/state").json()["values"]
        assert [m["type"] for m in state["messages"]] == ["human", "ai", "tool"]
        assert httpx.get(f"{url}/api/threads/{tid}/artifacts/outputs/a.txt").text == "one"
        more = {"assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": "go on"}]}}
        values = httpx.post(f"{url}/threads/{tid}/runs/wait", json=more, timeout=30).json()
        assert [m["content"] for m in values["messages"]][-2:] == ["go on", "carried on"]
        assert [m["type"] for m in values["messages"]][:3] == ["human", "ai", "tool"]
