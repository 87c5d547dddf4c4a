"""Fixtures for the tool tests: real MCP servers as subprocesses, free loopback ports."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SERVER = str(Path(__file__).with_name("mcp_server.py"))


def free_port() -> int:
    """A TCP port nobody listens on right now, on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float = 20.0) -> None:
    """Wait until something listens on ``port`` (or the process died)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"test server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"test server did not listen on {port} within {timeout}s")


def stdio_server(name: str, mode: str = "stdio", **extra: object) -> dict:
    """An mcp.servers entry that starts tests/tools/mcp_server.py in ``mode`` over stdio."""
    return {"name": name, "transport": "stdio", "command": sys.executable, "args": [SERVER, mode], **extra}


def flaky_stdio_server(tmp: Path, name: str, flag: Path, **extra: object) -> dict:
    """An mcp.servers entry whose server crashes at start until ``flag`` exists, then serves calc."""
    script = tmp / f"{name}.py"
    script.write_text(
        "import os, runpy, sys\n"
        f"if not os.path.exists({str(flag)!r}): sys.exit(1)\n"
        "sys.argv = ['mcp_server.py', 'stdio']\n"
        f"runpy.run_path({SERVER!r}, run_name='__main__')\n"
    )
    return {"name": name, "transport": "stdio", "command": sys.executable, "args": [str(script)], **extra}


def _served(mode: str, path: str, *extra: str) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, SERVER, mode, str(port), *extra], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        proc.terminate()  # uvicorn would wait for open streams and calls: kill it if it lingers
        try:
            proc.wait(2)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@pytest.fixture(scope="session")
def http_mcp_url() -> Iterator[str]:
    """The FastMCP test server over streamable HTTP on a loopback port."""
    yield from _served("http", "/mcp")


@pytest.fixture(scope="session")
def oauth_mcp_url() -> Iterator[str]:
    """The FastMCP test server over streamable HTTP, wanting the token web_server.py's
    /oauth/token issues to client "herdsman" with secret "s3cret"."""
    yield from _served("http-auth", "/mcp", "tok-granted")


@pytest.fixture(scope="session")
def sse_mcp_url() -> Iterator[str]:
    """The FastMCP test server over SSE on a loopback port."""
    yield from _served("sse", "/sse")


@pytest.fixture(scope="module")
def web() -> Iterator[Any]:
    """The local web server of tests/tools/web_server.py."""
    from tests.tools.web_server import WebServer

    with WebServer() as server:
        yield server
