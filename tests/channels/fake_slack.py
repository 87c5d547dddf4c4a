"""A fake Slack Web API (auth.test, chat.postMessage, the files_upload_v2 calls) and signed events.

``slack_sdk``'s ``AsyncWebClient(base_url=fake.base_url)`` talks to it. Posting to channel
``BROKEN_CHANNEL`` fails with Slack's ``channel_not_found``. :func:`signed_headers` signs a
request body the way Slack does, for POSTs to the gateway's Events API route.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
import uuid
from typing import Any
from urllib.parse import parse_qsl

from fastapi import Request, WebSocket
from fastapi.responses import JSONResponse, PlainTextResponse
from slack_sdk.signature import SignatureVerifier

from tests.channels.fake_server import Call, FakeServer, pump

BOT_TOKEN = "xoxb-test-token"
APP_TOKEN = "xapp-test-token"
SIGNING_SECRET = "signing-secret-for-tests"
BOT_USER = "UBOT"
BROKEN_CHANNEL = "CBROKEN"


def signed_headers(
    body: bytes | str, secret: str = SIGNING_SECRET, content_type: str = "application/json"
) -> dict[str, str]:
    """The headers Slack sends with ``body``: a timestamp and its v0 signature."""
    timestamp = str(int(time.time()))
    text = body.decode() if isinstance(body, bytes) else body
    signature = SignatureVerifier(secret).generate_signature(timestamp=timestamp, body=text)
    return {"X-Slack-Request-Timestamp": timestamp, "X-Slack-Signature": signature or "", "content-type": content_type}


def message_event(
    channel: str,
    user: str,
    text: str,
    thread_ts: str | None = None,
    *,
    kind: str = "message",
    bot_id: str | None = None,
) -> dict[str, Any]:
    """An Events API ``event_callback`` carrying one message (``kind`` app_mention for a mention)."""
    event = {
        "type": kind,
        "channel": channel,
        "user": user,
        "text": text,
        "ts": f"{time.time():.6f}",
        "channel_type": "im" if channel.startswith("D") else "channel",
    }
    if bot_id:
        event["bot_id"] = bot_id
    if thread_ts:
        event["thread_ts"] = thread_ts
    return {
        "token": "legacy",
        "team_id": "T1",
        "api_app_id": "A1",
        "event": event,
        "type": "event_callback",
        "event_id": f"Ev{time.time_ns()}",
        "event_time": int(time.time()),
    }


class FakeSlack(FakeServer):
    """The Web API under ``{url}/api/``; uploads land at ``{url}/upload/<file id>``."""

    def __init__(self) -> None:
        super().__init__()
        self._ids = itertools.count(1)
        self.uploads: dict[str, tuple[str, bytes]] = {}
        self.app.add_api_route("/api/{method}", self.handle, methods=["GET", "POST"])
        self.app.add_api_route("/upload/{file_id}", self.upload, methods=["POST"])
        self.app.add_api_websocket_route("/socket", self.socket)
        self.acks: list[str] = []
        self._envelopes: asyncio.Queue | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def base_url(self) -> str:
        """What to give ``AsyncWebClient`` as ``base_url``."""
        return f"{self.url}/api/"

    async def handle(self, method: str, request: Request) -> JSONResponse:
        """Answer one Web API call."""
        expected = APP_TOKEN if method == "apps.connections.open" else BOT_TOKEN
        if request.headers.get("authorization") != f"Bearer {expected}":
            return JSONResponse({"ok": False, "error": "invalid_auth"})
        raw = await request.body()
        if "json" in request.headers.get("content-type", ""):
            params = json.loads(raw or b"{}")
        else:
            params = dict(parse_qsl(raw.decode())) | dict(request.query_params)
        self.record(Call(method, params))
        return JSONResponse(self.answer(method, params))

    def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The Web API's answer to ``method``."""
        if method == "auth.test":
            return {
                "ok": True,
                "url": "https://herd.slack.com/",
                "team": "Herd",
                "user": "herd",
                "team_id": "T1",
                "user_id": BOT_USER,
                "bot_id": "BBOT",
            }
        if method == "apps.connections.open":
            return {"ok": True, "url": self.url.replace("http://", "ws://") + "/socket"}
        if method == "chat.postMessage":
            if params.get("channel") == BROKEN_CHANNEL:
                return {"ok": False, "error": "channel_not_found"}
            return {
                "ok": True,
                "channel": params.get("channel"),
                "ts": f"{time.time():.6f}",
                "message": {"text": params.get("text"), "user": BOT_USER},
            }
        if method == "files.getUploadURLExternal":
            file_id = f"F{next(self._ids)}"
            self.uploads[file_id] = (params.get("filename", ""), b"")
            return {"ok": True, "upload_url": f"{self.url}/upload/{file_id}", "file_id": file_id}
        if method == "files.completeUploadExternal":
            files = json.loads(params.get("files") or "[]")
            return {"ok": True, "files": [{"id": f["id"], "title": f.get("title", "")} for f in files]}
        return {"ok": False, "error": "unknown_method"}

    async def upload(self, file_id: str, request: Request) -> PlainTextResponse:
        """The upload URL: keeps the bytes of the file (raw body or a multipart ``file``)."""
        name = self.uploads.get(file_id, ("", b""))[0]
        if "multipart" in request.headers.get("content-type", ""):
            form = await request.form()
            data = await form["file"].read()  # type: ignore[union-attr]
        else:
            data = await request.body()
        self.uploads[file_id] = (name, data)
        self.record(Call("upload", {"file_id": file_id, "filename": name}, {"file": (name, data)}))
        return PlainTextResponse(f"OK - {len(data)}")

    # -- Socket Mode ----------------------------------------------------------------------

    def connected(self) -> bool:
        """Whether a Socket Mode client is connected."""
        return self._envelopes is not None

    def push_event(self, payload: dict[str, Any]) -> str:
        """Send an Events API payload over the Socket Mode websocket; returns its envelope id."""
        assert self._loop is not None and self._envelopes is not None, "no Socket Mode client connected"
        envelope = {
            "envelope_id": str(uuid.uuid4()),
            "type": "events_api",
            "accepts_response_payload": False,
            "retry_attempt": 0,
            "retry_reason": "",
            "payload": payload,
        }
        self._loop.call_soon_threadsafe(self._envelopes.put_nowait, envelope)
        return envelope["envelope_id"]

    async def socket(self, ws: WebSocket) -> None:
        """The Socket Mode websocket: hello, then queued envelopes; acks are recorded."""
        await ws.accept()
        self._loop, self._envelopes = asyncio.get_running_loop(), asyncio.Queue()
        await ws.send_text(
            json.dumps(
                {
                    "type": "hello",
                    "num_connections": 1,
                    "debug_info": {"host": "fake"},
                    "connection_info": {"app_id": "A1"},
                }
            )
        )

        async def read() -> None:
            while True:
                message = json.loads(await ws.receive_text())
                if "envelope_id" in message:
                    with self.lock:
                        self.acks.append(message["envelope_id"])

        async def write() -> None:
            while True:
                await ws.send_text(json.dumps(await self._envelopes.get()))  # type: ignore[union-attr]

        await pump(read, write)
