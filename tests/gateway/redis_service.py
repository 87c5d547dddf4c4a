"""A throwaway redis-server for tests, on a free loopback port, with persistence off."""

from __future__ import annotations

import ctypes
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import redis

from tests.services import free_port


def _die_with_parent() -> None:
    """In the child: get SIGTERM when the test process dies, even if it crashes (Linux)."""
    try:
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class RedisProcess:
    """A redis-server on a fixed free port that a test may stop and start again (empty: no
    persistence), as a Redis that restarted or failed over."""

    def __init__(self, binary: str) -> None:
        self.binary = binary
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        """Start the server and wait until it answers."""
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=_die_with_parent,
        )
        client = redis.Redis.from_url(self.url)
        try:
            for _ in range(500):
                try:
                    client.ping()
                    return
                except redis.ConnectionError:
                    assert self.proc.poll() is None, "redis-server exited at start"
                    time.sleep(0.02)
            raise AssertionError(f"redis-server on port {self.port} did not answer in 10 s")
        finally:
            client.close()

    def stop(self) -> None:
        """Stop the server (what it held is gone)."""
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None


@contextmanager
def redis_process() -> Iterator[RedisProcess]:
    """A started :class:`RedisProcess`, stopped at the end; skip the test when redis-server is
    not installed."""
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not shutil.which(binary):
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    server = RedisProcess(binary)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def redis_server() -> Iterator[str]:
    """Start redis-server and yield its URL; skip the test when redis-server is not installed."""
    with redis_process() as server:
        yield server.url
