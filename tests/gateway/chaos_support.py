"""The processes of the chaos test (``test_gateway_chaos.py``) and the clients that drive them.

:class:`Stack` starts ``herdsman serve`` gateways and ``herdsman worker`` processes on one
PostgreSQL and Redis, each with its output in a log file (never a pipe nobody reads, which
would stall a busy process), and kills (SIGKILL) and restarts them. :func:`sdk_client` is the
official ``langgraph-sdk`` client whose transport turns "cannot connect" into
:class:`GatewayDown`, so a client notices at once that its gateway is gone and goes to the
other one (the SDK itself would retry the same address for about 15 s).
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml
from langgraph_sdk.client import LangGraphClient

from tests.gateway.gateway_support import child_env
from tests.services import free_port


class GatewayDown(Exception):
    """The gateway a client used cannot be reached."""


class FailFast(httpx.AsyncBaseTransport):
    """httpx's transport, raising :class:`GatewayDown` (not an httpx error, which the SDK would
    retry on the same address) when the gateway refuses connections."""

    def __init__(self) -> None:
        self._inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``; a refused connection is :class:`GatewayDown`."""
        try:
            return await self._inner.handle_async_request(request)
        except httpx.ConnectError as exc:
            raise GatewayDown(str(request.url)) from exc

    async def aclose(self) -> None:
        """Close the connections."""
        await self._inner.aclose()


def sdk_client(url: str) -> LangGraphClient:
    """The official SDK client for ``url``, with :class:`FailFast` as its transport."""
    http = httpx.AsyncClient(
        base_url=url, transport=FailFast(), timeout=httpx.Timeout(connect=5, read=300, write=300, pool=30)
    )
    return LangGraphClient(http)


@dataclass
class Stack:
    """Gateways and workers on one home, PostgreSQL database and Redis; logs under ``root``."""

    root: Path
    database_url: str
    redis_url: str
    worker_tasks: int = 6
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)

    def _config(self, name: str, port: int, workers: int) -> Path:
        data: dict[str, Any] = {
            "home": str(self.root / "home"),
            "lead": {"model_retries": 0, "verify_rounds": 0},
            "local_model": {"profile": "standard"},
            "models": [{"name": "chaos", "use": "tests.gateway.chaos_model:ChaosModel"}],
            "checkpointer": {"type": "postgres", "url": self.database_url},
            # 40 conversations of the one local user at once: the processes' capacity is tested, not a user's share
            "gateway": {
                "port": port,
                "stream_bridge": "redis",
                "redis_url": self.redis_url,
                "max_streams_per_user": None,
            },
            "runs": {
                "workers": workers,
                "lease_seconds": 2,
                "poll_seconds": 0.2,
                "max_running_per_user": None,
                "max_queued_per_user": None,
            },
        }
        path = self.root / f"{name}.yaml"
        path.write_text(yaml.safe_dump(data))
        return path

    def _spawn(self, name: str, command: str, workers: int) -> subprocess.Popen:
        port = self.ports.setdefault(name, free_port())
        config = self._config(name, port, workers)
        with open(self.root / f"{name}.log", "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "herdsman", command, "--config", str(config)],
                cwd=self.root,
                env=child_env(),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.procs[name] = proc
        return proc

    def start_gateway(self, name: str) -> str:
        """``herdsman serve`` with ``runs.workers: 0`` (it executes nothing), on the port it had
        before if it ran already; its URL once it answers."""
        proc = self._spawn(name, "serve", 0)
        url = self.url(name)
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, f"gateway {name} exited: see {name}.log"
            assert time.monotonic() < deadline, f"gateway {name} did not start"
            try:
                if httpx.get(f"{url}/ok").status_code == 200:
                    return url
            except httpx.TransportError:
                pass
            time.sleep(0.1)

    def start_worker(self, name: str) -> subprocess.Popen:
        """``herdsman worker`` with :attr:`worker_tasks` runs at a time."""
        return self._spawn(name, "worker", self.worker_tasks)

    def url(self, name: str) -> str:
        """The URL of gateway ``name``."""
        return f"http://127.0.0.1:{self.ports[name]}"

    def kill(self, name: str) -> int:
        """SIGKILL process ``name`` and reap it; its pid."""
        proc = self.procs[name]
        proc.kill()
        proc.wait()
        return proc.pid

    def stop_all(self) -> None:
        """Terminate every process still running, then reap them (killed if they hang)."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
