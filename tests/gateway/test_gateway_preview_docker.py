"""Port preview on the docker sandbox, on a real engine (podman's Docker-compatible service): a web
server the agent's bash tool starts in the background in the thread's container is fetched
through the preview origin with httpx; no port of the container is published; another user's
thread is refused (404); the server, and the way into it, are gone once the thread is deleted.

The test image is busybox (no Python), so the server is busybox's ``httpd``; what the gateway does
with it is what it does with ``python3 -m http.server``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from herdsman.models.scripted import ScriptedChatModel
from tests.gateway.gateway_support import RunningGateway, running_gateway
from tests.gateway.preview_support import (
    ANA,
    BO,
    SITE,
    ask,
    assert_gone_with_thread,
    browser,
    server_agent,
    thread_with_site,
)
from tests.sandbox.podman_engine import PodmanEngine, engine_or_skip
from tests.support import make_config

respond = server_agent(lambda port: f"exec httpd -f -p 127.0.0.1:{port} -h {SITE}")


@pytest.fixture(scope="module")
def engine() -> PodmanEngine:
    return engine_or_skip()


@pytest.fixture
def model() -> ScriptedChatModel:
    return ScriptedChatModel(respond=respond)


@pytest.fixture
def served(tmp_path: Path, engine: PodmanEngine, model: ScriptedChatModel) -> Iterator[RunningGateway]:
    docker = {"base_url": engine.base_url, "image": engine.image, "pull": "never"}
    config = make_config(
        tmp_path / "home", skills={"enabled": False},
        gateway={"api_keys": ["key-ana", "key-bo"], "preview_origin": {"port": 0}},
        sandbox={"provider": "docker", "command_timeout_seconds": 20, "docker": docker,
                 "limits": {"memory_mb": 128, "pids": 64, "cpus": 1, "file_size_mb": 16}},
    )  # fmt: skip
    with running_gateway(config, model=model) as gateway:
        yield gateway
        gateway.app.state.gateway.sandbox.cleanup()


def streamed(http: httpx.Client, tid: str, text: str) -> list[tuple[str, Any]]:
    """The (event, data) pairs of a streamed run (values and custom modes)."""
    body = {
        "assistant_id": "lead_agent",
        "input": {"messages": [{"role": "user", "content": text}]},
        "stream_mode": ["values", "custom"],
    }
    events: list[tuple[str, Any]] = []
    with http.stream("POST", f"/threads/{tid}/runs/stream", headers=ANA, json=body) as got:
        assert got.status_code == 200
        name = ""
        for line in got.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                events.append((name, json.loads(line[6:])))
    return events


def test_a_server_started_in_the_container_is_reachable_through_the_preview_origin(served, engine, model) -> None:
    with httpx.Client(base_url=served.url, timeout=60) as http:
        tid, sandbox = thread_with_site(http, served)
        events = streamed(http, tid, "serve 8000")
        said = events[-1][1]["messages"][-1]["content"]
        assert "listening on port 8000" in said and "Preview tab" in said, said
        assert "<preview>" in model.calls[0].messages[0].text  # the agent was told how the user sees it
        # the run's events say a server started listening, once
        previews = [data for name, data in events if name == "custom" and data.get("type") == "preview"]
        assert [(p["port"], p["thread_id"]) for p in previews] == [(8000, tid)], events
        assert not [d for n, d in streamed(http, tid, "run true") if n == "custom"], "announced once"
        # the container shares its network with the thread's other commands: they reach the server
        assert "127.0.0.1:8000" in said, said
        assert "Counter" in ask(http, tid, "run wget -qO- http://127.0.0.1:8000/")
        listing = http.get(f"/api/threads/{tid}/preview", headers=ANA).json()
        assert [(s["ports"], s["running"]) for s in listing["servers"]] == [([8000], True)]
        base = http.post(f"/api/threads/{tid}/preview/token", headers=ANA).json()["base_url"]

        page = browser.get(f"{base}/8000/")
        assert page.status_code == 200 and "<h1>Counter</h1>" in page.text, page.text
        assert "sandbox allow-scripts" in page.headers["content-security-policy"]
        assert browser.get(str(page.url.join("app.js"))).text == "let n = 0"
        idle = browser.get(f"{base}/8001/")
        assert idle.status_code == 502 and "nothing is listening on port 8001" in idle.json()["detail"]

        # nothing of the container is published on the host
        container = engine.podman("inspect", "--format", "{{json .NetworkSettings.Ports}}", sandbox.box.container_id)
        assert container.returncode == 0 and container.stdout.strip() in ("{}", "null", ""), container.stdout

        # another user: the thread's preview is not found, and bo's own link opens nothing of ana's
        assert http.get(f"/api/threads/{tid}/preview", headers=BO).status_code == 404
        assert http.post(f"/api/threads/{tid}/preview/token", headers=BO).status_code == 404
        bo_tid = http.post("/threads", json={}, headers=BO).json()["thread_id"]
        bo_link = http.post(f"/api/threads/{bo_tid}/preview/token", headers=BO).json()
        assert browser.get(f"{bo_link['base_url'].replace(bo_tid, tid)}/8000/").status_code == 403
        # bo's container is another network: nothing listens on 8000 there
        bo_page = browser.get(f"{bo_link['base_url']}/8000/")
        assert bo_page.status_code == 502, bo_page.text

        assert_gone_with_thread(http, tid, sandbox.background_jobs()[0], f"{base}/8000/")
