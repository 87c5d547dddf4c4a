"""WhatsApp through the Cloud API: Meta's webhook in, the Graph API's messages and media out.

Meta calls ``/channels/whatsapp/webhook``: a GET to verify the subscription (``hub.mode``,
``hub.verify_token``, ``hub.challenge``: the challenge is echoed when the token matches), then a
POST for every change, signed with ``X-Hub-Signature-256: sha256=<HMAC-SHA256 of the raw body
with the app secret>``. A missing or wrong signature is refused with 401 and nothing runs;
only changes for the configured ``phone_number_id`` are read. Answers are ``POST
/{phone_number_id}/messages`` text messages (at most 4096 characters each); files are uploaded
with ``POST /{phone_number_id}/media`` and sent as an image (PNG/JPEG up to 5 MB) or a document.
Meta re-delivers webhooks it did not see acknowledged, so message ids are remembered.

Written on httpx rather than pywa: pywa fixes the Graph API host inside its client (it
overwrites the session's base URL), so it cannot be pointed at a proxy or a local test server,
and its webhook side wants to own the routes and handler registry; what this channel needs is
three documented HTTP calls and an HMAC check.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import mimetypes
from typing import Any

import httpx
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from herdsman.config.schema import WhatsAppChannelConfig
from herdsman.logs import get_logger
from herdsman_gateway.channels.base import Channel, InboundMessage, MessageHandler, RecentIds

log = get_logger(__name__)

DEFAULT_API = "https://graph.facebook.com"
SIGNATURE_HEADER = "X-Hub-Signature-256"
IMAGE_TYPES = {"image/png", "image/jpeg"}
MAX_IMAGE_BYTES = 5 * 1024 * 1024


class WhatsAppApiError(RuntimeError):
    """The Graph API refused a call."""


def signature_ok(secret: str, body: bytes, header: str | None) -> bool:
    """Whether ``header`` is ``sha256=`` and the HMAC-SHA256 of ``body`` under ``secret``."""
    if not header or not header.startswith("sha256="):
        return False
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(header.removeprefix("sha256="), expected)


def inbound_messages(payload: Any, phone_number_id: str) -> list[dict[str, Any]]:
    """The ``messages`` of a webhook payload addressed to ``phone_number_id`` (statuses and others skipped)."""
    if not isinstance(payload, dict) or payload.get("object") != "whatsapp_business_account":
        raise ValueError("a WhatsApp webhook is a JSON object with object: whatsapp_business_account")
    found: list[dict[str, Any]] = []
    for entry in payload.get("entry") or []:
        for change in entry.get("changes") or [] if isinstance(entry, dict) else []:
            value = change.get("value") if isinstance(change, dict) and change.get("field") == "messages" else None
            if not isinstance(value, dict) or (value.get("metadata") or {}).get("phone_number_id") != phone_number_id:
                continue
            found += [m for m in value.get("messages") or [] if isinstance(m, dict)]
    return found


class WhatsAppChannel(Channel):
    """A WhatsApp Business number answering the people who write to it."""

    name = "whatsapp"

    def __init__(self, config: WhatsAppChannelConfig) -> None:
        super().__init__()
        self.config = config
        base = (config.base_url or DEFAULT_API).rstrip("/")
        self.api_url = f"{base}/{config.api_version}/{config.phone_number_id}"
        self.http: httpx.AsyncClient | None = None
        self._seen = RecentIds()

    @property
    def max_text(self) -> int:
        """A text message's body holds at most 4096 characters."""
        return 4096

    async def start(self, handler: MessageHandler) -> None:
        """Check the token and number (``GET /{phone_number_id}``), then accept webhooks."""
        self.http = httpx.AsyncClient(headers={"Authorization": f"Bearer {self.config.access_token}"}, timeout=30)
        try:
            number = await self._call("GET", "", what="reading the phone number")
        except Exception:
            await self.http.aclose()
            self.http = None
            raise
        self.handler = handler
        log.info("whatsapp_ready", number=number.get("display_phone_number"))

    async def stop(self) -> None:
        """Stop accepting webhooks and close the HTTP client."""
        self.handler = None
        await self.handed_over()
        http, self.http = self.http, None
        if http is not None:
            await http.aclose()

    async def _call(self, method: str, path: str, *, what: str, **kwargs: Any) -> dict[str, Any]:
        """One Graph API call; WhatsAppApiError with Meta's message when it fails."""
        if self.http is None:
            raise RuntimeError("the whatsapp channel is not started")
        response = await self.http.request(method, self.api_url + path, **kwargs)
        try:
            body = response.json()
        except ValueError:
            body = {}
        if response.is_error or not isinstance(body, dict):
            error = body.get("error", {}) if isinstance(body, dict) else {}
            raise WhatsAppApiError(
                f"{what} failed: HTTP {response.status_code}: {error.get('message') or response.text[:200]}"
                f" (code {error.get('code')})"
            )
        return body

    async def send_text(self, chat_id: str, text: str, *, reply_to: str | None = None) -> None:
        """A text message to the person."""
        await self._send(chat_id, "text", {"preview_url": False, "body": text})

    async def send_file(self, chat_id: str, filename: str, data: bytes, *, reply_to: str | None = None) -> None:
        """Upload the file, then send it as an image (small PNG/JPEG) or a document."""
        mime = mimetypes.guess_type(filename)[0] or "application/octet-stream"
        image = mime in IMAGE_TYPES and len(data) <= MAX_IMAGE_BYTES
        form = {"messaging_product": "whatsapp", "type": mime}
        uploaded = await self._call(
            "POST", "/media", what="uploading a file", data=form, files={"file": (filename, data, mime)}
        )
        if image:
            await self._send(chat_id, "image", {"id": uploaded["id"]})
        else:
            await self._send(chat_id, "document", {"id": uploaded["id"], "filename": filename})

    async def _send(self, to: str, kind: str, content: dict[str, Any]) -> None:
        body = {"messaging_product": "whatsapp", "recipient_type": "individual", "to": to, "type": kind, kind: content}
        await self._call("POST", "/messages", what="sending a message", json=body)

    def router(self) -> APIRouter | None:
        """``GET /webhook`` (subscription check) and ``POST /webhook`` (changes)."""
        router = APIRouter()

        @router.get("/webhook", summary="WhatsApp webhook verification")
        async def whatsapp_verify(request: Request) -> Response:
            """Echo ``hub.challenge`` when ``hub.verify_token`` matches; 403 otherwise."""
            return self.verify(request)

        @router.post("/webhook", summary="WhatsApp webhook")
        async def whatsapp_webhook(request: Request) -> Response:
            """A change from Meta; 401 with a bad signature, 400 when malformed."""
            return await self.receive(request)

        return router

    def verify(self, request: Request) -> Response:
        """The subscription check Meta makes when the webhook is saved."""
        query = request.query_params
        token = query.get("hub.verify_token", "")
        if query.get("hub.mode") != "subscribe" or not hmac.compare_digest(token, self.config.verify_token or ""):
            log.warning("whatsapp_verify_refused")
            return JSONResponse(
                {"detail": "wrong hub.verify_token: it must equal channels.whatsapp.verify_token"}, status_code=403
            )
        return PlainTextResponse(query.get("hub.challenge", ""))

    async def receive(self, request: Request) -> Response:
        """Check the signature, read the messages, answer at once and dispatch them in tasks."""
        if self.handler is None:
            return JSONResponse({"detail": "the whatsapp channel is not running; try again later"}, status_code=503)
        body = await request.body()
        if not signature_ok(self.config.app_secret or "", body, request.headers.get(SIGNATURE_HEADER)):
            log.warning("whatsapp_webhook_refused", reason="bad signature")
            return JSONResponse(
                {"detail": f"wrong or missing {SIGNATURE_HEADER}: check channels.whatsapp.app_secret"}, status_code=401
            )
        try:
            messages = inbound_messages(json.loads(body or b"null"), self.config.phone_number_id or "")
        except (ValueError, AttributeError) as exc:
            log.warning("whatsapp_webhook_malformed", error=str(exc))
            return JSONResponse({"detail": f"malformed WhatsApp webhook: {exc}"}, status_code=400)
        for message in messages:
            if not self._seen.first_time(str(message.get("id") or "")):
                continue
            text = (
                (message.get("text") or {}).get("body", "") if message.get("type") == "text" else "(a non-text message)"
            )
            sender = str(message.get("from") or "")
            self.hand_over(InboundMessage(self.name, sender, sender, text, reply_to=message.get("id")))
        return JSONResponse({"ok": True})
