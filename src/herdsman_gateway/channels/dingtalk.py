"""DingTalk in Stream mode through dingtalk-stream: a websocket the gateway opens, no public address.

The gateway asks DingTalk for a stream endpoint (``POST /v1.0/gateway/connections/open`` with
the app's client id and secret, subscribing to the robot-message topic), connects to it, and
receives each message a person sends the robot as a callback frame. The official SDK's
``DingTalkStreamClient`` routes the frames (system pings, callbacks) and writes the acks its
handlers return; ``ChatbotMessage`` parses the robot messages. The SDK's own ``start()`` loop
cannot be stopped (it swallows cancellation and reconnects) and reads its host from an
environment variable, so this module opens the connection itself and keeps a small reconnect
loop with back-off; everything on the wire inside the socket is the SDK's.

Answers go through the robot API: ``/v1.0/robot/oToMessages/batchSend`` for a one-to-one chat
and ``/v1.0/robot/groupMessages/send`` for a group, with the app's access token
(``/v1.0/oauth2/accessToken``); text is kept to 4000 characters a message. Files are uploaded
with ``/media/upload`` (the older ``oapi`` host) and sent as ``sampleFile`` messages. These
calls are made with httpx: the SDK's helpers for them are blocking ``requests`` calls to fixed
hosts, and Alibaba's generated ``alibabacloud_dingtalk`` SDK is a large dependency for four calls.
"""

from __future__ import annotations

import asyncio
import json
import logging
import platform
import posixpath
import time
from typing import Any

import httpx
import websockets
from dingtalk_stream import (
    AckMessage,
    CallbackHandler,
    CallbackMessage,
    ChatbotMessage,
    Credential,
    DingTalkStreamClient,
)
from dingtalk_stream.version import VERSION_STRING

from herdsman.config.schema import DingTalkChannelConfig
from herdsman.logs import get_logger
from herdsman_gateway.channels.base import Channel, InboundMessage, MessageHandler, RecentIds

log = get_logger(__name__)

DEFAULT_API = "https://api.dingtalk.com"
DEFAULT_OAPI = "https://oapi.dingtalk.com"
RECONNECT_SECONDS = (1, 2, 5, 10, 30)
GROUP, USER = "group:", "user:"


class DingTalkApiError(RuntimeError):
    """A DingTalk API refused a call."""


def chat_of(message: ChatbotMessage) -> str:
    """The chat id of a robot message: ``group:<conversation>`` or ``user:<staff id>``."""
    if message.conversation_type == "2":
        return GROUP + str(message.conversation_id)
    return USER + str(message.sender_staff_id or message.sender_id)


class _Inbox(CallbackHandler):
    """The SDK handler of robot messages: parse, drop repeats, hand over, ack at once."""

    def __init__(self, channel: DingTalkChannel) -> None:
        super().__init__()
        self.channel = channel
        self.seen = RecentIds()

    async def process(self, callback: CallbackMessage) -> tuple[int, str]:
        """One robot message; acked with 200 (DingTalk re-sends unacknowledged ones)."""
        message = ChatbotMessage.from_dict(callback.data)
        if not self.seen.first_time(message.message_id):
            return AckMessage.STATUS_OK, "OK"
        text = (
            message.text.content.strip() if message.message_type == "text" and message.text else "(a non-text message)"
        )
        user = str(message.sender_staff_id or message.sender_id or "")
        self.channel.hand_over(InboundMessage(self.channel.name, chat_of(message), user, text))
        return AckMessage.STATUS_OK, "OK"


class DingTalkChannel(Channel):
    """A DingTalk robot answering in its one-to-one chats and the groups it is in."""

    name = "dingtalk"

    def __init__(self, config: DingTalkChannelConfig) -> None:
        super().__init__()
        self.config = config
        self.api = (config.base_url or DEFAULT_API).rstrip("/")
        self.oapi = (config.base_url or DEFAULT_OAPI).rstrip("/")
        self.robot_code = config.robot_code or config.client_id or ""
        # the SDK's own logger would add a stdout handler at INFO; a plain one follows the app's logging
        self.stream = DingTalkStreamClient(
            Credential(config.client_id, config.client_secret), logger=logging.getLogger("dingtalk_stream")
        )
        self.stream.register_callback_handler(ChatbotMessage.TOPIC, _Inbox(self))
        self.http: httpx.AsyncClient | None = None
        self._token: tuple[str, float] | None = None
        self._loop: asyncio.Task | None = None
        self.connected = asyncio.Event()
        self.last_error: str | None = None

    @property
    def max_text(self) -> int:
        """Kept to 4000 characters a text message."""
        return 4000

    async def start(self, handler: MessageHandler) -> None:
        """Open a stream connection (checks the credentials), then keep it up in a task."""
        self.http = httpx.AsyncClient(timeout=30)
        try:
            first = await self.open_connection()
        except Exception:
            await self.http.aclose()
            self.http = None
            raise
        self.handler = handler
        self._loop = asyncio.create_task(self._keep_connected(first), name="dingtalk-stream")

    async def stop(self) -> None:
        """Close the stream and the HTTP client; no message is delivered afterwards."""
        self.handler = None
        loop, self._loop = self._loop, None
        if loop is not None:
            loop.cancel()
            await asyncio.gather(loop, return_exceptions=True)
        await self.handed_over()
        http, self.http = self.http, None
        if http is not None:
            await http.aclose()

    def problem(self) -> str | None:
        """Set while the stream is down and being reconnected."""
        if self.connected.is_set():
            return None
        if self.last_error is None:
            return "connecting to the DingTalk stream"
        return f"the stream is reconnecting (last error: {self.last_error})"

    async def open_connection(self) -> dict[str, str]:
        """``connections/open``: the websocket endpoint and ticket for one connection."""
        body = {
            "clientId": self.config.client_id,
            "clientSecret": self.config.client_secret,
            "subscriptions": [{"type": "CALLBACK", "topic": ChatbotMessage.TOPIC}],
            "ua": f"dingtalk-sdk-python/v{VERSION_STRING}-union herdsman",
            "localIp": "",
        }
        headers = {"User-Agent": f"DingTalkStream/1.0 SDK/{VERSION_STRING} Python/{platform.python_version()}"}
        return await self._json(
            "POST", f"{self.api}/v1.0/gateway/connections/open", "opening a stream", json=body, headers=headers
        )

    async def _keep_connected(self, connection: dict[str, str]) -> None:
        """Serve the stream; reconnect with back-off when it drops, until cancelled."""
        failures = 0
        while True:
            try:
                if connection is None:
                    connection = await self.open_connection()
                await self._serve(connection)
                failures = 0
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the network fails; the channel retries
                failures += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.warning("dingtalk_stream_failed", error=self.last_error, attempt=failures)
            finally:
                self.connected.clear()
            connection = None  # type: ignore[assignment]  # tickets are single-use
            await asyncio.sleep(RECONNECT_SECONDS[min(failures, len(RECONNECT_SECONDS) - 1)])

    async def _serve(self, connection: dict[str, str]) -> None:
        """One websocket connection: each frame is routed by the SDK, which writes the ack."""
        uri = f"{connection['endpoint']}?ticket={connection['ticket']}"
        async with websockets.connect(uri, ping_interval=60) as socket:
            self.stream.websocket = socket
            self.connected.set()
            log.info("dingtalk_connected")
            async for raw in socket:
                if await self.stream.route_message(json.loads(raw)) == DingTalkStreamClient.TAG_DISCONNECT:
                    log.info("dingtalk_stream_disconnect_asked")
                    return

    # -- sending ---------------------------------------------------------------------------

    async def _json(self, method: str, url: str, what: str, **kwargs: Any) -> dict[str, Any]:
        """One HTTP call; DingTalkApiError with DingTalk's message when it fails."""
        if self.http is None:
            raise RuntimeError("the dingtalk channel is not started")
        response = await self.http.request(method, url, **kwargs)
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.is_error or not isinstance(body, dict) or body.get("errcode", 0) != 0:
            detail = body.get("message") or body.get("errmsg") if isinstance(body, dict) else response.text[:200]
            raise DingTalkApiError(f"{what} failed: HTTP {response.status_code}: {detail}")
        return body

    async def access_token(self) -> str:
        """The app's access token, fetched again five minutes before it expires."""
        if self._token is None or time.monotonic() > self._token[1]:
            body = {"appKey": self.config.client_id, "appSecret": self.config.client_secret}
            answer = await self._json(
                "POST", f"{self.api}/v1.0/oauth2/accessToken", "getting an access token", json=body
            )
            self._token = (answer["accessToken"], time.monotonic() + int(answer.get("expireIn", 7200)) - 300)
        return self._token[0]

    async def _robot_send(self, chat_id: str, key: str, param: dict[str, Any]) -> None:
        """Send one robot message of template ``key`` to a group or a person."""
        body: dict[str, Any] = {
            "robotCode": self.robot_code,
            "msgKey": key,
            "msgParam": json.dumps(param, ensure_ascii=False),
        }
        if chat_id.startswith(GROUP):
            url, body["openConversationId"] = f"{self.api}/v1.0/robot/groupMessages/send", chat_id.removeprefix(GROUP)
        else:
            url, body["userIds"] = f"{self.api}/v1.0/robot/oToMessages/batchSend", [chat_id.removeprefix(USER)]
        headers = {"x-acs-dingtalk-access-token": await self.access_token()}
        await self._json("POST", url, "sending a message", json=body, headers=headers)

    async def send_text(self, chat_id: str, text: str, *, reply_to: str | None = None) -> None:
        """A ``sampleText`` message."""
        await self._robot_send(chat_id, "sampleText", {"content": text})

    async def send_file(self, chat_id: str, filename: str, data: bytes, *, reply_to: str | None = None) -> None:
        """Upload the file (``media/upload``), then send it as a ``sampleFile`` message."""
        token = await self.access_token()
        uploaded = await self._json(
            "POST",
            f"{self.oapi}/media/upload",
            "uploading a file",
            params={"access_token": token, "type": "file"},
            files={"media": (filename, data)},
        )
        kind = posixpath.splitext(filename)[1].lstrip(".").lower() or "file"
        await self._robot_send(
            chat_id, "sampleFile", {"mediaId": uploaded["media_id"], "fileName": filename, "fileType": kind}
        )
