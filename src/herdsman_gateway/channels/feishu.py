"""Feishu / Lark through lark-oapi: event callbacks in, ``im/v1/messages`` out.

Feishu POSTs events to ``/channels/feishu/events``; lark-oapi's ``EventDispatcherHandler``
answers the URL check, verifies the verification token (and the signature and decryption when
an ``encrypt_key`` is set) and parses ``im.message.receive_v1``. Text messages go to the
dispatcher; answers are text messages to the chat, files are uploaded (``im/v1/files``) and sent
as file messages. Feishu re-sends events it thinks were missed, so event ids are remembered
for a while and repeats dropped. lark-oapi's client fetches its tenant token with blocking
HTTP, so sends run in a worker thread, off the gateway's event loop.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
from typing import Any

import lark_oapi as lark
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from lark_oapi.api.im.v1 import (
    CreateFileRequest,
    CreateFileRequestBody,
    CreateMessageRequest,
    CreateMessageRequestBody,
    P2ImMessageReceiveV1,
)
from lark_oapi.core.model import RawRequest

from herdsman.config.schema import FeishuChannelConfig
from herdsman.logs import get_logger
from herdsman_gateway.channels.base import Channel, InboundMessage, MessageHandler, RecentIds

log = get_logger(__name__)

MENTION = re.compile(r"@_user_\d+\s*")
DENIED = ("verification_token", "signature verification failed", "encrypt_key not found")


class FeishuApiError(RuntimeError):
    """The Feishu/Lark API answered with a non-zero code."""


def _check(response: Any, what: str) -> Any:
    """``response`` when it succeeded; FeishuApiError naming the code and message otherwise."""
    if not response.success():
        raise FeishuApiError(f"{what} failed: code {response.code}: {response.msg} (log id {response.get_log_id()})")
    return response


class FeishuChannel(Channel):
    """A Feishu/Lark bot answering in the chats where it receives messages."""

    name = "feishu"

    def __init__(self, config: FeishuChannelConfig) -> None:
        super().__init__()
        self.config = config
        builder = lark.Client.builder().app_id(config.app_id or "").app_secret(config.app_secret or "")
        self.client = builder.domain(config.base_url or lark.FEISHU_DOMAIN).log_level(lark.LogLevel.WARNING).build()
        self._received: list[InboundMessage] = []
        self._seen = RecentIds()
        self.events = (
            lark.EventDispatcherHandler.builder(config.encrypt_key or "", config.verification_token or "")
            .register_p2_im_message_receive_v1(self._on_message)
            .build()
        )

    @property
    def max_text(self) -> int:
        """Feishu's text messages hold up to about 150 KB; keep them readable."""
        return 12000

    async def start(self, handler: MessageHandler) -> None:
        """Accept event callbacks."""
        self.handler = handler
        log.info("feishu_ready", domain=self.config.base_url or lark.FEISHU_DOMAIN)

    async def stop(self) -> None:
        """Stop accepting event callbacks (messages being handed over finish first)."""
        self.handler = None
        await self.handed_over()

    def _on_message(self, data: P2ImMessageReceiveV1) -> None:
        """lark-oapi's callback (synchronous): keep text messages for :meth:`receive` to dispatch."""
        if not self._seen.first_time(data.header.event_id if data.header else None):
            return
        event = data.event
        message, sender = event.message, event.sender
        if message is None or sender is None or sender.sender_type == "app":
            return
        if message.message_type != "text":
            text = ""
        else:
            text = MENTION.sub("", json.loads(message.content or "{}").get("text", "")).strip()
        ids = sender.sender_id
        user = (ids.open_id or ids.user_id or ids.union_id) if ids else ""
        self._received.append(
            InboundMessage(
                self.name,
                message.chat_id or "",
                user or "",
                text or "(a non-text message)",
                user_name=ids.user_id if ids else None,
                reply_to=message.message_id,
            )
        )

    async def send_text(self, chat_id: str, text: str, *, reply_to: str | None = None) -> None:
        """A text message to the chat."""
        await self._send(chat_id, "text", {"text": text})

    async def send_file(self, chat_id: str, filename: str, data: bytes, *, reply_to: str | None = None) -> None:
        """Upload the file, then send it to the chat as a file message.

        The file goes as a ``(name, stream, type)`` tuple so lark-oapi's multipart encoder sends
        it as a file part with its name (a bare stream would be sent without one).
        """
        body = (
            CreateFileRequestBody.builder()
            .file_type("stream")
            .file_name(filename)
            .file((filename, io.BytesIO(data), "application/octet-stream"))
            .build()
        )  # type: ignore[arg-type]  # the SDK types file() as a stream; it takes a (name, stream, type) tuple as requests does, which gives the part its name
        request = CreateFileRequest.builder().request_body(body).build()
        response = _check(await asyncio.to_thread(self.client.im.v1.file.create, request), "uploading a file")
        await self._send(chat_id, "file", {"file_key": response.data.file_key})

    async def _send(self, chat_id: str, msg_type: str, content: dict[str, Any]) -> None:
        body = (
            CreateMessageRequestBody.builder()
            .receive_id(chat_id)
            .msg_type(msg_type)
            .content(json.dumps(content, ensure_ascii=False))
            .build()
        )
        request = CreateMessageRequest.builder().receive_id_type("chat_id").request_body(body).build()
        _check(await asyncio.to_thread(self.client.im.v1.message.create, request), "sending a message")

    def router(self) -> APIRouter | None:
        """``POST /events``: Feishu's event callbacks (and its URL check)."""
        router = APIRouter()

        @router.post("/events", summary="Feishu/Lark event callbacks")
        async def feishu_events(request: Request) -> Response:
            """An event from Feishu; 401 with a bad token or signature, 400 when malformed."""
            return await self.receive(request)

        return router

    async def receive(self, request: Request) -> Response:
        """Verify and parse one callback with lark-oapi, then dispatch its messages."""
        if self.handler is None:
            return JSONResponse({"detail": "the feishu channel is not running; try again later"}, status_code=503)
        body = await request.body()
        try:
            if not isinstance(json.loads(body or b"null"), dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            log.warning("feishu_event_malformed", error=str(exc))
            return JSONResponse({"detail": f"malformed Feishu event: {exc}"}, status_code=400)
        raw = RawRequest()
        raw.uri = str(request.url.path)
        raw.body = body
        raw.headers = {"-".join(p.capitalize() for p in k.split("-")): v for k, v in request.headers.items()}
        self._received = []
        answer = self.events.do(raw)
        received, self._received = self._received, []
        if answer.status_code != 200:
            detail = (answer.content or b"").decode(errors="replace")
            if "processor not found" in detail:  # an event type this bot does not subscribe to
                return JSONResponse({"msg": "ignored"})
            denied = any(word in detail for word in DENIED)
            log.warning("feishu_event_refused" if denied else "feishu_event_failed", detail=detail)
            return JSONResponse({"detail": detail}, status_code=401 if denied else 400)
        for message in received:  # answered at once: Feishu re-sends events not acknowledged in 3 s
            self.hand_over(message)
        return Response(answer.content, status_code=200, media_type="application/json")
