"""Which Herdsman thread each chat talks to, kept in the gateway's record store.

The mapping lives beside the thread records (SQLite or Postgres, like them), so a restarted
gateway continues each chat's conversation. ``/new`` points the chat at a fresh thread; the old
one stays and can still be read through the API.
"""

from __future__ import annotations

import uuid

from langgraph.store.base import BaseStore

NAMESPACE = ("herdsman", "channels", "threads")


def chat_key(channel: str, chat_id: str) -> str:
    """The store key of one chat of one channel."""
    return f"{channel}:{chat_id}"


class ChatThreads:
    """Persistent map (channel, chat id) -> thread id."""

    def __init__(self, store: BaseStore) -> None:
        self.store = store

    async def get(self, channel: str, chat_id: str) -> str | None:
        """The chat's current thread, or None when it has none yet."""
        item = await self.store.aget(NAMESPACE, chat_key(channel, chat_id))
        return item.value["thread_id"] if item is not None else None

    async def current(self, channel: str, chat_id: str) -> str:
        """The chat's thread, created (and saved) on first use."""
        return await self.get(channel, chat_id) or await self.new(channel, chat_id)

    async def new(self, channel: str, chat_id: str) -> str:
        """Point the chat at a fresh thread id and return it."""
        thread_id = str(uuid.uuid4())
        await self.store.aput(
            NAMESPACE, chat_key(channel, chat_id), {"thread_id": thread_id, "channel": channel, "chat_id": chat_id}
        )
        return thread_id
