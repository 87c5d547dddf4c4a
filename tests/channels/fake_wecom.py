"""A fake WeCom API (gettoken, message/send, media/upload) and WeCom's side of the callback crypto.

The callback encryption is written here from WeCom's documentation, not with wechatpy, so the
channel's decryption is checked against an independent implementation: AES-256-CBC with the
key ``base64(EncodingAESKey + "=")`` and its first 16 bytes as IV, plaintext ``16 random bytes
+ 4-byte big-endian length + message + corp id`` padded PKCS#7 to 32 bytes, and
``msg_signature = sha1(sorted(token, timestamp, nonce, ciphertext))``. ``message/send`` rejects
text over 2048 bytes (errcode 45002, as WeCom does), and messages to ``BROKEN_USER`` fail with
errcode 81013.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import os
import struct
import time
from typing import Any

from Crypto.Cipher import AES
from fastapi import Request
from fastapi.responses import JSONResponse

from tests.channels.fake_server import Call, FakeServer

CORP_ID, SECRET, AGENT_ID = "ww_test_corp", "wecom-secret", 1000002
TOKEN = "wecom-token"
AES_KEY = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"  # 43 characters, as the console shows
ACCESS_TOKEN = "wecom-access-token"
BROKEN_USER = "broken"
MAX_TEXT_BYTES = 2048


def signature(token: str, timestamp: str, nonce: str, encrypted: str) -> str:
    """WeCom's msg_signature."""
    return hashlib.sha1("".join(sorted([token, timestamp, nonce, encrypted])).encode()).hexdigest()


def encrypt(plain: str, aes_key: str = AES_KEY, corp_id: str = CORP_ID) -> str:
    """``plain`` encrypted as WeCom encrypts callbacks (base64 text)."""
    key = base64.b64decode(aes_key + "=")
    data = os.urandom(16) + struct.pack(">I", len(plain.encode())) + plain.encode() + corp_id.encode()
    pad = 32 - len(data) % 32
    cipher = AES.new(key, AES.MODE_CBC, key[:16])
    return base64.b64encode(cipher.encrypt(data + bytes([pad]) * pad)).decode()


def text_xml(user: str, text: str, msg_id: str | None = None) -> str:
    """The plaintext XML of a text message a member sent to the app."""
    return (
        f"<xml><ToUserName><![CDATA[{CORP_ID}]]></ToUserName><FromUserName><![CDATA[{user}]]></FromUserName>"
        f"<CreateTime>{int(time.time())}</CreateTime><MsgType><![CDATA[text]]></MsgType>"
        f"<Content><![CDATA[{text}]]></Content><MsgId>{msg_id or time.time_ns()}</MsgId>"
        f"<AgentID>{AGENT_ID}</AgentID></xml>"
    )


def callback(user: str, text: str, msg_id: str | None = None, token: str = TOKEN) -> tuple[bytes, dict[str, str]]:
    """A message callback as WeCom POSTs it: (body, query parameters)."""
    encrypted = encrypt(text_xml(user, text, msg_id))
    timestamp, nonce = str(int(time.time())), "nonce1"
    body = f"<xml><ToUserName><![CDATA[{CORP_ID}]]></ToUserName><Encrypt><![CDATA[{encrypted}]]></Encrypt><AgentID><![CDATA[{AGENT_ID}]]></AgentID></xml>"
    return body.encode(), {
        "msg_signature": signature(token, timestamp, nonce, encrypted),
        "timestamp": timestamp,
        "nonce": nonce,
    }


class FakeWeCom(FakeServer):
    """The API under ``{url}/cgi-bin/``."""

    def __init__(self) -> None:
        super().__init__()
        self._ids = itertools.count(1)
        self.app.add_api_route("/cgi-bin/{path:path}", self.handle, methods=["GET", "POST"])

    @property
    def base_url(self) -> str:
        """What to give the channel as ``base_url``."""
        return f"{self.url}/cgi-bin/"

    async def handle(self, path: str, request: Request) -> JSONResponse:
        """Answer one API call as WeCom does (HTTP 200 with an errcode)."""
        query = dict(request.query_params)
        if path == "gettoken":
            self.record(Call("gettoken", query))
            if query.get("corpid") != CORP_ID or query.get("corpsecret") != SECRET:
                return JSONResponse({"errcode": 40001, "errmsg": "invalid credential"})
            return JSONResponse({"errcode": 0, "errmsg": "ok", "access_token": ACCESS_TOKEN, "expires_in": 7200})
        if query.get("access_token") != ACCESS_TOKEN:
            return JSONResponse({"errcode": 40014, "errmsg": "invalid access_token"})
        if path == "message/send":
            body = await request.json()
            self.record(Call("message/send", body))
            if body.get("agentid") != AGENT_ID or not body.get("touser"):
                return JSONResponse({"errcode": 40056, "errmsg": "invalid agentid or touser"})
            if body.get("touser") == BROKEN_USER:
                return JSONResponse({"errcode": 81013, "errmsg": "user & party & tag all invalid"})
            if body.get("msgtype") == "text" and len(body["text"]["content"].encode()) > MAX_TEXT_BYTES:
                return JSONResponse({"errcode": 45002, "errmsg": "content size out of limit"})
            return JSONResponse({"errcode": 0, "errmsg": "ok", "msgid": f"msg{next(self._ids)}"})
        if path == "media/upload":
            form = await request.form()
            upload = form["media"]
            data = await upload.read()  # type: ignore[union-attr]
            media_id = f"media_{next(self._ids)}"
            self.record(
                Call(
                    "media/upload",
                    {"type": query.get("type"), "media_id": media_id},
                    {"media": (str(upload.filename), data)},
                )
            )  # type: ignore[union-attr]
            return JSONResponse(
                {
                    "errcode": 0,
                    "errmsg": "ok",
                    "type": query.get("type"),
                    "media_id": media_id,
                    "created_at": str(int(time.time())),
                }
            )
        return JSONResponse({"errcode": 404, "errmsg": f"no such API {path}"}, status_code=404)

    def message_texts(self, user: str | None = None) -> list[str]:
        """The text of every text message sent (to ``user`` when given)."""
        return [
            c.params["text"]["content"]
            for c in self.named("message/send")
            if c.params.get("msgtype") == "text" and (user is None or c.params.get("touser") == user)
        ]


def parameters(**extra: Any) -> dict[str, Any]:
    """The channel section for a gateway talking to a fake at ``base_url``."""
    return {
        "enabled": True,
        "corp_id": CORP_ID,
        "secret": SECRET,
        "agent_id": AGENT_ID,
        "token": TOKEN,
        "encoding_aes_key": AES_KEY,
        **extra,
    }
