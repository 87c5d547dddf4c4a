"""Which web tools can work here: a quick, cached check that their endpoints are reachable.

A tool that cannot work should not be offered: on a machine without internet access a small
model given ``web_fetch`` invents a URL, fetches it twice, fails, and ends with a plan instead of
an answer. So when an agent is built, ``web_search`` is kept only if its provider's host accepts
a connection, and ``web_fetch`` only if the internet does (a TLS handshake, certificate verified,
with a well-known anycast address: no DNS needed, and a network that accepts every TCP connection,
as some sandboxes' do, does not pass for the internet) or ``web.allow_networks`` names networks
the user wants fetched. An https endpoint is checked with a verified TLS handshake, an http one
(a self-hosted search instance) with a TCP connection.
Each answer is cached for ``TTL_SECONDS`` per process, and the check is bounded to about a
second and a half, so building agents stays cheap. ``context.hide_unavailable_tools: false``
turns it off.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from urllib.parse import urlsplit

from herdsman.logs import get_logger

log = get_logger(__name__)

TTL_SECONDS = 600.0
TIMEOUT_SECONDS = 1.5
INTERNET_PROBES: tuple[tuple[str, int, bool], ...] = (
    ("1.1.1.1", 443, True),
    ("8.8.8.8", 443, True),
    ("9.9.9.9", 443, True),
)

Endpoint = tuple[str, int, bool]
"""(host, port, tls): tls asks for a verified TLS handshake, not just a TCP connection."""

_cache: dict[Endpoint, tuple[float, bool]] = {}
_lock = threading.Lock()


def _connect(host: str, port: int, tls: bool) -> bool:
    try:
        with socket.create_connection((host, port), timeout=TIMEOUT_SECONDS) as sock:
            if tls:
                context = ssl.create_default_context()
                with context.wrap_socket(sock, server_hostname=host):
                    pass
            return True
    except (OSError, ssl.SSLError, ValueError):
        return False


def any_reachable(endpoints: tuple[Endpoint, ...]) -> bool:
    """Whether any of ``endpoints`` accepts a TCP connection within the time bound (cached).

    Name lookups run in the probing (daemon) threads too, so a resolver that hangs costs the
    bound, not its own timeout, and never delays the process's exit.
    """
    now = time.monotonic()
    with _lock:
        cached = [_cache[e][1] for e in endpoints if e in _cache and now - _cache[e][0] < TTL_SECONDS]
    if any(cached) or (cached and len(cached) == len(endpoints)):
        return any(cached)
    results: dict[Endpoint, bool] = {}
    answered = threading.Event()

    def probe(endpoint: Endpoint) -> None:
        results[endpoint] = _connect(*endpoint)
        if results[endpoint] or len(results) == len(endpoints):
            answered.set()

    # Daemon threads: a name lookup that hangs (a resolver that does not answer can take tens of
    # seconds) must neither hold up the caller past the bound nor keep the process from exiting.
    for endpoint in endpoints:
        threading.Thread(target=probe, args=(endpoint,), name="herdsman-probe", daemon=True).start()
    answered.wait(TIMEOUT_SECONDS + 0.2)
    results = dict(results)
    with _lock:
        for endpoint in endpoints:
            _cache[endpoint] = (now, results.get(endpoint, False))
    reachable = any(results.values())
    log.info("reachability_checked", endpoints=[f"{h}:{p}" for h, p, _ in endpoints], reachable=reachable)
    return reachable


def endpoint_of(url: str) -> Endpoint | None:
    """(host, port, tls) of an http(s) URL, or None."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    tls = parts.scheme == "https"
    return parts.hostname, parts.port or (443 if tls else 80), tls


def internet_reachable() -> bool:
    """Whether this machine reaches the internet (any of a few anycast DNS servers on 443)."""
    return any_reachable(INTERNET_PROBES)


def clear_cache() -> None:
    """Forget every cached answer (tests, or after the network changed)."""
    with _lock:
        _cache.clear()
