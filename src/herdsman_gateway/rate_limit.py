"""Requests per API key: ``gateway.rate_limit`` at the gateway, before any route runs.

The counting is the ``limits`` library's (moving windows, in memory or in Redis); this module
only decides who a request is and answers 429. Who: a configured API key the request presents
(read as the auth module reads it: the first of repeated headers), as the stable user id derived
from it (never the key itself); else the client's address. So a wrong key counts against the
address it comes from, and guessing keys (a new one each time) is throttled too; ``GET /ok`` and
``GET /api/health`` (load balancer health checks) and the web UI's static files are not counted.

With ``gateway.stream_bridge: redis`` the counts live in that Redis, so several gateways behind a
load balancer enforce one limit; otherwise each process counts its own. When Redis cannot be
reached the request is let through (logged): a rate limit must not take the API down with it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import orjson
from limits import RateLimitItem, parse_many
from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.aio.strategies import MovingWindowRateLimiter
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from herdsman.config.schema import ApiKeyConfig, GatewayConfig
from herdsman.logs import get_logger
from herdsman_gateway.auth import matching_key, presented_key, user_id_for_key

log = get_logger(__name__)

UNCOUNTED_PREFIXES = ("/assets/",)
UNCOUNTED_PATHS = frozenset({"/ok", "/api/health", "/", "/index.html", "/favicon.ico"})


def limit_storage(config: GatewayConfig) -> Storage:
    """Where the counts live: the gateways' shared Redis, or this process's memory."""
    if config.stream_bridge == "redis" and config.redis_url:
        return RedisStorage("async+" + config.redis_url, implementation="redispy", key_prefix="herdsman-rate")
    return MemoryStorage()


def caller_key(scope: Scope, keys: Sequence[ApiKeyConfig] = ()) -> str:
    """Who makes the request: the user id of the configured key it presents (one of ``keys``),
    else the client address (no key, a wrong key, or auth off)."""
    key = presented_key(Headers(scope=scope))
    if key is not None and matching_key(keys, key) is not None:
        return user_id_for_key(key)
    client = scope.get("client")
    return f"addr-{client[0]}" if client else "addr-unknown"


class RateLimit:
    """Pure ASGI middleware: ``app.add_middleware(RateLimit, limits="20/second", storage=...)``."""

    def __init__(self, app: ASGIApp, limits: str, storage: Storage, keys: Sequence[ApiKeyConfig] = ()) -> None:
        """Wrap ``app``; each caller may make ``limits`` requests (``"20/second;600/minute"``);
        ``keys``: the gateway's API keys (``gateway.keys()``), each counted on its own."""
        self.app = app
        self.keys = list(keys)
        self.items: list[RateLimitItem] = parse_many(limits)
        self.limiter = MovingWindowRateLimiter(storage)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI app: a request past its user's rate gets 429."""
        if scope["type"] != "http" or scope["path"] in UNCOUNTED_PATHS or scope["path"].startswith(UNCOUNTED_PREFIXES):
            await self.app(scope, receive, send)
            return
        who = caller_key(scope, self.keys)
        try:
            refused = [item for item in self.items if not await self.limiter.hit(item, who)]
        except Exception as exc:  # noqa: BLE001 - the counter's store is down: serve rather than fail
            log.warning("rate_limit_unavailable", error=type(exc).__name__)
            refused = []
        if not refused:
            await self.app(scope, receive, send)
            return
        item = refused[0]
        try:
            reset_at, _ = await self.limiter.get_window_stats(item, who)
            retry = max(1, math.ceil(reset_at - time.time()))
        except Exception:  # noqa: BLE001 - the window is unknown: one period is a safe answer
            retry = item.get_expiry()
        log.info("rate_limited", caller=who, limit=str(item), path=scope["path"])
        body = orjson.dumps(
            {
                "detail": f"Too many requests: this API key (or address) may make {item.amount} per "
                f"{item.multiples} {item.GRANULARITY.name}; retry after {retry} s (gateway.rate_limit)",
            }
        )
        await send(
            {
                "type": "http.response.start",
                "status": 429,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"retry-after", str(retry).encode()),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
