"""The :class:`Channel` interface: what the dispatcher needs from one chat platform.

A channel turns platform events into :class:`InboundMessage` and hands them to its
:class:`MessageHandler` (the dispatcher); it sends text and files back to a chat. Channels that
receive events over HTTP (webhooks) also give an ``APIRouter`` the app mounts under
``/channels/<name>``.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections import OrderedDict
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

    async def handle(self, channel: Channel, message: InboundMessage) -> None:
        """React to ``message``; must return quickly (long work goes to a task)."""
        ...


class Channel(ABC):
    """One chat platform. Subclasses set ``name`` and implement start, stop and sending."""

    name: str = ""

    def __init__(self) -> None:
        self.handler: MessageHandler | None = None
        self._handing: set[asyncio.Task] = set()

    def hand_over(self, message: InboundMessage) -> None:
        """Give ``message`` to the handler in a task, so a webhook can be answered at once."""
        if self.handler is None:
            return
        task = asyncio.create_task(self.handler.handle(self, message), name=f"{self.name}-message")
        self._handing.add(task)
        task.add_done_callback(self._handing.discard)

    async def handed_over(self) -> None:
        """Wait for the messages being handed over (on stop)."""
        await asyncio.gather(*self._handing, return_exceptions=True)

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

    def problem(self) -> str | None:
        """What is wrong with a started channel now (a dropped connection), or None when it is well."""
        return None

    def router(self) -> APIRouter | None:
        """Webhook routes for this platform (mounted under ``/channels/<name>``), if it uses any."""
        return None

    @property
    def max_text(self) -> int:
        """The longest text one message may hold on this platform."""
        return 4000

    def text_size(self, text: str) -> int:
        """The size of ``text`` in the unit of :attr:`max_text` (characters; a platform counting bytes overrides it)."""
        return len(text)


class RecentIds:
    """The last ``size`` event or message ids seen: platforms re-deliver what they think was missed."""

    def __init__(self, size: int = 1000) -> None:
        self.size = size
        self._seen: OrderedDict[str, None] = OrderedDict()

    def first_time(self, key: str | None) -> bool:
        """False for an id seen before (a re-delivery); True, remembered, otherwise (and for no id)."""
        if not key:
            return True
        if key in self._seen:
            return False
        self._seen[key] = None
        while len(self._seen) > self.size:
            self._seen.popitem(last=False)
        return True


class ChannelNotReadyError(RuntimeError):
    """A webhook arrived before the channel was started (or after it stopped)."""
