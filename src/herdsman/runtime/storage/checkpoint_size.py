"""How many bytes a thread's checkpoints take, so a run on an overgrown thread is refused.

Every checkpoint stores the thread's message list again (LangGraph saves the channels each step
changed, and the message list changes at every step), so a thread's storage grows with the
square of its state: three 20 MB messages made 1.26 GB of SQLite, and seventeen 1 MB ones
1.48 GB. ``runs.max_input_bytes`` bounds what one run adds; :func:`head_checkpoint_bytes` (the
state every further step copies, ``runs.max_thread_state_bytes``) and
:func:`thread_checkpoint_bytes` (everything stored for the thread,
``runs.max_thread_checkpoint_bytes``) are read when a run is created, both at once by
:func:`checkpoint_bytes` (on SQLite one query: one hand-off to the connection's thread, not two).

Measured where the bytes are: on SQLite and PostgreSQL by one indexed query (SQLite's
``length()`` of a blob and PostgreSQL's ``pg_column_size`` read the row header, not the blob:
about 0.2 ms per run for a 700 MB thread on SQLite; PostgreSQL's are the stored, compressed sizes);
in memory by summing the stored byte strings. A
checkpointer of another kind is measured by its head checkpoint only. Written here because the
checkpointers have no size API.
"""

from __future__ import annotations

from typing import Any

_SQLITE_HEAD = (
    "SELECT length(checkpoint) FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
    "ORDER BY checkpoint_id DESC LIMIT 1"
)
_SQLITE_TOTAL = (
    "SELECT (SELECT coalesce(sum(length(checkpoint) + length(metadata)), 0) FROM checkpoints WHERE thread_id = ?)"
    " + (SELECT coalesce(sum(length(value)), 0) FROM writes WHERE thread_id = ?)"
)
_POSTGRES_TOTAL = (
    "SELECT (SELECT coalesce(sum(pg_column_size(checkpoint) + pg_column_size(metadata)), 0) FROM checkpoints "
    "WHERE thread_id = %s) + (SELECT coalesce(sum(pg_column_size(blob)), 0) FROM checkpoint_blobs WHERE thread_id = %s)"
    " + (SELECT coalesce(sum(pg_column_size(blob)), 0) FROM checkpoint_writes WHERE thread_id = %s) AS total"
)


def _kind(saver: Any) -> str:
    name = type(saver).__name__
    if name == "AsyncSqliteSaver" and hasattr(saver, "conn") and hasattr(saver, "lock"):
        return "sqlite"
    if hasattr(saver, "aquery_one"):  # sqlite_threaded.ThreadedSqliteSaver
        return "sqlite"
    if name == "AsyncPostgresSaver" and hasattr(saver, "_cursor"):
        return "postgres"
    if name == "InMemorySaver" and hasattr(saver, "storage") and hasattr(saver, "blobs"):
        return "memory"
    return "other"


async def _sqlite_one(saver: Any, query: str, args: tuple[Any, ...]) -> int:
    if hasattr(saver, "aquery_one"):
        row = await saver.aquery_one(query, args)
        return int(row[0] or 0) if row else 0
    await saver.setup()
    async with saver.lock, saver.conn.execute(query, args) as cursor:
        row = await cursor.fetchone()
    return int(row[0] or 0) if row else 0


async def head_checkpoint_bytes(saver: Any, thread_id: str) -> int:
    """Bytes of the newest checkpoint of ``thread_id`` (0 when it has none). On SQLite the
    checkpoint holds every channel's value; elsewhere it is measured serialized with its values."""
    if _kind(saver) == "sqlite":
        return await _sqlite_one(saver, _SQLITE_HEAD, (thread_id,))
    head = await saver.aget_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    if head is None:
        return 0
    _, data = saver.serde.dumps_typed(head.checkpoint)
    return len(data)


async def thread_checkpoint_bytes(saver: Any, thread_id: str) -> int:
    """Bytes stored for ``thread_id`` by the checkpointer: checkpoints, channel values, pending
    writes, every namespace (the head checkpoint's bytes for a checkpointer of another kind)."""
    kind = _kind(saver)
    if kind == "sqlite":
        return await _sqlite_one(saver, _SQLITE_TOTAL, (thread_id, thread_id))
    if kind == "postgres":
        async with saver._cursor() as cursor:
            await cursor.execute(_POSTGRES_TOTAL, (thread_id, thread_id, thread_id))
            row = await cursor.fetchone()
        return int((row or {}).get("total") or 0)
    if kind == "memory":
        total = sum(
            len(c[1]) + len(m[1]) for ns in saver.storage.get(thread_id, {}).values() for c, m, _ in ns.values()
        )
        total += sum(len(v[1]) for key, v in list(saver.blobs.items()) if key[0] == thread_id)
        total += sum(len(w[2][1]) for key, ws in list(saver.writes.items()) if key[0] == thread_id for w in ws.values())
        return total
    return await head_checkpoint_bytes(saver, thread_id)


async def checkpoint_bytes(saver: Any, thread_id: str, *, head: bool, total: bool) -> tuple[int | None, int | None]:
    """(:func:`head_checkpoint_bytes`, :func:`thread_checkpoint_bytes`) of ``thread_id``, each
    only when asked (None otherwise); on SQLite both in one query."""
    if head and total and hasattr(saver, "aquery_one"):  # sqlite_threaded.ThreadedSqliteSaver
        row = await saver.aquery_one(f"SELECT ({_SQLITE_HEAD}), ({_SQLITE_TOTAL})", (thread_id, thread_id, thread_id))
        return (int(row[0] or 0), int(row[1] or 0)) if row else (0, 0)
    return (
        await head_checkpoint_bytes(saver, thread_id) if head else None,
        await thread_checkpoint_bytes(saver, thread_id) if total else None,
    )
