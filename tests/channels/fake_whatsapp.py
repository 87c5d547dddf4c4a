"""A fake WhatsApp Cloud API (Graph API: phone number, messages, media) and Meta's webhook signing.

Calls must carry the access token as a Bearer header, as Meta requires. ``/messages`` checks
the payload shape of the Cloud API (``messaging_product``, ``to``, ``type`` and its object),
refuses text bodies over 4096 characters (error 100, as Meta does) and fails for ``BROKEN_NUMBER``
(error 131030, "recipient not in allowed list"). Webhook bodies are signed here with the app
secret (``X-Hub-Signature-256: sha256=...``), independently of the channel's check.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import time
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse

from tests.channels.fake_server import Call, FakeServer

ACCESS_TOKEN, APP_SECRET, VERIFY_TOKEN = "wa-access-token", "wa-app-secret", "wa-verify"
PHONE_NUMBER_ID, VERSION = "109876543210", "v21.0"
BROKEN_NUMBER = "15550000000"
MAX_TEXT = 4096


def error(code: int, message: str) -> JSONResponse:
    """A Graph API error answer."""
    return JSONResponse(
        {"error": {"message": message, "type": "OAuthException", "code": code, "fbtrace_id": "A1"}}, status_code=400
    )


def message_payload(
    wa_id: str, text: str, message_id: str | None = None, phone_number_id: str = PHONE_NUMBER_ID
) -> dict[str, Any]:
    """A webhook change carrying one text message from ``wa_id``."""
    value = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15551234567", "phone_number_id": phone_number_id},
        "contacts": [{"profile": {"name": "Alice"}, "wa_id": wa_id}],
        "messages": [
            {
                "from": wa_id,
                "id": message_id or f"wamid.{time.time_ns()}",
                "timestamp": str(int(time.time())),
                "type": "text",
                "text": {"body": text},
            }
        ],
    }
    return {
        "object": "whatsapp_business_account",
        "entry": [{"id": "WABA_ID", "changes": [{"value": value, "field": "messages"}]}],
    }


def signed(payload: dict[str, Any] | str, secret: str = APP_SECRET) -> tuple[bytes, dict[str, str]]:
    """(body, headers) as Meta POSTs a webhook."""
    body = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return body, {"X-Hub-Signature-256": f"sha256={digest}", "content-type": "application/json"}


class FakeWhatsApp(FakeServer):
    """The Graph API under ``{url}/{VERSION}/{PHONE_NUMBER_ID}``."""

    def __init__(self) -> None:
        super().__init__()
        self._ids = itertools.count(1)
        self.app.add_api_route("/{version}/{number}", self.number, methods=["GET"])
        self.app.add_api_route("/{version}/{number}/messages", self.messages, methods=["POST"])
        self.app.add_api_route("/{version}/{number}/media", self.media, methods=["POST"])

    @staticmethod
    def refused(version: str, number: str, request: Request) -> JSONResponse | None:
        """An error answer when the call's version, number or token is wrong."""
        if request.headers.get("authorization") != f"Bearer {ACCESS_TOKEN}":
            return JSONResponse({"error": {"message": "Invalid OAuth access token.", "code": 190}}, status_code=401)
        if version != VERSION or number != PHONE_NUMBER_ID:
            return error(100, f"Unsupported request: {version}/{number}")
        return None

    async def number(self, version: str, number: str, request: Request) -> JSONResponse:
        """``GET /{phone_number_id}``: the number's details."""
        self.record(Call("number", {}))
        return self.refused(version, number, request) or JSONResponse(
            {"display_phone_number": "15551234567", "verified_name": "Herd", "id": number}
        )

    async def messages(self, version: str, number: str, request: Request) -> JSONResponse:
        """``POST /{phone_number_id}/messages``."""
        if (refusal := self.refused(version, number, request)) is not None:
            return refusal
        body = await request.json()
        self.record(Call("messages", body))
        kind = body.get("type")
        if body.get("messaging_product") != "whatsapp" or not body.get("to") or not isinstance(body.get(kind), dict):
            return error(100, "(#100) Invalid parameter")
        if body["to"] == BROKEN_NUMBER:
            return error(131030, "(#131030) Recipient phone number not in allowed list")
        if kind == "text" and len(body["text"].get("body", "")) > MAX_TEXT:
            return error(100, "(#100) Param text['body'] must be at most 4096 characters long.")
        return JSONResponse(
            {
                "messaging_product": "whatsapp",
                "contacts": [{"input": body["to"], "wa_id": body["to"]}],
                "messages": [{"id": f"wamid.bot{next(self._ids)}"}],
            }
        )

    async def media(self, version: str, number: str, request: Request) -> JSONResponse:
        """``POST /{phone_number_id}/media``: a multipart upload."""
        if (refusal := self.refused(version, number, request)) is not None:
            return refusal
        form = await request.form()
        upload = form["file"]
        if form.get("messaging_product") != "whatsapp" or not form.get("type"):
            return error(100, "(#100) messaging_product and type are required")
        data = await upload.read()  # type: ignore[union-attr]
        media_id = f"{next(self._ids)}000"
        self.record(Call("media", {"type": form.get("type"), "id": media_id}, {"file": (str(upload.filename), data)}))  # type: ignore[union-attr]
        return JSONResponse({"id": media_id})

    def message_texts(self, to: str | None = None) -> list[str]:
        """The body of every text message sent (to ``to`` when given)."""
        return [
            c.params["text"]["body"]
            for c in self.named("messages")
            if c.params.get("type") == "text" and (to is None or c.params.get("to") == to)
        ]


def parameters(**extra: Any) -> dict[str, Any]:
    """The channel section for a gateway talking to a fake at ``base_url``."""
    return {
        "enabled": True,
        "access_token": ACCESS_TOKEN,
        "phone_number_id": PHONE_NUMBER_ID,
        "app_secret": APP_SECRET,
        "verify_token": VERIFY_TOKEN,
        "api_version": VERSION,
        **extra,
    }
