"""A fake Discord: the REST API (``/api/v10``) and the gateway websocket discord.py connects to.

The gateway says HELLO, takes IDENTIFY, answers READY, acknowledges heartbeats, and sends the
MESSAGE_CREATE events a test queues with :meth:`FakeDiscord.send_user_message`. Messages are
sent uncompressed (text frames), which discord.py accepts. Posting to ``BROKEN_CHANNEL`` fails
with Discord's 403 ``Missing Access``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from datetime import UTC, datetime
from typing import Any

from fastapi import Request, WebSocket
from fastapi.responses import JSONResponse

from tests.channels.fake_server import Call, FakeServer, pump

TOKEN = "discord-test-token"
BOT = {
    "id": "1000",
    "username": "herd",
    "discriminator": "0",
    "avatar": None,
    "bot": True,
    "global_name": None,
    "flags": 0,
    "verified": True,
    "mfa_enabled": False,
}
BROKEN_CHANNEL = 666


def now() -> str:
    """An ISO timestamp as Discord writes them."""
    return datetime.now(UTC).isoformat()


class FakeDiscord(FakeServer):
    """REST under ``{url}/api/v10``, the gateway at ``ws://.../gateway``."""

    def __init__(self) -> None:
        super().__init__()
        self._ids = itertools.count(5000)
        self._seq = itertools.count(1)
        self.identified: list[dict[str, Any]] = []
        self._outbox: asyncio.Queue | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.app.add_api_route("/api/v10/users/@me", self.me, methods=["GET"])
        self.app.add_api_route("/api/v10/gateway/bot", self.gateway_bot, methods=["GET"])
        self.app.add_api_route("/api/v10/oauth2/applications/@me", self.application, methods=["GET"])
        self.app.add_api_route("/api/v10/channels/{channel_id}/messages", self.create_message, methods=["POST"])
        self.app.add_api_websocket_route("/gateway", self.gateway)
        self.app.add_api_route("/{path:path}", self.unknown, methods=["GET", "POST", "PUT", "PATCH", "DELETE"])

    @property
    def base_url(self) -> str:
        """What to give the channel as ``base_url``."""
        return f"{self.url}/api/v10"

    def _authorized(self, request: Request) -> bool:
        return request.headers.get("authorization") == f"Bot {TOKEN}"

    async def unknown(self, path: str, request: Request) -> JSONResponse:
        """Any other route: recorded, and Discord's 404."""
        self.record(Call("unknown", {"method": request.method, "path": path}))
        return JSONResponse({"message": "404: Not Found", "code": 0}, status_code=404)

    async def me(self, request: Request) -> JSONResponse:
        """GET /users/@me (discord.py's login)."""
        if not self._authorized(request):
            return JSONResponse({"message": "401: Unauthorized", "code": 0}, status_code=401)
        return JSONResponse(BOT)

    async def application(self, request: Request) -> JSONResponse:
        """GET /oauth2/applications/@me (also part of discord.py's login)."""
        owner = {"id": "1", "username": "owner", "discriminator": "0", "avatar": None, "global_name": None}
        return JSONResponse(
            {
                "id": BOT["id"],
                "name": "Herd",
                "description": "",
                "icon": None,
                "bot_public": False,
                "bot_require_code_grant": False,
                "owner": owner,
                "verify_key": "00",
                "flags": 0,
            }
        )

    async def gateway_bot(self, request: Request) -> JSONResponse:
        """GET /gateway/bot: where the websocket is."""
        ws_url = self.url.replace("http://", "ws://") + "/gateway"
        return JSONResponse(
            {
                "url": ws_url,
                "shards": 1,
                "session_start_limit": {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1},
            }
        )

    async def create_message(self, channel_id: int, request: Request) -> JSONResponse:
        """POST /channels/{id}/messages, JSON or multipart (payload_json + files[n])."""
        files: dict[str, tuple[str, bytes]] = {}
        if "multipart" in request.headers.get("content-type", ""):
            form = await request.form()
            params = json.loads(str(form.get("payload_json") or "{}"))
            for key, value in form.multi_items():
                if hasattr(value, "read"):
                    files[key] = (value.filename or "", await value.read())
        else:
            params = await request.json()
        self.record(Call("create_message", {"channel_id": channel_id, **params}, files))
        if channel_id == BROKEN_CHANNEL:
            return JSONResponse({"message": "Missing Access", "code": 50001}, status_code=403)
        attachments = [
            {
                "id": str(next(self._ids)),
                "filename": name,
                "size": len(data),
                "url": "http://x/y",
                "proxy_url": "http://x/y",
            }
            for name, data in files.values()
        ]
        return JSONResponse(self.message(channel_id, BOT, params.get("content") or "", attachments))

    def message(
        self, channel_id: int, author: dict[str, Any], content: str, attachments: list | None = None
    ) -> dict[str, Any]:
        """A Discord message object."""
        return {
            "id": str(next(self._ids)),
            "channel_id": str(channel_id),
            "author": author,
            "content": content,
            "timestamp": now(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": attachments or [],
            "embeds": [],
            "pinned": False,
            "type": 0,
        }

    def send_user_message(
        self, channel_id: int, user_id: int, text: str, username: str = "alice", guild_id: int | None = None
    ) -> None:
        """Deliver a MESSAGE_CREATE over the gateway (a DM unless ``guild_id``)."""
        author = {
            "id": str(user_id),
            "username": username,
            "discriminator": "0",
            "avatar": None,
            "global_name": username,
        }
        data = self.message(channel_id, author, text)
        if guild_id is not None:
            data["guild_id"] = str(guild_id)
        assert self._loop is not None and self._outbox is not None, "the bot has not connected to the gateway"
        self._loop.call_soon_threadsafe(self._outbox.put_nowait, ("MESSAGE_CREATE", data))

    def connected(self) -> bool:
        """Whether the bot has identified on the gateway."""
        return bool(self.identified)

    async def gateway(self, ws: WebSocket) -> None:
        """The gateway: HELLO, IDENTIFY -> READY, heartbeats, queued dispatches."""
        await ws.accept()
        self._loop, self._outbox = asyncio.get_running_loop(), asyncio.Queue()
        await ws.send_text(json.dumps({"op": 10, "d": {"heartbeat_interval": 30000}, "s": None, "t": None}))

        async def read() -> None:
            while True:
                payload = json.loads(await ws.receive_text())
                if payload["op"] == 1:
                    await ws.send_text(json.dumps({"op": 11, "d": None, "s": None, "t": None}))
                elif payload["op"] == 2:
                    self.identified.append(payload["d"])
                    ready = {
                        "v": 10,
                        "user": BOT,
                        "guilds": [],
                        "session_id": "session-1",
                        "private_channels": [],
                        "resume_gateway_url": self.url.replace("http://", "ws://") + "/gateway",
                        "application": {"id": BOT["id"], "flags": 0},
                        "relationships": [],
                    }
                    await self._outbox.put(("READY", ready))  # type: ignore[union-attr]

        async def write() -> None:
            while True:
                event, data = await self._outbox.get()  # type: ignore[union-attr]
                await ws.send_text(json.dumps({"op": 0, "t": event, "s": next(self._seq), "d": data}))

        await pump(read, write)
