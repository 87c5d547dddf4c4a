"""The :class:`Channel` interface: what the dispatcher needs from one chat platform.

A channel turns platform events into :class:`InboundMessage` and hands them to its
:class:`MessageHandler` (the dispatcher); it sends text and files back to a chat. Channels that
receive events over HTTP (webhooks) also give an ``APIRouter`` the app mounts under
``/channels/<name>``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Protocol

from fastapi import APIRouter


@dataclass(frozen=True)
class InboundMessage:
    """One message a person sent to the bot.

    ``chat_id`` names the conversation (a Telegram chat, a Slack channel, a Feishu chat);
    ``reply_to`` is what a reply should hang under (a Slack thread ts, a Feishu message id), if any.
    """

    channel: str
    chat_id: str
    user_id: str
    text: str
    user_name: str | None = None
    reply_to: str | None = None


class MessageHandler(Protocol):
    """Receives the messages of every channel (the dispatcher)."""

    async def handle(self, channel: "Channel", message: InboundMessage) -> None:
        """React to ``message``; must return quickly (long work goes to a task)."""
        ...


class Channel(ABC):
    """One chat platform. Subclasses set ``name`` and implement start, stop and sending."""

    name: str = ""

    def __init__(self) -> None:
        self.handler: MessageHandler | None = None

    @abstractmethod
    async def start(self, handler: MessageHandler) -> None:
        """Connect to the platform and deliver incoming messages to ``handler``."""

    @abstractmethod
    async def stop(self) -> None:
        """Disconnect; no message is delivered afterwards."""

    @abstractmethod
    async def send_text(self, chat_id: str, text: str, *, reply_to: str | None = None) -> None:
        """Post ``text`` to the chat; raises on a platform error (the caller logs it)."""

    @abstractmethod
    async def send_file(self, chat_id: str, filename: str, data: bytes, *, reply_to: str | None = None) -> None:
        """Upload a file to the chat; raises on a platform error (the caller logs it)."""

    def router(self) -> APIRouter | None:
        """Webhook routes for this platform (mounted under ``/channels/<name>``), if it uses any."""
        return None

    @property
    def max_text(self) -> int:
        """The longest text one message may hold on this platform."""
        return 4000


class ChannelNotReadyError(RuntimeError):
    """A webhook arrived before the channel was started (or after it stopped)."""
