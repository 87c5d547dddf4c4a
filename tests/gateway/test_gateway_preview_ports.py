"""Port preview on the local (bubblewrap) sandbox: a real ``python3 -m http.server`` started by the
agent's bash tool (``background=true``) in the thread's jail, fetched through the preview origin
with httpx; who may reach it, what cannot be reached, and that it dies with the thread."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from herdsman.models.scripted import ScriptedChatModel
from herdsman.sandbox.bwrap import bwrap_status
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
from tests.support import make_config

pytestmark = pytest.mark.skipif(not bwrap_status().available, reason=f"bubblewrap unusable: {bwrap_status().reason}")


respond = server_agent(lambda port: f"cd {SITE} && exec python3 -m http.server {port} --bind 127.0.0.1")


@pytest.fixture
def model() -> ScriptedChatModel:
    return ScriptedChatModel(respond=respond)


@pytest.fixture
def served(home: Path, model: ScriptedChatModel) -> Iterator[RunningGateway]:
    config = make_config(
        home,
        gateway={"api_keys": ["key-ana", "key-bo"], "preview_origin": {"port": 0}},
        sandbox={"preview": {"ports": "3000-9000,9999"}},
    )
    with running_gateway(config, model=model) as gateway:
        yield gateway


def test_a_server_started_in_the_jail_is_reachable_through_the_preview_origin(served, model) -> None:
    with httpx.Client(base_url=served.url, timeout=60) as http:
        tid, sandbox = thread_with_site(http, served)
        sandbox.write_text(f"{SITE}/sub/index.html", "<p>sub</p>")
        said = ask(http, tid, "serve 8000")
        assert "listening on port 8000" in said and "Preview tab" in said, said
        # the agent was told how the user sees a server it starts, and where it must listen
        system = model.calls[0].messages[0].text
        assert "<preview>" in system and "background=true" in system and "3000-9000,9999" in system
        listing = http.get(f"/api/threads/{tid}/preview", headers=ANA).json()
        assert [(s["ports"], s["running"]) for s in listing["servers"]] == [([8000], True)]
        link = http.post(f"/api/threads/{tid}/preview/token", headers=ANA).json()
        base = link["base_url"]

        page = browser.get(f"{base}/8000/", timeout=30)
        assert page.status_code == 200 and "<h1>Counter</h1>" in page.text, page.text
        assert "sandbox allow-scripts" in page.headers["content-security-policy"]
        assert browser.get(str(page.url.join("app.js"))).text == "let n = 0"
        # http.server redirects /sub to /sub/: the redirect stays under the preview prefix
        moved = browser.get(f"{base}/8000/sub", follow_redirects=True)
        assert moved.status_code == 200 and moved.text == "<p>sub</p>" and str(moved.url).startswith(base)
        assert browser.get(f"{base}/8000/missing.html").status_code == 404  # the server's own 404
        # a port nothing listens on, and one outside sandbox.preview.ports
        idle = browser.get(f"{base}/8001/")
        assert idle.status_code == 502 and "nothing is listening on port 8001" in idle.json()["detail"]
        outside = browser.get(f"{base}/22/")
        assert outside.status_code == 403 and "sandbox.preview.ports" in outside.json()["detail"]
        # another user's token opens nothing of ana's thread, nor does ana's token open another thread
        bo_tid = http.post("/threads", json={}, headers=BO).json()["thread_id"]
        bo_link = http.post(f"/api/threads/{bo_tid}/preview/token", headers=BO).json()
        assert browser.get(f"{bo_link['base_url'].replace(bo_tid, tid)}/8000/").status_code == 403
        assert browser.get(f"{base.replace(tid, bo_tid)}/8000/").status_code == 403

        # from inside a jail of the same thread, neither the server nor the gateway's listeners are reachable
        probe = (
            "python3 -c \"import socket,sys; [print('port', p, socket.socket().connect_ex(('127.0.0.1', int(p))))"
            ' for p in sys.argv[1:]]" 8000 {} {}'
        )
        gateway_port, origin_port = httpx.URL(served.url).port, httpx.URL(link["origin"]).port
        said = ask(http, tid, "run " + probe.format(gateway_port, origin_port))
        refused = {f"port {p} 111" for p in (8000, gateway_port, origin_port)}  # ECONNREFUSED: the jail's own loopback
        assert refused <= set(said.replace("done: ", "").splitlines()), said

        assert_gone_with_thread(http, tid, sandbox.background_jobs()[0], f"{base}/8000/")


def test_a_background_command_that_fails_or_listens_elsewhere_says_so(served) -> None:
    with httpx.Client(base_url=served.url, timeout=60) as http:
        tid = http.post("/threads", json={}, headers=ANA).json()["thread_id"]
        said = ask(http, tid, "serve 99999")
        assert "has already ended" in said and "exit code" in said, said
        sandbox = served.app.state.gateway.sandbox.acquire(tid)
        sandbox.write_text(f"{SITE}/index.html", "x")
        said = ask(http, tid, "serve 9500")
        assert "outside the previewable ports 3000-9000,9999" in said and "9500" in said, said
        deadline = time.monotonic() + 10
        while sandbox.background_jobs()[0].ports() != [9500] and time.monotonic() < deadline:
            time.sleep(0.1)
        sandbox.background_jobs()[0].stop()
        assert not sandbox.background_jobs()[0].running


def test_a_background_command_the_model_also_ended_with_an_ampersand_keeps_running(served) -> None:
    with httpx.Client(base_url=served.url, timeout=60) as http:
        tid = http.post("/threads", json={}, headers=ANA).json()["thread_id"]
        said = ask(http, tid, "background nohup sleep 300 &")
        assert "running" in said and "already ended" not in said, said
        sandbox = served.app.state.gateway.sandbox.acquire(tid)
        job = sandbox.background_jobs()[0]
        assert job.running
        job.stop()


# A WebSocket echo server with the standard library only (the jail's python3 has no websockets):
# the handshake, then each text frame the browser sends comes back as "echo: <text>".
ECHO_SERVER = """
import base64, hashlib, socket, struct
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 8765)); srv.listen()
while True:
    conn, _ = srv.accept(); f = conn.makefile("rb")
    head = {}
    for line in iter(f.readline, b"\\r\\n"):
        k, _, v = line.decode().partition(":"); head[k.strip().lower()] = v.strip()
    accept = base64.b64encode(hashlib.sha1((head["sec-websocket-key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
    conn.sendall(b"HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: " + accept + b"\\r\\n\\r\\n")
    while True:
        b0, b1 = f.read(2)
        if b0 & 15 == 8: conn.close(); break
        n = b1 & 127
        n = struct.unpack(">H", f.read(2))[0] if n == 126 else n
        mask = f.read(4); data = bytes(c ^ mask[i % 4] for i, c in enumerate(f.read(n)))
        out = b"echo: " + data
        conn.sendall(bytes([0x81, len(out)]) + out)
"""


def test_a_websocket_of_a_server_in_the_jail_is_relayed(served) -> None:
    with httpx.Client(base_url=served.url, timeout=60) as http:
        tid = http.post("/threads", json={}, headers=ANA).json()["thread_id"]
        served.app.state.gateway.sandbox.acquire(tid).write_text("/mnt/user-data/workspace/echo.py", ECHO_SERVER)
        said = ask(http, tid, "background python3 echo.py")
        assert "listening on port 8765" in said, said
        base = (
            http.post(f"/api/threads/{tid}/preview/token", headers=ANA).json()["base_url"].replace("http://", "ws://")
        )
    with connect(f"{base}/8765/socket", open_timeout=10) as ws:
        for text in ("hi", "the counter is 3"):
            ws.send(text)
            assert ws.recv(timeout=10) == f"echo: {text}"
    # the token still decides: another thread's path, or a port outside the range, gets no socket
    for url in (f"{base.replace(tid, 'f' * 8 + tid[8:])}/8765/socket", f"{base}/22/socket"):
        with pytest.raises(InvalidStatus):
            connect(url, open_timeout=10)
