"""WeCom (WeChat Work) through wechatpy: an app's encrypted callback in, the message API out.

WeCom calls ``/channels/wecom/callback``: a GET when the URL is saved in the admin console
(``echostr`` must be decrypted and echoed), then a POST of encrypted XML for each message.
wechatpy's enterprise ``WeChatCrypto`` checks ``msg_signature`` (SHA-1 of token, timestamp,
nonce and ciphertext) and decrypts (AES-256-CBC, the corp id checked inside); a missing or
wrong signature is refused with 401 and nothing runs. wechatpy's ``WeChatClient`` sends:
``message/send`` for text (at most 2048 UTF-8 bytes a message, so answers are split by bytes)
and ``media/upload`` + a file or image message for outputs. WeCom re-sends a callback it did
not see answered within five seconds, so the callback answers at once and message ids are
remembered to drop repeats. wechatpy's client is blocking HTTP (requests): it runs in a worker
thread, off the event loop.
"""

from __future__ import annotations

import asyncio
import io
import posixpath
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from wechatpy.enterprise import WeChatClient, parse_message
from wechatpy.enterprise.crypto import WeChatCrypto
from wechatpy.exceptions import InvalidAppIdException, InvalidSignatureException

from herdsman.config.schema import WeComChannelConfig
from herdsman.logs import get_logger
from herdsman_gateway.channels.base import Channel, InboundMessage, MessageHandler, RecentIds

log = get_logger(__name__)

DEFAULT_API = "https://qyapi.weixin.qq.com/cgi-bin/"
IMAGE_TYPES = {".png", ".jpg", ".jpeg", ".gif"}
MAX_IMAGE_BYTES = 10 * 1024 * 1024  # WeCom's image limit; a bigger picture goes as a file
SIGNED = ("msg_signature", "timestamp", "nonce")


class _Client(WeChatClient):
    """wechatpy's enterprise client with the token URL under ``API_BASE_URL`` too (it hard-codes it)."""

    def fetch_access_token(self) -> dict[str, Any]:
        """``gettoken`` at the configured API address."""
        return self._fetch_access_token(
            url=self.API_BASE_URL.rstrip("/") + "/gettoken", params={"corpid": self.corp_id, "corpsecret": self.secret}
        )


class WeComChannel(Channel):
    """A WeCom app answering the members who message it (one conversation per member)."""

    name = "wecom"

    def __init__(self, config: WeComChannelConfig) -> None:
        super().__init__()
        self.config = config
        self.crypto = WeChatCrypto(config.token or "", config.encoding_aes_key or "", config.corp_id or "")
        self.client = _Client(config.corp_id or "", config.secret or "", timeout=30)
        self.client.API_BASE_URL = config.base_url or DEFAULT_API
        self._seen = RecentIds()

    @property
    def max_text(self) -> int:
        """WeCom text messages hold at most 2048 bytes (see :meth:`text_size`)."""
        return 2048

    def text_size(self, text: str) -> int:
        """WeCom counts UTF-8 bytes."""
        return len(text.encode())

    async def start(self, handler: MessageHandler) -> None:
        """Fetch an access token (checks corp id and secret), then accept callbacks."""
        await asyncio.to_thread(self.client.fetch_access_token)
        self.handler = handler
        log.info("wecom_ready", agent_id=self.config.agent_id)

    async def stop(self) -> None:
        """Stop accepting callbacks (messages being handed over finish first)."""
        self.handler = None
        await self.handed_over()

    async def send_text(self, chat_id: str, text: str, *, reply_to: str | None = None) -> None:
        """A text message to the member."""
        await asyncio.to_thread(self.client.message.send_text, self.config.agent_id, chat_id, text)

    async def send_file(self, chat_id: str, filename: str, data: bytes, *, reply_to: str | None = None) -> None:
        """Upload the file as temporary media, then send it (pictures as images, the rest as files)."""
        image = posixpath.splitext(filename)[1].lower() in IMAGE_TYPES and len(data) <= MAX_IMAGE_BYTES
        kind = "image" if image else "file"
        upload = io.BytesIO(data)
        upload.name = filename  # requests names the multipart part after the stream
        uploaded = await asyncio.to_thread(self.client.media.upload, kind, upload)
        send = self.client.message.send_image if image else self.client.message.send_file
        await asyncio.to_thread(send, self.config.agent_id, chat_id, uploaded["media_id"])

    def router(self) -> APIRouter | None:
        """``GET /callback`` (URL check) and ``POST /callback`` (messages)."""
        router = APIRouter()

        @router.get("/callback", summary="WeCom callback URL check")
        async def wecom_verify(request: Request) -> Response:
            """Echo the decrypted ``echostr``; 401 when the signature is wrong."""
            return self.verify(request)

        @router.post("/callback", summary="WeCom message callbacks")
        async def wecom_callback(request: Request) -> Response:
            """An encrypted message; 401 with a bad signature, 400 when malformed."""
            return await self.receive(request)

        return router

    @staticmethod
    def _signed(request: Request) -> tuple[str, str, str] | None:
        """The query's (msg_signature, timestamp, nonce), or None when one is missing."""
        values = tuple(request.query_params.get(k, "") for k in SIGNED)
        return values if all(values) else None  # type: ignore[return-value]  # all() made each a non-empty str: the 3-tuple, which mypy cannot see

    def verify(self, request: Request) -> Response:
        """The URL check WeCom makes when the callback is saved."""
        signed, echo = self._signed(request), request.query_params.get("echostr", "")
        if signed is None or not echo:
            return JSONResponse(
                {"detail": "a WeCom URL check needs msg_signature, timestamp, nonce and echostr"}, status_code=400
            )
        try:
            plain = self.crypto.check_signature(*signed, echo)
        except (InvalidSignatureException, InvalidAppIdException) as exc:
            log.warning("wecom_callback_refused", reason=type(exc).__name__)
            return JSONResponse(
                {"detail": "wrong signature: check channels.wecom.token and encoding_aes_key"}, status_code=401
            )
        return PlainTextResponse(plain)

    async def receive(self, request: Request) -> Response:
        """Check and decrypt one callback, answer at once, and dispatch its text in a task."""
        if self.handler is None:
            return JSONResponse({"detail": "the wecom channel is not running; try again later"}, status_code=503)
        signed = self._signed(request)
        if signed is None:
            log.warning("wecom_callback_refused", reason="unsigned")
            return JSONResponse({"detail": "missing msg_signature, timestamp or nonce"}, status_code=401)
        body = await request.body()
        try:
            xml = self.crypto.decrypt_message(body, *signed)
        except (InvalidSignatureException, InvalidAppIdException) as exc:
            log.warning("wecom_callback_refused", reason=type(exc).__name__)
            return JSONResponse(
                {"detail": "wrong signature: check channels.wecom.token and encoding_aes_key"}, status_code=401
            )
        except Exception as exc:  # noqa: BLE001 - not XML, no Encrypt element, bad base64 or padding
            log.warning("wecom_callback_malformed", error=f"{type(exc).__name__}: {exc}")
            return JSONResponse({"detail": f"malformed WeCom callback: {type(exc).__name__}"}, status_code=400)
        message = parse_message(xml)
        if message.type not in ("text", "image", "voice", "video", "file", "location", "link"):
            return PlainTextResponse("")  # events (subscribe, enter_agent, ...) need no answer
        if not self._seen.first_time(str(message.id)):
            return PlainTextResponse("")
        text = message.content if message.type == "text" else "(a non-text message)"
        self.hand_over(InboundMessage(self.name, message.source, message.source, text or ""))
        return PlainTextResponse("")
