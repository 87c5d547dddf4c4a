"""Discord through discord.py: the bot's gateway connection in, REST messages out.

The bot answers direct messages, and messages in servers that mention it (the mention is
dropped from the text). It needs the privileged *message content* intent, switched on in the
Discord developer portal. discord.py has no per-client API address: ``base_url`` sets
``discord.http.Route.BASE`` for the process while the channel runs, and the websocket address
(``DiscordWebSocket.DEFAULT_GATEWAY``) is then asked of that API's ``/gateway/bot``, as sharded
clients do; both are put back when the channel stops. Tests point ``base_url`` at a fake server.
"""

from __future__ import annotations

import asyncio
import io
import re
from typing import Any

import discord
import yarl
from discord.gateway import DiscordWebSocket

from herdsman.config.schema import DiscordChannelConfig
from herdsman.logs import get_logger
from herdsman_gateway.channels.base import Channel, InboundMessage, MessageHandler

log = get_logger(__name__)

READY_TIMEOUT = 30.0  # seconds start() waits for the gateway's READY before going on without it


class _Client(discord.Client):
    """A discord.py client that passes messages to its channel."""

    def __init__(self, channel: DiscordChannel, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.herd_channel = channel

    async def on_message(self, message: discord.Message) -> None:
        """Every message the bot sees; the channel decides what to do with it."""
        await self.herd_channel.on_message(message)

    async def on_error(self, event_method: str, /, *args: Any, **kwargs: Any) -> None:
        """An event handler failed: logged, the bot goes on."""
        log.exception("discord_handler_failed", event=event_method)


class DiscordChannel(Channel):
    """A Discord bot answering direct messages and mentions."""

    name = "discord"

    def __init__(self, config: DiscordChannelConfig) -> None:
        super().__init__()
        self.config = config
        self.client: _Client | None = None
        self._connection: asyncio.Task | None = None
        self._saved: tuple[str, yarl.URL] | None = None

    @property
    def max_text(self) -> int:
        """Discord's limit is 2000 characters a message."""
        return 2000

    async def start(self, handler: MessageHandler) -> None:
        """Log in, connect to the gateway in the background and wait (a while) for READY."""
        self.handler = handler
        if self.config.base_url:
            self._saved = (discord.http.Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY)
            discord.http.Route.BASE = self.config.base_url.rstrip("/")
        intents = discord.Intents.default()
        intents.message_content = True
        client = _Client(self, intents=intents)
        try:
            await client.login(self.config.bot_token or "")
            if self.config.base_url:
                _, gateway_url, _ = await client.http.get_bot_gateway()
                DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url)
        except Exception:
            await client.close()
            self._restore_base()
            raise
        self.client = client
        connection = asyncio.create_task(client.connect(reconnect=True), name="discord-gateway")
        self._connection = connection
        ready = asyncio.create_task(client.wait_until_ready())
        done, _ = await asyncio.wait({ready, connection}, timeout=READY_TIMEOUT, return_when=asyncio.FIRST_COMPLETED)
        if connection in done:
            ready.cancel()
            await self.stop()
            connection.result()  # raises why the connection ended
            raise ConnectionError("the Discord gateway connection ended before READY")
        if ready not in done:
            ready.cancel()
            log.warning("discord_not_ready_yet", waited_seconds=READY_TIMEOUT)
        else:
            log.info("discord_connected", bot=str(client.user))

    async def stop(self) -> None:
        """Close the gateway connection."""
        self.handler = None
        client, self.client = self.client, None
        if client is not None:
            await client.close()
        if self._connection is not None:
            await asyncio.gather(self._connection, return_exceptions=True)
            self._connection = None
        self._restore_base()

    def _restore_base(self) -> None:
        if self._saved is not None:
            discord.http.Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY = self._saved
            self._saved = None

    async def on_message(self, message: discord.Message) -> None:
        """Direct messages, and server messages mentioning the bot, go to the dispatcher."""
        client = self.client
        if client is None or self.handler is None or message.author.bot or client.user is None:
            return
        # A server the client has not cached gives no message.guild, but its channel keeps the guild id.
        direct = message.guild is None and getattr(message.channel, "guild_id", None) is None
        mention = re.compile(rf"<@!?{client.user.id}>\s*")
        if not direct and not mention.search(message.content):
            return
        inbound = InboundMessage(
            channel=self.name,
            chat_id=str(message.channel.id),
            user_id=str(message.author.id),
            user_name=message.author.name,
            text=mention.sub("", message.content).strip(),
        )
        await self.handler.handle(self, inbound)

    def _target(self, chat_id: str) -> Any:
        if self.client is None:
            raise RuntimeError("the discord channel is not started")
        return self.client.get_partial_messageable(int(chat_id))

    async def send_text(self, chat_id: str, text: str, *, reply_to: str | None = None) -> None:
        """``POST /channels/{id}/messages`` with the text."""
        await self._target(chat_id).send(content=text)

    async def send_file(self, chat_id: str, filename: str, data: bytes, *, reply_to: str | None = None) -> None:
        """``POST /channels/{id}/messages`` with the file attached."""
        await self._target(chat_id).send(file=discord.File(io.BytesIO(data), filename=filename))
