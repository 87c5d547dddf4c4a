"""A local stand-in for a model provider's API: ``GET /v1/models`` in OpenAI's and Anthropic's
shapes, answering 401 unless the request carries the expected key (Bearer or x-api-key)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODELS = ("fake-large", "fake-small")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        server: FakeProvider = self.server  # type: ignore[assignment]
        server.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
        if self.path.split("?")[0] != "/v1/models":
            return self._send(404, {"error": {"message": "not found"}})
        anthropic = "anthropic-version" in self.headers  # its client sends x-api-key, or a Bearer token
        given = self.headers.get("x-api-key") or self.headers.get("Authorization", "").removeprefix("Bearer ")
        if given != server.key:
            return self._send(401, {"error": {"type": "authentication_error", "message": "invalid x-api-key"}})
        if anthropic:
            data = [{"id": m, "type": "model", "display_name": m, "created_at": "2026-01-01T00:00:00Z"} for m in MODELS]
            return self._send(200, {"data": data, "has_more": False, "first_id": MODELS[0], "last_id": MODELS[-1]})
        return self._send(
            200,
            {"object": "list", "data": [{"id": m, "object": "model", "created": 0, "owned_by": "t"} for m in MODELS]},
        )

    def _send(self, status: int, body: dict) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


class FakeProvider(ThreadingHTTPServer):
    """The server; ``key`` is the one API key it accepts, ``requests`` what it was asked."""

    daemon_threads = True

    def __init__(self, key: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.key = key
        self.requests: list[tuple[str, dict]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@contextmanager
def fake_provider(key: str = "sk-good") -> Iterator[FakeProvider]:
    """A running :class:`FakeProvider` on a loopback port."""
    server = FakeProvider(key)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
