"""A fake DingTalk: the stream gateway (connections/open + websocket), OAuth, robot messages, media.

``connections/open`` checks the client id and secret and that the robot-message topic is
subscribed, and hands out a single-use ticket; the websocket accepts only that ticket, sends
robot messages as CALLBACK frames (the format of DingTalk's stream protocol: ``specVersion``,
``type``, ``headers`` with ``topic`` and ``messageId``, and ``data`` as a JSON string) and
records the ack frames the SDK writes back. The robot API checks the access token header,
``robotCode``, ``msgKey`` and that ``msgParam`` is a JSON string; text over ``MAX_TEXT`` is
refused, and sends to ``BROKEN_USER`` fail as DingTalk fails for a staff id it does not know.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
import uuid
from typing import Any

from fastapi import Request, WebSocket
from fastapi.responses import JSONResponse

from tests.channels.fake_server import Call, FakeServer, pump

CLIENT_ID, CLIENT_SECRET = "ding_test_app", "ding-secret"
ACCESS_TOKEN = "ding-access-token"
TOPIC = "/v1.0/im/bot/messages/get"
BROKEN_USER = "broken"
MAX_TEXT = 4000


def robot_message(sender: str, text: str, *, group: str | None = None, msg_id: str | None = None) -> dict[str, Any]:
    """The data of a robot message: one-to-one from ``sender``, or in ``group`` when given."""
    return {
        "conversationId": group or f"cid_{sender}",
        "conversationType": "2" if group else "1",
        "chatbotCorpId": "corp1",
        "chatbotUserId": "bot1",
        "msgId": msg_id or f"msg{time.time_ns()}",
        "senderNick": sender.title(),
        "isAdmin": False,
        "senderStaffId": sender,
        "senderId": f"$:LWCP:{sender}",
        "senderCorpId": "corp1",
        "sessionWebhook": "http://unused.invalid/robot/sendBySession?session=1",
        "sessionWebhookExpiredTime": int(time.time() * 1000) + 5_400_000,
        "createAt": int(time.time() * 1000),
        "robotCode": CLIENT_ID,
        "msgtype": "text",
        "text": {"content": text},
    }


class FakeDingTalk(FakeServer):
    """DingTalk's API hosts, both under ``url``."""

    def __init__(self) -> None:
        super().__init__()
        self._ids = itertools.count(1)
        self.tickets: set[str] = set()
        self.acks: list[dict[str, Any]] = []
        self.connections = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._outbox: asyncio.Queue | None = None
        self.app.add_api_route("/v1.0/gateway/connections/open", self.open, methods=["POST"])
        self.app.add_api_route("/v1.0/oauth2/accessToken", self.token, methods=["POST"])
        self.app.add_api_route("/v1.0/robot/oToMessages/batchSend", self.one_to_one, methods=["POST"])
        self.app.add_api_route("/v1.0/robot/groupMessages/send", self.group, methods=["POST"])
        self.app.add_api_route("/media/upload", self.upload, methods=["POST"])
        self.app.add_api_websocket_route("/stream", self.stream)

    async def open(self, request: Request) -> JSONResponse:
        """Hand out a websocket endpoint and a ticket for a valid app."""
        body = await request.json()
        self.record(Call("connections/open", body))
        if body.get("clientId") != CLIENT_ID or body.get("clientSecret") != CLIENT_SECRET:
            return JSONResponse(
                {"code": "InvalidAuthentication", "message": "clientId or clientSecret is wrong"}, status_code=401
            )
        if {"type": "CALLBACK", "topic": TOPIC} not in body.get("subscriptions", []):
            return JSONResponse({"code": "InvalidParameter", "message": "no subscription"}, status_code=400)
        ticket = uuid.uuid4().hex
        self.tickets.add(ticket)
        return JSONResponse({"endpoint": self.url.replace("http", "ws") + "/stream", "ticket": ticket})

    async def token(self, request: Request) -> JSONResponse:
        """``oauth2/accessToken``."""
        body = await request.json()
        self.record(Call("accessToken", body))
        if body.get("appKey") != CLIENT_ID or body.get("appSecret") != CLIENT_SECRET:
            return JSONResponse(
                {"code": "invalidClientIdOrSecret", "message": "wrong appKey or appSecret"}, status_code=400
            )
        return JSONResponse({"accessToken": ACCESS_TOKEN, "expireIn": 7200})

    def _refused(self, request: Request, body: dict[str, Any]) -> JSONResponse | None:
        if request.headers.get("x-acs-dingtalk-access-token") != ACCESS_TOKEN:
            return JSONResponse({"code": "InvalidAuthentication", "message": "token is not valid"}, status_code=401)
        if body.get("robotCode") != CLIENT_ID or body.get("msgKey") not in ("sampleText", "sampleFile"):
            return JSONResponse(
                {"code": "InvalidParameter", "message": "robotCode or msgKey is wrong"}, status_code=400
            )
        param = json.loads(body.get("msgParam") or "null")
        if body["msgKey"] == "sampleText" and len(param.get("content", "")) > MAX_TEXT:
            return JSONResponse({"code": "InvalidParameter", "message": "content is too long"}, status_code=400)
        if body["msgKey"] == "sampleFile" and not {"mediaId", "fileName", "fileType"} <= set(param):
            return JSONResponse(
                {"code": "InvalidParameter", "message": "sampleFile needs mediaId, fileName, fileType"}, status_code=400
            )
        return None

    async def one_to_one(self, request: Request) -> JSONResponse:
        """``robot/oToMessages/batchSend``."""
        body = await request.json()
        self.record(Call("batchSend", body))
        if (refusal := self._refused(request, body)) is not None:
            return refusal
        if body.get("userIds") == [BROKEN_USER]:
            return JSONResponse(
                {"code": "staffId.notExisted", "message": "the staff id does not exist"}, status_code=400
            )
        return JSONResponse(
            {"processQueryKey": f"q{next(self._ids)}", "invalidStaffIdList": [], "flowControlledStaffIdList": []}
        )

    async def group(self, request: Request) -> JSONResponse:
        """``robot/groupMessages/send``."""
        body = await request.json()
        self.record(Call("groupSend", body))
        if (refusal := self._refused(request, body)) is not None:
            return refusal
        if not body.get("openConversationId"):
            return JSONResponse(
                {"code": "InvalidParameter", "message": "openConversationId is required"}, status_code=400
            )
        return JSONResponse({"processQueryKey": f"q{next(self._ids)}"})

    async def upload(self, request: Request) -> JSONResponse:
        """``media/upload`` on the oapi host (errcode style)."""
        if request.query_params.get("access_token") != ACCESS_TOKEN:
            return JSONResponse({"errcode": 40014, "errmsg": "invalid access_token"})
        form = await request.form()
        upload = form["media"]
        data = await upload.read()  # type: ignore[union-attr]
        media_id = f"@media{next(self._ids)}"
        self.record(
            Call(
                "media/upload",
                {"type": request.query_params.get("type"), "media_id": media_id},
                {"media": (str(upload.filename), data)},
            )
        )  # type: ignore[union-attr]
        return JSONResponse(
            {"errcode": 0, "errmsg": "ok", "media_id": media_id, "type": "file", "created_at": int(time.time())}
        )

    async def stream(self, ws: WebSocket) -> None:
        """The stream: accept a valid ticket once, push queued frames, record acks."""
        ticket = ws.query_params.get("ticket", "")
        if ticket not in self.tickets:
            await ws.close(code=4001)
            return
        self.tickets.discard(ticket)
        await ws.accept()
        self.connections += 1
        self._loop, self._outbox = asyncio.get_running_loop(), asyncio.Queue()
        outbox = self._outbox

        async def read() -> None:
            while True:
                frame = json.loads(await ws.receive_text())
                with self.lock:
                    self.acks.append(frame)

        async def write() -> None:
            while True:
                frame = await outbox.get()
                if frame is None:
                    await ws.close()
                    return
                await ws.send_text(json.dumps(frame))

        await pump(read, write)

    def push(self, frame: dict[str, Any] | None) -> None:
        """Send a frame down the open stream (None closes it, as a dropped connection)."""
        self.wait_for(lambda: self._outbox is not None, "the robot to connect")
        assert self._loop is not None and self._outbox is not None
        self._loop.call_soon_threadsafe(self._outbox.put_nowait, frame)

    def send_robot_message(self, data: dict[str, Any]) -> str:
        """Deliver a robot message as a CALLBACK frame; returns the frame's message id."""
        frame_id = uuid.uuid4().hex
        self.push(
            {
                "specVersion": "1.0",
                "type": "CALLBACK",
                "data": json.dumps(data),
                "headers": {
                    "topic": TOPIC,
                    "messageId": frame_id,
                    "contentType": "application/json",
                    "time": str(int(time.time() * 1000)),
                    "appId": CLIENT_ID,
                },
            }
        )
        return frame_id

    def ping(self) -> str:
        """A SYSTEM ping frame, which the SDK must ack with the same data."""
        frame_id = uuid.uuid4().hex
        self.push(
            {
                "specVersion": "1.0",
                "type": "SYSTEM",
                "data": json.dumps({"opaque": frame_id}),
                "headers": {"topic": "ping", "messageId": frame_id, "contentType": "application/json"},
            }
        )
        return frame_id

    def ack(self, frame_id: str) -> dict[str, Any]:
        """Wait for the ack of a frame."""

        def find() -> dict[str, Any] | None:
            with self.lock:
                return next((a for a in self.acks if a.get("headers", {}).get("messageId") == frame_id), None)

        return self.wait_for(find, f"the ack of {frame_id}")

    def message_texts(self, method: str | None = None) -> list[str]:
        """The content of every text message sent (by ``method`` when given)."""
        calls = [c for m in ("batchSend", "groupSend") if method in (None, m) for c in self.named(m)]
        return [json.loads(c.params["msgParam"])["content"] for c in calls if c.params.get("msgKey") == "sampleText"]


def parameters(**extra: Any) -> dict[str, Any]:
    """The channel section for a gateway talking to a fake at ``base_url``."""
    return {"enabled": True, "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, **extra}
