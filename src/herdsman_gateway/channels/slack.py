"""Slack through slack-bolt: the Events API (``POST /channels/slack/events``) or Socket Mode.

Direct messages (``message.im`` events) and mentions in channels (``app_mention`` events) go to the
dispatcher, with the leading ``@bot`` dropped; other channel messages are not for the bot. Replies
are ``chat.postMessage`` (in the thread the user wrote in, if any) and files go up with
``files_upload_v2``. Slack's client keeps ``/`` for slash commands, so ``!new``, ``!status`` and
``!cancel`` work in messages, and slash commands whose name ends with ``new``, ``status`` or
``cancel`` (``/herd-new``) work when the app defines them. Bolt checks every Events API request's
signature (``signing_secret``) before anything runs.
"""

from __future__ import annotations

import json
import re
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from herdsman.config.schema import SlackChannelConfig
from herdsman.logs import get_logger
from herdsman_gateway.channels.base import Channel, InboundMessage, MessageHandler
from herdsman_gateway.channels.commands import KNOWN

log = get_logger(__name__)

MENTION = re.compile(r"^\s*<@[A-Z0-9]+>\s*")
IGNORED_SUBTYPES = {"bot_message", "message_changed", "message_deleted", "channel_join", "channel_leave"}


def slash_command_text(command: str, text: str) -> str:
    """A slash command (``/herd-status``) as the ``/status`` text the dispatcher parses."""
    name = command.lstrip("/").lower()
    word = next((w for w in KNOWN if name == w or name.endswith(("-" + w, "_" + w))), name)
    return f"/{word} {text}".strip()


class SlackChannel(Channel):
    """A Slack app answering direct messages and channel messages."""

    name = "slack"

    def __init__(self, config: SlackChannelConfig) -> None:
        super().__init__()
        self.config = config
        extra: dict[str, Any] = {"base_url": config.base_url} if config.base_url else {}
        self.client = AsyncWebClient(token=config.bot_token, **extra)
        self.app = self.build_app()
        self.requests = AsyncSlackRequestHandler(self.app)
        self._socket: Any = None

    @property
    def max_text(self) -> int:
        """Slack truncates messages past 40,000 characters; keep them readable."""
        return 12000

    def build_app(self) -> AsyncApp:
        """The bolt app with this channel's listeners."""
        app = AsyncApp(
            client=self.client,
            token=self.config.bot_token,
            signing_secret=self.config.signing_secret or "unused-in-socket-mode",
            request_verification_enabled=self.config.mode == "events",
            raise_error_for_unhandled_request=False,
        )
        app.event("message")(self._on_message)
        app.event("app_mention")(self._on_mention)
        app.command(re.compile(r"^/.+"))(self._on_command)
        app.error(self._on_error)
        return app

    async def start(self, handler: MessageHandler) -> None:
        """Accept events; in Socket Mode, open the websocket."""
        self.handler = handler
        if self.config.mode == "socket":
            from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

            self._socket = AsyncSocketModeHandler(self.app, self.config.app_token)
            await self._socket.connect_async()
        log.info("slack_ready", mode=self.config.mode)

    async def stop(self) -> None:
        """Stop accepting events."""
        self.handler = None
        socket, self._socket = self._socket, None
        if socket is not None:
            await socket.close_async()

    async def _on_message(self, event: dict[str, Any]) -> None:
        """A message event: direct messages from people go to the dispatcher."""
        if event.get("channel_type") != "im":
            return  # channel messages reach the bot as app_mention events when they are for it
        await self._on_mention(event)

    async def _on_mention(self, event: dict[str, Any]) -> None:
        """An app_mention (or a direct message): hand it to the dispatcher, mention dropped."""
        if event.get("bot_id") or event.get("subtype") in IGNORED_SUBTYPES or not event.get("user"):
            return
        await self._deliver(
            event["channel"], event["user"], MENTION.sub("", event.get("text") or ""), event.get("thread_ts")
        )

    async def _on_command(self, ack: Any, command: dict[str, Any]) -> None:
        """A slash command: acknowledged at once, then dispatched like ``/word``."""
        await ack()
        text = slash_command_text(command.get("command", ""), command.get("text") or "")
        await self._deliver(command["channel_id"], command["user_id"], text, None, user_name=command.get("user_name"))

    async def _deliver(
        self, channel: str, user: str, text: str, thread_ts: str | None, user_name: str | None = None
    ) -> None:
        if self.handler is None:
            return
        await self.handler.handle(
            self, InboundMessage(self.name, channel, user, text, user_name=user_name, reply_to=thread_ts)
        )

    async def _on_error(self, error: Exception, body: dict[str, Any]) -> None:
        """A listener failed: logged, the app goes on."""
        log.warning("slack_listener_failed", error=f"{type(error).__name__}: {error}")

    async def send_text(self, chat_id: str, text: str, *, reply_to: str | None = None) -> None:
        """``chat.postMessage`` to the channel (in the thread ``reply_to``, if given)."""
        await self.client.chat_postMessage(channel=chat_id, text=text, thread_ts=reply_to)

    async def send_file(self, chat_id: str, filename: str, data: bytes, *, reply_to: str | None = None) -> None:
        """Upload a file to the channel with ``files_upload_v2``."""
        await self.client.files_upload_v2(channel=chat_id, file=data, filename=filename, thread_ts=reply_to)

    def router(self) -> APIRouter | None:
        """``POST /events`` (Events API: events, slash commands, URL verification)."""
        if self.config.mode != "events":
            return None
        router = APIRouter()

        @router.post("/events", summary="Slack Events API")
        async def slack_events(request: Request) -> Response:
            """A signed request from Slack; 401 with a bad signature, 400 when malformed."""
            return await self.receive(request)

        return router

    async def receive(self, request: Request) -> Response:
        """Check the body's shape, then let bolt verify the signature and dispatch."""
        if self.handler is None:
            return JSONResponse({"detail": "the slack channel is not running; try again later"}, status_code=503)
        body = await request.body()
        if "json" in request.headers.get("content-type", ""):
            try:
                if not isinstance(json.loads(body or b"null"), dict):
                    raise ValueError("not a JSON object")
            except ValueError as exc:
                log.warning("slack_request_malformed", error=str(exc))
                return JSONResponse({"detail": f"malformed Slack request: {exc}"}, status_code=400)
        return await self.requests.handle(request)
