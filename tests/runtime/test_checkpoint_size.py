"""The bytes a thread's checkpoints take, as each checkpointer measures them (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
from langgraph.graph import START, MessagesState, StateGraph

from herdsman.runtime.storage.checkpoint_size import checkpoint_bytes, head_checkpoint_bytes, thread_checkpoint_bytes
from herdsman.runtime.storage.checkpointer import open_checkpointer
from tests.support import make_config

KB = 1024


def _echo(state: MessagesState) -> dict:
    return {"messages": [("ai", "ok")]}


async def _measure(config) -> tuple[int, int, int, int]:
    """Two turns of a 100 KiB message (stored bytes: PostgreSQL's are compressed) on thread a (one on b): a's head, a's total, b's total, none's."""
    async with open_checkpointer(config) as saver:
        graph = StateGraph(MessagesState)
        graph.add_node("echo", _echo)
        graph.add_edge(START, "echo")
        app = graph.compile(checkpointer=saver)
        try:
            for thread, turns in (("a", 2), ("b", 1)):
                for _turn in range(turns):
                    text = secrets.token_urlsafe(75 * KB)  # 100 KiB that does not compress (PostgreSQL's TOAST would)
                    await app.ainvoke({"messages": [("user", text)]}, {"configurable": {"thread_id": thread}})
            sizes = (await head_checkpoint_bytes(saver, "a"), await thread_checkpoint_bytes(saver, "a"),
                     await thread_checkpoint_bytes(saver, "b"), await thread_checkpoint_bytes(saver, "none"))  # fmt: skip
            # both at once (one query on SQLite), or either alone, measure the same
            assert await checkpoint_bytes(saver, "a", head=True, total=True) == sizes[:2]
            assert await checkpoint_bytes(saver, "a", head=False, total=True) == (None, sizes[1])
            assert await checkpoint_bytes(saver, "none", head=True, total=True) == (0, 0)
            return sizes
        finally:  # PostgreSQL is one database for the whole session: leave no threads to other tests
            for thread in ("a", "b"):
                await saver.adelete_thread(thread)


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
async def test_thread_bytes_count_every_copy_of_the_messages(
    home: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    """Thread a's head holds both messages (>= 200 KiB); its checkpoints together hold the first
    message in several copies (more than the head); thread b and an unknown thread are apart."""
    checkpointer = {"type": kind}
    if kind == "postgres":
        checkpointer["url"] = request.getfixturevalue("postgres_url")
    head, total_a, total_b, none = await _measure(make_config(home, checkpointer=checkpointer))
    assert 200 * KB <= head < 300 * KB
    assert total_a > head + 100 * KB
    assert 100 * KB <= total_b < total_a
    assert none == 0
