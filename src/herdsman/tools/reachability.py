"""Which web tools can work here: a quick, cached check that their endpoints are reachable.

A tool that cannot work should not be offered: on a machine without internet access a small
model given ``web_fetch`` invents a URL, fetches it twice, fails, and ends with a plan instead of
an answer. So when an agent is built, ``web_search`` is kept only if its provider's host accepts
a TCP connection, and ``web_fetch`` only if the internet does (a connection to a well-known
anycast address, no DNS needed) or ``web.allow_networks`` names networks the user wants fetched.
Each answer is cached for ``TTL_SECONDS`` per process, and the check is bounded to about a
second and a half, so building agents stays cheap. ``context.hide_unavailable_tools: false``
turns it off.
"""

from __future__ import annotations

import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from urllib.parse import urlsplit

import structlog

log = structlog.get_logger(__name__)

TTL_SECONDS = 600.0
TIMEOUT_SECONDS = 1.5
INTERNET_PROBES = (("1.1.1.1", 443), ("8.8.8.8", 443), ("9.9.9.9", 443))

_cache: dict[tuple[str, int], tuple[float, bool]] = {}
_lock = threading.Lock()


def _connect(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=TIMEOUT_SECONDS):
            return True
    except OSError:
        return False


def any_reachable(endpoints: tuple[tuple[str, int], ...]) -> bool:
    """Whether any of ``endpoints`` accepts a TCP connection within the time bound (cached).

    Name lookups run in the worker threads too, so a resolver that hangs costs the bound, not
    its own timeout.
    """
    now = time.monotonic()
    with _lock:
        cached = [_cache[e][1] for e in endpoints if e in _cache and now - _cache[e][0] < TTL_SECONDS]
    if any(cached) or (cached and len(cached) == len(endpoints)):
        return any(cached)
    pool = ThreadPoolExecutor(max_workers=len(endpoints))
    futures = {pool.submit(_connect, host, port): (host, port) for host, port in endpoints}
    done, _ = wait(futures, timeout=TIMEOUT_SECONDS + 0.2)
    pool.shutdown(wait=False, cancel_futures=True)
    results = {futures[f]: f.result() for f in done}
    with _lock:
        for endpoint in endpoints:
            _cache[endpoint] = (now, results.get(endpoint, False))
    reachable = any(results.values())
    log.info("reachability_checked", endpoints=[f"{h}:{p}" for h, p in endpoints], reachable=reachable)
    return reachable


def endpoint_of(url: str) -> tuple[str, int] | None:
    """(host, port) of an http(s) URL, or None."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)


def internet_reachable() -> bool:
    """Whether this machine reaches the internet (any of a few anycast DNS servers on 443)."""
    return any_reachable(INTERNET_PROBES)


def clear_cache() -> None:
    """Forget every cached answer (tests, or after the network changed)."""
    with _lock:
        _cache.clear()
