"""The preview origin: a second listener beside the gateway that serves only preview content.

Agent-written pages must never run on the gateway's origin, where the web UI keeps the user's
API key and every request may call ``/api`` as the user. So they are served by a listener of
their own (``gateway.preview_origin``: loopback, the gateway's port + 1 by default, 2027), a
different origin to the browser, whose only routes are::

    /t/{token}/preview/{thread_id}/files/{path}     a file of the thread's outputs or workspace
    /t/{token}/preview/{thread_id}/{port}/{path}    a server listening in the thread's sandbox (HTTP, WebSocket)

Nothing else answers there (404): no API, no web UI, no API key accepted. The ``token``
(``tokens.py``) is bound to the thread, the user and an expiry; the gateway issues it to the
thread's owner (``POST /api/threads/{id}/preview/token``). Each request also checks that the
thread still exists and is the token's user's (a deleted thread's preview answers 404 at once).
The token sits in the path so that a page's relative links carry it; every answer carries the
sandboxing headers of ``policy.py``.

The listener is a second uvicorn server on the gateway's event loop, started and stopped by
the app's lifespan; uvicorn's signal handling is left to the main server.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import socket
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import uvicorn
from fastapi import FastAPI, HTTPException, Request, WebSocket
from fastapi.responses import JSONResponse, RedirectResponse, Response

from herdsman.config.schema import GatewayConfig
from herdsman.logs import get_logger
from herdsman_gateway.auth import owns
from herdsman_gateway.body_limit import BodyLimit
from herdsman_gateway.preview import policy
from herdsman_gateway.preview.files import file_response
from herdsman_gateway.preview.ports import relay, relay_websocket
from herdsman_gateway.preview.tokens import InvalidToken, PreviewTokens
from herdsman_gateway.routes.threads import not_found

log = get_logger(__name__)

# connections the preview listener serves at once (each relay holds two sockets); past it 503, so
# a page opening sockets in a loop cannot use up the gateway process's file descriptors
MAX_CONNECTIONS = 256
RELAYED_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
NOT_HERE = (
    "This is Herdsman's preview origin: it serves only preview links "
    "(/t/<token>/preview/<thread>/...), issued by POST /api/threads/<thread>/preview/token on the gateway."
)


class _QuietServer(uvicorn.Server):
    """A uvicorn server that leaves signals to the main one (it runs on the same loop)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:  # uvicorn >= 0.29
        yield

    def install_signal_handlers(self) -> None:  # older uvicorn
        return None


class PreviewOrigin:
    """The preview listener of one gateway: its tokens, its address, its app."""

    def __init__(self, config: GatewayConfig, gateway: Callable[[], Any], secret: bytes | None = None) -> None:
        self.config = config.preview_origin
        self._gateway_port = config.port
        self.request_bytes = config.max_request_bytes
        self.tokens = PreviewTokens(self.config.token_seconds, secret)
        self.gateway = gateway
        self.url: str | None = None
        self.app = build_origin_app(self)
        self._server: _QuietServer | None = None
        self._task: asyncio.Task | None = None
        self._sock: socket.socket | None = None

    def bind(self) -> socket.socket:
        """The listening socket: ``port``, else the gateway's port + 1, else (taken) a free one."""
        host, port = self.config.host, self.config.port
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        candidates = [port] if port is not None else [self._gateway_port + 1 if self._gateway_port else 0, 0]
        for i, candidate in enumerate(candidates):
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((host, candidate))
            except OSError as exc:
                sock.close()
                if exc.errno == errno.EADDRINUSE and i + 1 < len(candidates):
                    log.warning("preview_port_taken", port=candidate, detail="using a free port instead")
                    continue
                raise OSError(
                    exc.errno,
                    f"gateway.preview_origin: cannot listen on {host}:{candidate} ({exc.strerror}); "
                    "set gateway.preview_origin.port to a free port, 0 for any",
                ) from None
            sock.listen(128)
            return sock
        raise AssertionError("unreachable")

    async def start(self) -> None:
        """Listen and serve in the background on this loop."""
        self._sock = self.bind()
        host, port = self._sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        self.url = (self.config.public_url or f"http://{shown}:{port}").rstrip("/")
        config = uvicorn.Config(
            self.app, log_level="warning", lifespan="off", access_log=False, limit_concurrency=MAX_CONNECTIONS
        )
        self._server = _QuietServer(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[self._sock]), name="preview-origin")
        while not self._server.started and not self._task.done():
            await asyncio.sleep(0.01)
        if self._task.done():
            self._task.result()
        log.info("preview_origin_ready", url=self.url)

    async def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            await asyncio.gather(self._task, return_exceptions=True)
        if self._sock is not None:
            self._sock.close()

    def origin_for(self, browser_host: str | None) -> str:
        """The preview origin as the browser that reached the gateway at ``browser_host`` reaches
        it: ``public_url``, else this listener's address, or, when it listens on every address
        (0.0.0.0, ::), the browser's host name with the listener's port."""
        assert self.url is not None and self._sock is not None
        if self.config.public_url or self.config.host not in ("0.0.0.0", "::", "") or not browser_host:
            return self.url
        shown = f"[{browser_host}]" if ":" in browser_host else browser_host
        return f"http://{shown}:{self._sock.getsockname()[1]}"

    def link(self, thread_id: str, user: str | None, browser_host: str | None = None) -> dict[str, Any]:
        """A fresh preview link of ``thread_id`` for ``user`` (the caller checked ownership)."""
        token, expires = self.tokens.issue(thread_id, user)
        origin = self.origin_for(browser_host)
        base = f"{origin}/t/{token}/preview/{thread_id}"
        return {
            "token": token,
            "expires_at": expires,
            "base_url": base,
            "files_url": f"{base}/files/",
            "origin": origin,
        }

    async def authorize(self, token: str, thread_id: str) -> str | None:
        """The user a request on the preview origin acts for; 403 for a bad token, 404 when the
        thread is gone or no longer the token's user's."""
        try:
            grant = self.tokens.check(token, thread_id)
        except InvalidToken as exc:
            raise HTTPException(403, f"{exc}; reopen the preview from the web UI for a fresh link") from None
        record = await self.gateway().threads.get(thread_id)
        if record is None or not owns(record.metadata, grant.user):
            raise not_found(thread_id)
        return grant.user


async def port_socket(origin: PreviewOrigin, thread_id: str, port: int, user: str | None) -> Callable[[], Any]:
    """What connects to ``port`` in the thread's sandbox (a blocking call; the sandbox acquired on
    ``user``'s file pool slots); 403 for a port outside ``sandbox.preview.ports``, 501 for a
    provider without port preview."""
    gw = origin.gateway()
    ports = gw.config.sandbox.preview
    if not ports.allows(port):
        raise HTTPException(403, f"Port {port} cannot be shown: it is not in sandbox.preview.ports ({ports.ports})")
    connect = getattr(await gw.sandbox_of(thread_id, user), "preview_connection", None)
    if connect is None:
        raise HTTPException(501, f"Port {port} cannot be shown: this sandbox provider has no port preview")
    return partial(connect, port)


def build_origin_app(origin: PreviewOrigin) -> FastAPI:
    """The preview origin's app: the preview routes and a 404 for everything else."""
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    limit = origin.request_bytes
    app.add_middleware(BodyLimit, limit=limit, uploads_limit=limit, uploads_detail="")

    @app.exception_handler(HTTPException)
    async def _error(request: Request, exc: HTTPException) -> Response:
        return JSONResponse({"detail": exc.detail}, exc.status_code, headers=policy.origin_headers())

    @app.get("/t/{token}/preview/{thread_id}/files/{path:path}")
    async def preview_file(token: str, thread_id: str, path: str) -> Response:
        user = await origin.authorize(token, thread_id)
        sandbox = await origin.gateway().sandbox_of(thread_id, user)
        return await file_response(sandbox, path, user, policy.origin_headers())

    @app.get("/t/{token}/preview/{thread_id}/{port}")
    async def port_root(token: str, thread_id: str, port: int) -> Response:
        return RedirectResponse(f"/t/{token}/preview/{thread_id}/{port}/", 307, headers=policy.origin_headers())

    @app.api_route("/t/{token}/preview/{thread_id}/{port}/{path:path}", methods=RELAYED_METHODS)
    async def preview_port(request: Request, token: str, thread_id: str, port: int, path: str) -> Response:
        user = await origin.authorize(token, thread_id)
        prefix = f"/t/{token}/preview/{thread_id}/{port}"
        return await relay(request, await port_socket(origin, thread_id, port, user), user, port, path, prefix)

    @app.websocket("/t/{token}/preview/{thread_id}/{port}/{path:path}")
    async def preview_port_socket(websocket: WebSocket, token: str, thread_id: str, port: int, path: str) -> None:
        try:
            user = await origin.authorize(token, thread_id)
            connect = await port_socket(origin, thread_id, port, user)
        except HTTPException as exc:
            await websocket.close(code=1008, reason=str(exc.detail)[:120])
            return
        await relay_websocket(websocket, connect, user, port, path)

    @app.api_route("/{rest:path}", methods=RELAYED_METHODS, include_in_schema=False)
    async def elsewhere(rest: str) -> Response:
        return JSONResponse({"detail": NOT_HERE}, 404, headers=policy.origin_headers())

    return app
