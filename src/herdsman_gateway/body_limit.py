"""Request bodies are bounded: ``gateway.max_request_bytes`` on every route, a larger bound on uploads.

Without a bound, any client, even one without a key, could make the gateway hold a body of any
size: FastAPI reads a route's JSON body whole before its dependencies (the API-key check among
them) run, and the thread protocol's commands are read whole too. A body whose declared
``Content-Length`` is over the bound is refused at once, unread; a body sent without one
(chunked) is counted as it arrives and refused as soon as it passes the bound, so no more than
the bound is ever held. The answer is the gateway's JSON 413, naming the limit and what to do.

Written by hand (a pure ASGI middleware, as ``rate_limit.py``): Starlette's and FastAPI's own
``max_body_size`` (``starlette.middleware.body_limit``) answers a plain-text "Content Too Large"
that names neither the limit nor the config key, and replaces any other answer, the gateway's
JSON errors included, whenever the declared length is over it.
"""

from __future__ import annotations

import re

import orjson
from fastapi import HTTPException
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from herdsman.logs import get_logger

log = get_logger(__name__)

UPLOADS_PATH = re.compile(r"^/api/threads/[^/]+/uploads/?$")


def too_large_detail(limit: int) -> str:
    """What a client that sent a body over ``limit`` bytes is told."""
    return (
        f"Request body too large: the limit is {limit} bytes (gateway.max_request_bytes in config.yaml); send a "
        "smaller body, and files through POST /api/threads/{thread_id}/uploads"
    )


class BodyLimit:
    """Pure ASGI middleware: ``app.add_middleware(BodyLimit, limit=..., uploads_limit=..., uploads_detail=...)``."""

    def __init__(self, app: ASGIApp, limit: int, uploads_limit: int, uploads_detail: str) -> None:
        """Wrap ``app``: bodies of at most ``limit`` bytes, ``uploads_limit`` on the uploads route
        (which streams its body to disk), refused past it with ``uploads_detail``."""
        self.app = app
        self.limit = limit
        self.uploads_limit = uploads_limit
        self.uploads_detail = uploads_detail

    def limit_for(self, path: str) -> tuple[int, str]:
        """The body bound of ``path`` and what a body over it is told."""
        if UPLOADS_PATH.match(path):
            return self.uploads_limit, self.uploads_detail
        return self.limit, too_large_detail(self.limit)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI app: a body past its limit gets 413 before the app reads it."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit, detail = self.limit_for(scope["path"])
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            log.info("request_too_large", path=scope["path"], declared=int(declared), limit=limit)
            await _refuse(send, detail)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    log.info("request_too_large", path=scope["path"], received=received, limit=limit)
                    # the route's error handling answers it; the connection closes, so the rest is never read
                    raise HTTPException(413, detail, headers={"connection": "close"})
            return message

        await self.app(scope, counted, send)


async def _refuse(send: Send, detail: str) -> None:
    body = orjson.dumps({"detail": detail})
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
