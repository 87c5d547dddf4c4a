"""Start the configured channels with the gateway and stop them with it.

The app builds a :class:`ChannelManager` when it is created (so webhook routes can be mounted
under ``/channels/<name>``) and starts it in its lifespan, once the run manager exists. A
channel that fails to start is logged, left out and reported by ``GET /api/channels``; the
others and the gateway keep going. Bark, a notifier rather than a chat, is added to the run
manager's listeners so it hears of every run that ends.

``GET /api/channels`` lists every platform Herdsman knows, each with ``state``: ``off`` (not
enabled), ``running``, ``degraded`` (started, but its connection or last push has a problem) or
``failed`` (did not start), and ``error`` saying why; the web UI's settings show it.
"""

from __future__ import annotations

import re
from importlib import import_module

from fastapi import APIRouter, Depends, FastAPI

from herdsman.config.schema import ChannelsConfig
from herdsman.logs import get_logger
from herdsman_gateway.auth import current_user
from herdsman_gateway.channels.bark import BarkNotifier
from herdsman_gateway.channels.base import Channel
from herdsman_gateway.channels.dispatcher import Dispatcher
from herdsman_gateway.container import Gateway

log = get_logger(__name__)

# channel name -> "module:Class" (imported only when the channel is enabled)
PLATFORMS = {
    "telegram": "herdsman_gateway.channels.telegram:TelegramChannel",
    "slack": "herdsman_gateway.channels.slack:SlackChannel",
    "feishu": "herdsman_gateway.channels.feishu:FeishuChannel",
    "discord": "herdsman_gateway.channels.discord:DiscordChannel",
    "dingtalk": "herdsman_gateway.channels.dingtalk:DingTalkChannel",
    "wecom": "herdsman_gateway.channels.wecom:WeComChannel",
    "whatsapp": "herdsman_gateway.channels.whatsapp:WhatsAppChannel",
}


SECRET_FIELD = re.compile(r"token|secret|key|password", re.IGNORECASE)
SECRET_PARAM = re.compile(r"((?:access_token|corpsecret|secret|token|key|password)=)[^&\s\"')]+", re.IGNORECASE)


def redact(text: str, section: object) -> str:
    """``text`` without the secrets of a channel's config ``section`` (its token, secret and key
    fields, and any ``secret=...``-like query parameter: HTTP errors often quote the URL)."""
    text = SECRET_PARAM.sub(r"\1***", text)
    for field, value in vars(section).items():
        if SECRET_FIELD.search(field) and isinstance(value, str) and len(value) >= 4:
            text = text.replace(value, "***")
    return text


def build_channels(config: ChannelsConfig) -> list[Channel]:
    """A channel object for each enabled platform in ``config``."""
    channels: list[Channel] = []
    for name, target in PLATFORMS.items():
        section = getattr(config, name)
        if not section.enabled:
            continue
        module, _, cls = target.partition(":")
        channels.append(getattr(import_module(module), cls)(section))
    return channels


def _row(name: str, kind: str, enabled: bool, running: bool, error: str | None) -> dict[str, object]:
    """One line of ``GET /api/channels``."""
    if not enabled:
        state = "off"
    elif not running:
        state = "failed"
    else:
        state = "degraded" if error else "running"
    return {"name": name, "kind": kind, "enabled": enabled, "running": running, "state": state, "error": error}


class ChannelManager:
    """The enabled channels of one app and the dispatcher they share."""

    def __init__(self, config: ChannelsConfig, channels: list[Channel] | None = None) -> None:
        """``channels`` defaults to :func:`build_channels` of ``config``."""
        self.config = config
        self.channels = build_channels(config) if channels is None else channels
        self.running: list[Channel] = []
        self.errors: dict[str, str] = {}
        self.dispatcher: Dispatcher | None = None
        self.bark: BarkNotifier | None = None

    def mount(self, app: FastAPI) -> None:
        """Add the webhook routes of the channels that have some, under ``/channels/<name>``."""
        for channel in self.channels:
            router = channel.router()
            if router is not None:
                app.include_router(router, prefix=f"/channels/{channel.name}", tags=["channels"])
        status = APIRouter(tags=["channels"])
        status.add_api_route(
            "/api/channels",
            self.status,
            methods=["GET"],
            summary="Status of the IM channels",
            dependencies=[Depends(current_user)],
        )
        app.include_router(status)

    def status(self) -> list[dict[str, object]]:
        """Every known platform: enabled or not, its state, and why when it is not well."""
        built = {c.name: c for c in self.channels}
        running = {c.name for c in self.running}
        rows: list[dict[str, object]] = []
        for name in PLATFORMS:
            channel = built.get(name)
            problem = channel.problem() if channel is not None and name in running else None
            error = self.errors.get(name) or (redact(problem, getattr(self.config, name)) if problem else None)
            rows.append(_row(name, "chat", channel is not None, name in running, error))
        bark = self.bark
        error = redact(bark.error, self.config.bark) if bark is not None and bark.error else None
        rows.append(_row("bark", "notify", self.config.bark.enabled, bark is not None, error))
        return rows

    async def start(self, gateway: Gateway) -> None:
        """Start every channel against ``gateway``; a failing one is logged and skipped."""
        allowed = {c.name: list(getattr(self.config, c.name).allowed_users) for c in self.channels}
        self.dispatcher = Dispatcher(gateway, self.config, allowed)
        for channel in self.channels:
            try:
                await channel.start(self.dispatcher)
            except Exception as exc:  # noqa: BLE001 - one broken platform must not stop the gateway
                self.errors[channel.name] = redact(f"{type(exc).__name__}: {exc}", getattr(self.config, channel.name))
                log.error("channel_start_failed", channel=channel.name, error=self.errors[channel.name])
                continue
            self.running.append(channel)
            log.info("channel_started", channel=channel.name, allowed_users=len(allowed[channel.name]))
        if self.config.bark.enabled:
            self.bark = BarkNotifier(self.config.bark, gateway.threads)
            gateway.runs.listeners.append(self.bark)
            log.info("bark_started", min_seconds=self.config.bark.min_seconds)

    async def stop(self) -> None:
        """Stop the running channels and the dispatcher's follow-up tasks."""
        for channel in reversed(self.running):
            try:
                await channel.stop()
            except Exception as exc:  # noqa: BLE001 - keep stopping the others
                log.warning("channel_stop_failed", channel=channel.name, error=str(exc))
        self.running.clear()
        if self.dispatcher is not None:
            await self.dispatcher.close()
        if self.bark is not None:
            await self.bark.close()
