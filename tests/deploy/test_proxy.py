"""deploy/compose/nginx.conf, run by a real nginx: it spreads requests over both gateways, sends
the web UI's paths to the web service, passes a stream on event by event, rate-limits each API
key on its own with a 429, and keeps answering when one gateway is gone.

The shipped file is used as it is, but for its addresses: the Compose service names become two
stand-in gateways and a stand-in web server on loopback (small HTTP servers that say who they
are), since there is no Docker network here. Debian's nginx (scripts/install-system.sh) is older
than the image's, and has every directive the file uses.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from tests.deploy.deploy_support import NGINX, local_nginx_conf, serve_nginx
from tests.services import free_port

pytestmark = pytest.mark.skipif(NGINX is None, reason="nginx is not installed (scripts/install-system.sh installs it)")


class Backend:
    """A stand-in upstream: answers every request with its name; ``/stream`` sends one event,
    waits until the client says it got it (``received``), then sends a second one."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.paths: list[str] = []
        self.received = threading.Event()
        self.first_event_seen_before_second: bool | None = None
        backend = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                backend.paths.append(self.path)
                if self.path == "/stream":
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    self.wfile.write(b"event: values\ndata: 1\n\n")
                    self.wfile.flush()
                    backend.first_event_seen_before_second = backend.received.wait(timeout=20)
                    self.wfile.write(b"event: values\ndata: 2\n\n")
                    return
                body = json.dumps({"server": backend.name, "path": self.path}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.received.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[tuple[str, dict[str, Backend]]]:
    """nginx with the shipped config in front of two stand-in gateways and a stand-in web UI."""
    backends = {name: Backend(name) for name in ("gateway-1", "gateway-2", "web")}
    try:
        with serve_nginx(tmp_path, {name: b.port for name, b in backends.items()}) as url:
            yield url, backends
    finally:
        for backend in backends.values():
            backend.stop()


def test_the_config_passes_nginx_t(tmp_path: Path) -> None:
    backends = {name: Backend(name) for name in ("gateway-1", "gateway-2", "web")}
    server_conf = tmp_path / "default.conf"
    (tmp_path / "nginx.conf").write_text(f"events {{}}\nhttp {{ include {server_conf}; }}\n")
    check = [NGINX, "-t", "-e", str(tmp_path / "e.log"), "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")]
    try:
        server_conf.write_text(local_nginx_conf(free_port(), {name: b.port for name, b in backends.items()}))
        done = subprocess.run(check, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        server_conf.write_text(server_conf.read_text().replace("least_conn;", "least_con;"))
        broken = subprocess.run(check, capture_output=True, text=True, timeout=30)
        assert broken.returncode != 0 and "least_con" in broken.stderr
    finally:
        for backend in backends.values():
            backend.stop()


def test_api_requests_reach_both_gateways_and_the_ui_reaches_the_web_service(proxy) -> None:
    url, backends = proxy
    with httpx.Client(base_url=url, timeout=10) as client:
        answered = {client.get("/threads/search", headers={"x-api-key": f"key-{i}"}).json()["server"] for i in range(8)}
        assert answered == {"gateway-1", "gateway-2"}
        assert client.get("/").json()["server"] == "web"
        assert client.get("/assets/index-abc.js").json()["server"] == "web"
        assert client.get("/api/langgraph/threads/x").json()["server"].startswith("gateway-")
    assert "/" in backends["web"].paths and not any(p.startswith("/threads") for p in backends["web"].paths)


def test_streams_pass_through_event_by_event(proxy) -> None:
    url, backends = proxy
    events = []
    with httpx.Client(base_url=url, timeout=30) as client, client.stream("GET", "/stream") as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: "):
                events.append(line)
                for backend in backends.values():
                    backend.received.set()  # the client has the first event: let the second go
    assert events == ["data: 1", "data: 2"]
    senders = [b for b in backends.values() if b.first_event_seen_before_second is not None]
    assert [b.first_event_seen_before_second for b in senders] == [True], "the proxy held the first event back"


def test_each_api_key_is_rate_limited_on_its_own(proxy) -> None:
    url, _ = proxy
    with httpx.Client(base_url=url, timeout=10) as client:
        statuses = [client.get("/ok", headers={"x-api-key": "greedy"}).status_code for _ in range(200)]
        assert statuses[0] == 200 and 429 in statuses, "200 requests at once passed a 20 r/s limit with a burst of 40"
        assert set(statuses) == {200, 429}
        # Another key, a bearer token and a client without a key still get through.
        assert client.get("/ok", headers={"x-api-key": "patient"}).status_code == 200
        assert client.get("/ok", headers={"Authorization": "Bearer other"}).status_code == 200
        assert client.get("/ok").status_code == 200


def test_made_up_keys_do_not_escape_the_limit_of_their_address(proxy) -> None:
    """Each request with a new key has a fresh per-key budget; the address's limit still holds."""
    url, _ = proxy
    with httpx.Client(base_url=url, timeout=10) as client:
        statuses = [client.get("/ok", headers={"x-api-key": f"made-up-{i}"}).status_code for i in range(1000)]
    assert statuses[0] == 200 and 429 in statuses, "1000 requests with fresh keys passed 100 r/s with a burst of 200"


def test_a_gateway_that_is_gone_is_skipped(proxy) -> None:
    url, backends = proxy
    backends["gateway-1"].stop()
    with httpx.Client(base_url=url, timeout=10) as client:
        answers = [client.get("/threads/search", headers={"x-api-key": f"k{i}"}) for i in range(6)]
    assert [r.status_code for r in answers] == [200] * 6
    assert {r.json()["server"] for r in answers} == {"gateway-2"}
