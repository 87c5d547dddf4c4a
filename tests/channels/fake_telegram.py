"""A fake Telegram Bot API: getMe, getUpdates (long poll fed by the test), sendMessage, sendDocument.

Requests arrive as python-telegram-bot sends them: ``POST /bot<token>/<method>`` with form
fields (or multipart for files). Messages to chat id ``BROKEN_CHAT`` fail with Telegram's
``Bad Request: chat not found``, to test how a channel lives with API errors.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse

from tests.channels.fake_server import Call, FakeServer

TOKEN = "123456:TEST-TOKEN"
BOT = {"id": 123456, "is_bot": True, "first_name": "Herd", "username": "herd_bot"}
BROKEN_CHAT = 666


class FakeTelegram(FakeServer):
    """The Bot API at ``{url}/bot``; :meth:`send_user_message` queues an update for getUpdates."""

    def __init__(self) -> None:
        super().__init__()
        self.updates: list[dict[str, Any]] = []
        self.confirmed = 0
        self.fail_polls = 0  # the next getUpdates calls that answer 502 Bad Gateway
        self.polls = 0  # getUpdates calls (not recorded in calls: there are many)
        self._ids = itertools.count(1)
        self._message_ids = itertools.count(100)
        self.app.add_api_route("/bot{token}/{method}", self.handle, methods=["GET", "POST"])

    @property
    def base_url(self) -> str:
        """What to give python-telegram-bot as ``base_url``."""
        return f"{self.url}/bot"

    def update(self, chat_id: int, user_id: int, text: str, username: str = "alice") -> dict[str, Any]:
        """A Telegram update carrying one private text message."""
        return {
            "update_id": next(self._ids),
            "message": {
                "message_id": next(self._message_ids),
                "date": int(time.time()),
                "chat": {"id": chat_id, "type": "private"},
                "from": {"id": user_id, "is_bot": False, "first_name": username.title(), "username": username},
                "text": text,
                **(
                    {"entities": [{"type": "bot_command", "offset": 0, "length": len(text.split()[0])}]}
                    if text.startswith("/")
                    else {}
                ),
            },
        }

    def send_user_message(self, chat_id: int, user_id: int, text: str, username: str = "alice") -> None:
        """Queue a message from a user; the bot gets it on its next getUpdates."""
        with self.lock:
            self.updates.append(self.update(chat_id, user_id, text, username))

    async def handle(self, token: str, method: str, request: Request) -> JSONResponse:
        """Answer one Bot API call."""
        if token != TOKEN:
            return JSONResponse({"ok": False, "error_code": 401, "description": "Unauthorized"}, status_code=401)
        params: dict[str, Any] = {}
        files: dict[str, tuple[str, bytes]] = {}
        if "json" in request.headers.get("content-type", ""):
            params = await request.json()
        else:
            form = await request.form()
            for key, value in form.multi_items():
                if hasattr(value, "read"):
                    files[key] = (value.filename or "", await value.read())
                else:
                    params[key] = value
        if method == "getUpdates":
            self.polls += 1
        else:
            self.record(Call(method, params, files))
        return JSONResponse(await self.answer(method, params, files))

    async def answer(self, method: str, params: dict[str, Any], files: dict[str, tuple[str, bytes]]) -> dict[str, Any]:
        """The Bot API's answer to ``method``."""
        if method == "getMe":
            return {"ok": True, "result": BOT}
        if method in ("deleteWebhook", "setWebhook"):
            return {"ok": True, "result": True}
        if method == "getUpdates":
            if self.fail_polls > 0:
                self.fail_polls -= 1
                return {"ok": False, "error_code": 502, "description": "Bad Gateway"}
            return {
                "ok": True,
                "result": await self.poll(int(params.get("offset") or 0), float(params.get("timeout") or 0)),
            }
        if method in ("sendMessage", "sendDocument"):
            chat_id = int(params["chat_id"])
            if chat_id == BROKEN_CHAT:
                return {"ok": False, "error_code": 400, "description": "Bad Request: chat not found"}
            message = {
                "message_id": next(self._message_ids),
                "date": int(time.time()),
                "chat": {"id": chat_id, "type": "private"},
                "from": BOT,
            }
            if method == "sendMessage":
                message["text"] = params.get("text", "")
            else:
                name = next(iter(files.values()))[0] if files else "file"
                message["document"] = {"file_id": "f1", "file_unique_id": "u1", "file_name": name}
            return {"ok": True, "result": message}
        return {"ok": False, "error_code": 404, "description": f"Not Found: method {method}"}

    async def poll(self, offset: int, timeout: float) -> list[dict[str, Any]]:
        """Unconfirmed updates from ``offset`` on, waiting up to ``timeout`` (at most 1 s) for one."""
        deadline = time.monotonic() + min(timeout, 1.0)
        while True:
            with self.lock:
                self.confirmed = max(self.confirmed, offset)  # like Telegram: an offset confirms earlier updates
                ready = [u for u in self.updates if u["update_id"] >= self.confirmed]
            if ready or time.monotonic() >= deadline:
                return ready
            await asyncio.sleep(0.02)
