"""A fake platform API for channel tests: a FastAPI app served by uvicorn on a loopback port.

Each platform's fake (``fake_telegram.py``, ...) adds its routes to :class:`FakeServer`'s app and
records every API call it answers in ``calls``, so tests assert on what the real client library
sent over the wire.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import uvicorn
from fastapi import FastAPI, WebSocketDisconnect

from herdsman.config.schema import HerdsmanConfig
from tests.support import make_config

T = TypeVar("T")


@dataclass
class Call:
    """One API call the fake received: the method name and its parameters."""

    method: str
    params: dict[str, Any]
    files: dict[str, tuple[str, bytes]] = field(default_factory=dict)


class FakeServer:
    """Base of the fakes: the app, the recorded calls, and waiting for a call."""

    def __init__(self) -> None:
        self.app = FastAPI()
        self.calls: list[Call] = []
        self.lock = threading.Lock()
        self.url = ""

    def record(self, call: Call) -> None:
        """Remember a call."""
        with self.lock:
            self.calls.append(call)

    def named(self, method: str) -> list[Call]:
        """The calls of one API method, oldest first."""
        with self.lock:
            return [c for c in self.calls if c.method == method]

    def wait_for(self, check: Callable[[], T], what: str, timeout: float = 20.0) -> T:
        """Poll ``check`` until it returns something truthy; fail naming ``what``."""
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            if time.monotonic() > deadline:
                with self.lock:
                    seen = [(c.method, c.params) for c in self.calls][-10:]
                raise AssertionError(f"timed out waiting for {what}; last calls: {seen}")
            time.sleep(0.02)

    def message_texts(self) -> list[str]:
        """The text of every text message the bot sent (fakes of message APIs override it)."""
        raise NotImplementedError

    def wait_message(self, needle: str) -> str:
        """Wait for a text message (of :meth:`message_texts`) containing ``needle``; return it."""
        return self.wait_for(
            lambda: next((t for t in self.message_texts() if needle in t), None), f"a message with {needle!r}"
        )

    def texts(self, method: str, key: str = "text") -> list[str]:
        """The ``key`` parameter of every call of ``method``."""
        return [str(c.params.get(key)) for c in self.named(method)]

    def wait_text(self, method: str, needle: str, key: str = "text") -> str:
        """Wait for a ``method`` call whose ``key`` contains ``needle``; return that text."""
        return self.wait_for(
            lambda: next((t for t in self.texts(method, key) if needle in t), None), f"{method} with {needle!r}"
        )


@contextmanager
def serving(fake: FakeServer) -> Iterator[FakeServer]:
    """Serve ``fake.app`` on a free loopback port for the ``with`` block (sets ``fake.url``)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(fake.app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the fake platform server did not start"
        time.sleep(0.01)
    fake.url = f"http://127.0.0.1:{port}"
    try:
        yield fake
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


async def pump(read: Callable[[], Awaitable[None]], write: Callable[[], Awaitable[None]]) -> None:
    """Run a fake websocket's reader and writer until either ends (the client left), then stop both."""
    tasks = [asyncio.create_task(read()), asyncio.create_task(write())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    except WebSocketDisconnect:
        pass
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def channel_row(gateway_url: str, name: str) -> dict[str, Any]:
    """The line of ``GET /api/channels`` about channel ``name``."""
    import httpx

    return next(c for c in httpx.get(f"{gateway_url}/api/channels").json() if c["name"] == name)


def channel_config(home: Any, name: str, section: dict[str, Any], **config: Any) -> HerdsmanConfig:
    """A config with channel ``name`` set to ``section`` (progress updates sent at once)."""
    return make_config(home, channels={"progress_interval_seconds": 0, name: section}, **config)
