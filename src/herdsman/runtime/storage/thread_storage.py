"""How many bytes a thread's checkpoints take: the report of LangGraph's ``GET /threads/{id}/storage``.

LangGraph's server reads its own tables for it; here the checkpointer may be any of LangGraph's
(memory, SQLite, PostgreSQL), so the report counts what every one of them stores, the
serialized checkpoints, channel values and pending writes, listed through the checkpointer's
public ``alist`` and sized with its own serializer. The shape is the server's:
``{total_bytes, checkpoints{count, bytes}, channel_values{count, bytes, by_channel}, pending_writes{count, bytes}}``.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

SCAN_LIMIT = 10_000  # checkpoints read at most (a report on a longer thread says so in ``truncated``)


def _size(saver: BaseCheckpointSaver, value: Any) -> int:
    """Bytes of ``value`` as the checkpointer's serializer writes it."""
    return len(saver.serde.dumps_typed(value)[1])


async def thread_storage(saver: BaseCheckpointSaver, thread_id: str) -> dict[str, Any]:
    """The storage report of ``thread_id`` (every namespace: subgraphs and sub-agents too)."""
    checkpoints = checkpoint_bytes = writes = write_bytes = 0
    by_channel: dict[str, dict[str, int]] = {}
    seen_versions: set[tuple[str, str, str]] = set()
    async for item in saver.alist({"configurable": {"thread_id": thread_id}}, limit=SCAN_LIMIT):
        checkpoints += 1
        checkpoint = item.checkpoint
        checkpoint_bytes += _size(saver, {k: v for k, v in checkpoint.items() if k != "channel_values"})
        ns = (item.config.get("configurable") or {}).get("checkpoint_ns", "")
        versions = checkpoint.get("channel_versions") or {}
        for channel, value in (checkpoint.get("channel_values") or {}).items():
            key = (ns, channel, str(versions.get(channel)))
            if key in seen_versions:  # one version of a channel is stored once, whatever refers to it
                continue
            seen_versions.add(key)
            entry = by_channel.setdefault(channel, {"versions": 0, "bytes": 0})
            entry["versions"] += 1
            entry["bytes"] += _size(saver, value)
        for _task, _channel, value in item.pending_writes or ():
            writes += 1
            write_bytes += _size(saver, value)
    channel_bytes = sum(e["bytes"] for e in by_channel.values())
    return {
        "total_bytes": checkpoint_bytes + channel_bytes + write_bytes,
        "checkpoints": {"count": checkpoints, "bytes": checkpoint_bytes},
        "channel_values": {
            "count": sum(e["versions"] for e in by_channel.values()),
            "bytes": channel_bytes,
            "by_channel": by_channel,
        },
        "pending_writes": {"count": writes, "bytes": write_bytes},
        "truncated": checkpoints >= SCAN_LIMIT,
    }
