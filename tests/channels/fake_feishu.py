"""A fake Feishu/Lark Open API: tenant token, im/v1/messages, im/v1/files; and event callbacks.

lark-oapi's client, built with ``.domain(fake.url)``, talks to it. Messages to chat
``BROKEN_CHAT`` fail with a Feishu error code, to test how the channel lives with API errors.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import os
import time
from typing import Any

from Crypto.Cipher import AES
from fastapi import Request
from fastapi.responses import JSONResponse

from tests.channels.fake_server import Call, FakeServer

APP_ID, APP_SECRET = "cli_test", "secret-test"
VERIFICATION_TOKEN = "v-token"
TENANT_TOKEN = "t-tenant-token"
BROKEN_CHAT = "oc_broken"


def message_event(
    chat_id: str, open_id: str, text: str, token: str = VERIFICATION_TOKEN, event_id: str | None = None
) -> dict[str, Any]:
    """An ``im.message.receive_v1`` callback (schema 2.0) carrying one text message."""
    now = str(int(time.time() * 1000))
    return {
        "schema": "2.0",
        "header": {
            "event_id": event_id or f"ev_{time.time_ns()}",
            "token": token,
            "create_time": now,
            "event_type": "im.message.receive_v1",
            "tenant_key": "tenant",
            "app_id": APP_ID,
        },
        "event": {
            "sender": {
                "sender_id": {"open_id": open_id, "user_id": open_id.removeprefix("ou_"), "union_id": "on_1"},
                "sender_type": "user",
                "tenant_key": "tenant",
            },
            "message": {
                "message_id": f"om_{time.time_ns()}",
                "chat_id": chat_id,
                "chat_type": "p2p",
                "message_type": "text",
                "content": json.dumps({"text": text}),
                "create_time": now,
            },
        },
    }


def encrypted(payload: dict[str, Any], encrypt_key: str) -> tuple[bytes, dict[str, str]]:
    """``payload`` encrypted and signed as Feishu does with an encrypt key: (body, headers)."""
    plain = json.dumps(payload).encode()
    pad = 16 - len(plain) % 16
    iv = os.urandom(16)
    cipher = AES.new(hashlib.sha256(encrypt_key.encode()).digest(), AES.MODE_CBC, iv)
    body = json.dumps({"encrypt": base64.b64encode(iv + cipher.encrypt(plain + bytes([pad]) * pad)).decode()}).encode()
    timestamp, nonce = str(int(time.time())), "nonce-1"
    signature = hashlib.sha256((timestamp + nonce + encrypt_key).encode() + body).hexdigest()
    headers = {
        "X-Lark-Request-Timestamp": timestamp,
        "X-Lark-Request-Nonce": nonce,
        "X-Lark-Signature": signature,
        "content-type": "application/json",
    }
    return body, headers


class FakeFeishu(FakeServer):
    """The Open API under ``{url}/open-apis``."""

    def __init__(self) -> None:
        super().__init__()
        self._ids = itertools.count(1)
        self.app.add_api_route("/open-apis/{path:path}", self.handle, methods=["GET", "POST"])

    async def handle(self, path: str, request: Request) -> JSONResponse:
        """Answer one Open API call."""
        if path == "auth/v3/tenant_access_token/internal":
            body = await request.json()
            ok = body.get("app_id") == APP_ID and body.get("app_secret") == APP_SECRET
            self.record(Call("tenant_access_token", body))
            if not ok:
                return JSONResponse({"code": 10014, "msg": "app secret invalid"}, status_code=400)
            return JSONResponse({"code": 0, "msg": "ok", "tenant_access_token": TENANT_TOKEN, "expire": 7200})
        if request.headers.get("authorization") != f"Bearer {TENANT_TOKEN}":
            return JSONResponse({"code": 99991663, "msg": "Invalid access token for authorization."}, status_code=400)
        if path == "im/v1/messages":
            body = await request.json()
            self.record(Call("im.message.create", {**body, **dict(request.query_params)}))
            if body.get("receive_id") == BROKEN_CHAT:
                return JSONResponse({"code": 230002, "msg": "Bot/User can NOT be out of the chat."}, status_code=400)
            return JSONResponse(
                {
                    "code": 0,
                    "msg": "success",
                    "data": {
                        "message_id": f"om_bot_{next(self._ids)}",
                        "chat_id": body.get("receive_id"),
                        "msg_type": body.get("msg_type"),
                    },
                }
            )
        if path == "im/v1/files":
            form = await request.form()
            upload = form["file"]
            data = await upload.read()  # type: ignore[union-attr]
            key = f"file_v2_{next(self._ids)}"
            self.record(
                Call(
                    "im.file.create",
                    {"file_name": form.get("file_name"), "file_type": form.get("file_type"), "file_key": key},
                    {"file": (str(form.get("file_name")), data)},
                )
            )
            return JSONResponse({"code": 0, "msg": "success", "data": {"file_key": key}})
        return JSONResponse({"code": 404, "msg": f"no such API {path}"}, status_code=404)

    def message_texts(self) -> list[str]:
        """The text of every text message the bot sent."""
        return [
            json.loads(c.params["content"]).get("text", "")
            for c in self.named("im.message.create")
            if c.params.get("msg_type") == "text"
        ]
