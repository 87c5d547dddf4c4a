"""Tools that cannot work here are not offered: web_search whose endpoint refuses connections,
web_fetch without internet access (unless web.allow_networks names networks to fetch); a
reachable endpoint keeps the tool; the switch turns the check off."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from herdsman.client import HerdsmanClient
from herdsman.models.scripted import ScriptedChatModel
from herdsman.tools import reachability
from tests.support import make_config


@pytest.fixture(autouse=True)
def fresh_cache():
    reachability.clear_cache()
    yield
    reachability.clear_cache()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the socket closes


async def offered(config) -> set[str]:
    model = ScriptedChatModel(responses=["ok"])
    async with HerdsmanClient(config, model=model) as client:
        [e async for e in client.stream("hi", thread_id="t-tools")]
    return set(model.calls[0].tools)


async def test_unreachable_search_endpoint_and_no_internet_hide_the_web_tools(home: Path, monkeypatch) -> None:
    monkeypatch.setattr(reachability, "INTERNET_PROBES", (("127.0.0.1", closed_port(), False),))
    search = {"provider": "searxng", "base_url": f"http://127.0.0.1:{closed_port()}"}
    tools = await offered(make_config(home, web={"search": search}))
    assert "web_fetch" not in tools and "web_search" not in tools
    assert {"bash", "read_file", "write_file"} <= tools


async def test_reachable_endpoints_keep_the_web_tools(home: Path, monkeypatch) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        port = server.getsockname()[1]
        monkeypatch.setattr(reachability, "INTERNET_PROBES", (("127.0.0.1", port, False),))
        search = {"provider": "searxng", "base_url": f"http://127.0.0.1:{port}"}
        tools = await offered(make_config(home, web={"search": search}))
    assert {"web_fetch", "web_search"} <= tools


def test_a_network_that_accepts_any_connection_is_not_the_internet() -> None:
    """A verified TLS handshake is needed: a plain listener (as a sandbox's catch-all proxy)
    accepts the TCP connection but is not taken for the internet."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        port = server.getsockname()[1]
        assert reachability.any_reachable((("127.0.0.1", port, False),))
        reachability.clear_cache()
        assert not reachability.any_reachable((("127.0.0.1", port, True),))


async def test_allowed_networks_keep_web_fetch_and_the_switch_keeps_all(home: Path, monkeypatch) -> None:
    monkeypatch.setattr(reachability, "INTERNET_PROBES", (("127.0.0.1", closed_port(), False),))
    tools = await offered(make_config(home, web={"allow_networks": ["127.0.0.0/8"]}))
    assert "web_fetch" in tools
    reachability.clear_cache()
    tools = await offered(make_config(home, context={"hide_unavailable_tools": False}))
    assert {"web_fetch", "web_search"} <= tools


def test_a_hanging_probe_never_keeps_the_process_alive() -> None:
    """A name lookup or connect that hangs (a resolver that does not answer) must not hold the
    process at exit: the CLI's Ctrl-C test timed out when the probe's worker was joined at exit."""
    import subprocess
    import sys

    code = (
        "import socket, time\n"
        "from herdsman.tools import reachability as r\n"
        "socket.create_connection = lambda *a, **k: time.sleep(600)\n"
        "print(r.any_reachable((('example.invalid', 443, True),)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
