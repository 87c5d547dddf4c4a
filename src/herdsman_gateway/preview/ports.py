"""Relay HTTP from the preview origin to a server listening inside a thread's sandbox.

``/t/{token}/preview/{thread}/{port}/{path}`` becomes ``GET /{path}`` on ``127.0.0.1:{port}`` *of
the sandbox's own network*: the sandbox hands out the connection
(:meth:`~herdsman.sandbox.host_files.HostFilesSandbox.preview_connection`: a socket made in the
jail's or container's network namespace, see ``herdsman/sandbox/jail_ports.py`` for why it cannot be
turned around from inside, or a pod's port-forward), for a port of ``sandbox.preview.ports`` only.
httpcore speaks HTTP/1.1 over it through a network backend whose only address is that socket, so no
name or address from the request is ever dialled. Bodies stream both ways (the request's is bounded
by ``gateway.max_request_bytes``, the response is never buffered); the server's cookies, CSP and
CORS headers are dropped and the preview origin's sandboxing headers set (``policy.py``); a redirect
to the server's own root is kept under the preview prefix. One connection per request, closed when
the response ends. A WebSocket on the same path is relayed message by message (``websockets``'
client on the jail's socket), each message at most :data:`MAX_WS_MESSAGE` bytes.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpcore
from fastapi import HTTPException, Request, WebSocket
from fastapi.responses import StreamingResponse
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidHandshake
from websockets.typing import Subprotocol

from herdsman import pools
from herdsman.sandbox.base import SandboxError
from herdsman_gateway.preview import policy

CONNECT_SECONDS = 5.0
READ_SECONDS = 300.0
MAX_WS_MESSAGE = 1024 * 1024
DROPPED_REQUEST_HEADERS = frozenset(
    {
        "host",
        "cookie",
        "authorization",
        "x-api-key",
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authorization",
        "te",
        "trailer",
        "upgrade",
        "transfer-encoding",
    }
)


class _SocketStream(httpcore.AsyncNetworkStream):
    """An httpcore stream over a connected non-blocking socket, on this event loop."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            return await asyncio.wait_for(asyncio.get_running_loop().sock_recv(self._sock, max_bytes), timeout)
        except (TimeoutError, OSError) as exc:
            raise httpcore.ReadError(str(exc) or "timed out") from None

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        try:
            await asyncio.wait_for(asyncio.get_running_loop().sock_sendall(self._sock, buffer), timeout)
        except (TimeoutError, OSError) as exc:
            raise httpcore.WriteError(str(exc) or "timed out") from None

    async def aclose(self) -> None:
        self._sock.close()

    def get_extra_info(self, info: str) -> Any:
        return None


class JailBackend(httpcore.AsyncNetworkBackend):
    """Every connection is the one ``open_connection`` makes to the sandbox's port (a blocking call, run
    on the files pool), whatever host the request names."""

    def __init__(self, open_connection: Callable[[], Any], user: str | None) -> None:
        self._connect = open_connection
        self._user = user

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        """A TCP stream to the thread's port (the name is anyio's backend interface)."""
        sock = await pools.run(pools.FILES, self._user, self._connect)
        sock.setblocking(False)
        return _SocketStream(sock)

    async def sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` (anyio's backend interface)."""
        await asyncio.sleep(seconds)


def _request_headers(request: Request, port: int) -> list[tuple[bytes, bytes]]:
    headers = [(k, v) for k, v in request.headers.raw if k.decode("latin-1").lower() not in DROPPED_REQUEST_HEADERS]
    headers.insert(0, (b"host", f"127.0.0.1:{port}".encode()))
    if request.method not in ("GET", "HEAD") and b"content-length" not in {k.lower() for k, _ in headers}:
        headers.append((b"transfer-encoding", b"chunked"))
    return headers


def _relocated(value: str, prefix: str, port: int) -> str:
    """A redirect of the server to its own root, kept under the preview prefix."""
    for own in (f"http://127.0.0.1:{port}", f"http://localhost:{port}", f"http://0.0.0.0:{port}"):
        if value.startswith(own + "/") or value == own:
            value = value[len(own) :] or "/"
    if value.startswith("/") and not value.startswith("//"):
        return prefix + value
    return value


async def relay(
    request: Request, open_connection: Callable[[], Any], user: str | None, port: int, path: str, prefix: str
) -> StreamingResponse:
    """Send ``request`` to the sandbox's server on ``port`` and stream its answer back."""
    target = "/" + path + (f"?{request.url.query}" if request.url.query else "")
    pool = httpcore.AsyncConnectionPool(
        network_backend=JailBackend(open_connection, user), max_connections=1, retries=0
    )
    upstream = httpcore.Request(
        request.method,
        httpcore.URL(scheme=b"http", host=b"127.0.0.1", port=port, target=target.encode()),
        headers=_request_headers(request, port),
        content=request.stream() if request.method not in ("GET", "HEAD") else b"",
        extensions={
            "timeout": {
                "connect": CONNECT_SECONDS,
                "read": READ_SECONDS,
                "write": READ_SECONDS,
                "pool": CONNECT_SECONDS,
            }
        },
    )
    try:
        response = await pool.handle_async_request(upstream)
    except SandboxError as exc:
        await pool.aclose()
        raise HTTPException(502, f"Port {port} cannot be shown: {exc}") from None
    except httpcore.ConnectError as exc:
        await pool.aclose()
        raise HTTPException(
            502, f"Port {port} cannot be shown: nothing accepts connections on it in the sandbox ({exc})"
        ) from None
    except httpcore.TimeoutException:
        await pool.aclose()
        raise HTTPException(504, f"The server on port {port} did not answer in time") from None
    except httpcore.ProtocolError as exc:
        await pool.aclose()
        raise HTTPException(502, f"The server on port {port} did not answer HTTP ({exc})") from None

    raw = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.headers]
    headers = [(k, _relocated(v, prefix, port) if k.lower() == "location" else v) for k, v in raw]

    async def body() -> AsyncIterator[bytes]:
        try:
            async for chunk in response.aiter_stream():
                yield chunk
        finally:
            await response.aclose()
            await pool.aclose()

    answer = StreamingResponse(body(), status_code=response.status)
    answer.raw_headers = [
        (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in policy.relayed_headers(headers)
    ]
    return answer


async def relay_websocket(
    client: WebSocket, open_connection: Callable[[], Any], user: str | None, port: int, path: str
) -> None:
    """Relay a WebSocket between the browser and the sandbox's server on ``port``, message by
    message (each at most :data:`MAX_WS_MESSAGE` bytes), until either side closes."""
    query = client.url.query
    try:
        sock = await pools.run(pools.FILES, user, open_connection)
    except SandboxError as exc:
        await client.close(code=1011, reason=f"port {port}: {str(exc)[:80]}")
        return
    sock.setblocking(False)
    try:
        upstream = await connect(
            f"ws://127.0.0.1:{port}/{path}" + (f"?{query}" if query else ""),
            sock=sock,
            subprotocols=[Subprotocol(p) for p in client.scope.get("subprotocols", [])] or None,
            open_timeout=CONNECT_SECONDS,
            max_size=MAX_WS_MESSAGE,
            compression=None,
        )
    except (TimeoutError, OSError, InvalidHandshake) as exc:
        sock.close()
        await client.close(code=1011, reason=f"port {port}: {str(exc)[:80] or 'no answer'}")
        return
    await client.accept(subprotocol=upstream.subprotocol)

    async def browser_to_server() -> None:
        while True:
            message = await client.receive()
            if message["type"] == "websocket.disconnect":
                return
            data = message.get("bytes")
            await upstream.send(data if data is not None else message.get("text") or "")

    async def server_to_browser() -> None:
        async for data in upstream:
            await (client.send_bytes(data) if isinstance(data, bytes) else client.send_text(data))

    tasks = [asyncio.create_task(browser_to_server()), asyncio.create_task(server_to_browser())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await upstream.close()
        try:
            await client.close()
        except RuntimeError:
            pass  # the browser has gone already
