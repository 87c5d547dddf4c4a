"""LangGraph's SQLite checkpointer and store, reached from async code in one hand-off per call.

LangGraph's async SQLite classes (``AsyncSqliteSaver``, ``AsyncSqliteStore``) go through
aiosqlite, one thread round trip per statement: saving a checkpoint took three, a store ``aput``
five, an ``aget`` six; a streamed run of two model calls made about a hundred (see
``serial_thread.py`` for what one costs). These subclasses of LangGraph's *sync* classes keep
their SQL, tables and semantics as they are and run each whole call (``put``, ``get_tuple``,
``batch``...) on the connection's :class:`~herdsman.runtime.storage.serial_thread.SerialThread`: one round
trip a call, and a burst of calls shares its wake-ups.

A run reads its thread's head checkpoint before it starts the graph, whose loop then reads it
again: :meth:`ThreadedSqliteSaver.aget_head` keeps what it read for the next read of the same
head in the same task (once, and only while nothing of that thread was written since through
this saver), so the graph's read costs no second trip.

The sync methods stay usable from any thread (LangGraph's own lock guards the connection); the
async ones must not be awaited after :func:`open_sqlite_saver` / :func:`open_sqlite_store` exits.
"""

from __future__ import annotations

import sqlite3
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
)
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.base import Op, Result
from langgraph.store.sqlite import SqliteStore

from herdsman.runtime.storage.serial_thread import SerialThread

T = TypeVar("T")


@dataclass(eq=False)
class _Head:
    """A thread's head checkpoint as :meth:`ThreadedSqliteSaver.aget_head` read it, for one more read."""

    saver: ThreadedSqliteSaver
    thread_id: str
    value: CheckpointTuple | None = None
    spent: bool = False  # taken, or a checkpoint of the thread was written since it was read

    def take(self, saver: ThreadedSqliteSaver, config: Any) -> bool:
        """Whether ``config`` asks ``saver`` for this head, and it is still the head; True once at most."""
        conf = (config or {}).get("configurable") or {}
        if (
            self.spent
            or saver is not self.saver
            or str(conf.get("thread_id")) != self.thread_id
            or conf.get("checkpoint_ns", "")
            or get_checkpoint_id(config)
        ):
            return False
        self.spent = True
        return True


_READ_HEAD: ContextVar[_Head | None] = ContextVar("herdsman_read_head", default=None)


def _thread_of(config: Any) -> str:
    return str(((config or {}).get("configurable") or {}).get("thread_id"))


class ThreadedSqliteSaver(SqliteSaver):
    """``SqliteSaver`` whose async methods run the sync ones on the connection's thread."""

    def __init__(self, conn: sqlite3.Connection, thread: SerialThread, **kwargs: Any) -> None:
        """``conn`` (opened with ``check_same_thread=False``) is used on ``thread``."""
        super().__init__(conn, **kwargs)
        self.thread = thread
        # thread id -> the head kept for its next read (gone with the task that read it)
        self._heads: weakref.WeakValueDictionary[str, _Head] = weakref.WeakValueDictionary()

    def _written(self, thread_id: str) -> None:
        """A checkpoint, writes or a delete of ``thread_id`` is handed over: a head kept of it is stale."""
        if (head := self._heads.pop(thread_id, None)) is not None:
            head.spent = True

    async def aget_tuple(self, config: Any) -> CheckpointTuple | None:
        """:meth:`get_tuple` on the connection's thread (the head :meth:`aget_head` read just
        before in this task, when that is what is asked and nothing was written since)."""
        head = _READ_HEAD.get()
        if head is not None and head.take(self, config):
            return head.value
        return await self.thread.call(SqliteSaver.get_tuple, self, config)

    async def aget_head(self, thread_id: str) -> CheckpointTuple | None:
        """The thread's head checkpoint (root namespace), kept for the next read of it in this
        task (the graph's loop starting the run): see the module docstring."""
        self._written(thread_id)  # one kept head a thread at most
        head = self._heads[thread_id] = _Head(self, thread_id)  # a write from now on makes it stale
        _READ_HEAD.set(head)
        head.value = await self.thread.call(
            SqliteSaver.get_tuple, self, {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        )
        return head.value

    def put(self, config: Any, *args: Any, **kwargs: Any) -> Any:
        """:class:`SqliteSaver`'s (a kept head of the thread is stale then)."""
        self._written(_thread_of(config))
        return super().put(config, *args, **kwargs)

    def put_writes(self, config: Any, *args: Any, **kwargs: Any) -> None:
        """:class:`SqliteSaver`'s (a kept head of the thread is stale then)."""
        self._written(_thread_of(config))
        super().put_writes(config, *args, **kwargs)

    def delete_thread(self, thread_id: str) -> None:
        """:class:`SqliteSaver`'s (a kept head of the thread is stale then)."""
        self._written(str(thread_id))
        super().delete_thread(thread_id)

    async def alist(
        self,
        config: Any,
        *,
        filter: dict[str, Any] | None = None,
        before: Any = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """:meth:`list` on the connection's thread (read whole, then yielded)."""
        found = await self.thread.call(
            lambda: list(SqliteSaver.list(self, config, filter=filter, before=before, limit=limit))
        )
        for item in found:
            yield item

    async def aput(
        self,
        config: Any,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Any:
        """:meth:`put` on the connection's thread (the class's, not an instance's wrapper of it)."""
        self._written(_thread_of(config))
        return await self.thread.call(SqliteSaver.put, self, config, checkpoint, metadata, new_versions)

    async def aput_then(
        self,
        config: Any,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        after: Callable[[], T],
    ) -> tuple[Any, T]:
        """:meth:`put`, then ``after()``, in one hand-off to the connection's thread; both results.

        For small work that must follow the save at once (a file version's index row): it saves
        a second trip to another thread. ``after`` runs on the thread every checkpoint of the
        process is written on, so it must never wait (take its locks without blocking, and leave
        what it cannot do now to its caller); it runs only when the save succeeded."""

        def put_then() -> tuple[Any, T]:
            saved = SqliteSaver.put(self, config, checkpoint, metadata, new_versions)
            return saved, after()

        self._written(_thread_of(config))
        return await self.thread.call(put_then)

    async def aput_writes(
        self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """:meth:`put_writes` on the connection's thread."""
        self._written(_thread_of(config))
        await self.thread.call(SqliteSaver.put_writes, self, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """:meth:`delete_thread` on the connection's thread."""
        self._written(str(thread_id))
        await self.thread.call(SqliteSaver.delete_thread, self, thread_id)

    async def aget_delta_channel_history(self, *, config: Any, channels: Sequence[str]) -> Mapping[str, Any]:
        """:meth:`get_delta_channel_history` on the connection's thread."""
        return await self.thread.call(
            lambda: SqliteSaver.get_delta_channel_history(self, config=config, channels=channels)
        )

    async def aquery_one(self, query: str, args: tuple[Any, ...]) -> Any:
        """The first row of a read-only ``query`` (None when there is none), on the connection's thread."""

        def read() -> Any:
            with self.cursor(transaction=False) as cur:
                return cur.execute(query, args).fetchone()

        return await self.thread.call(read)


class ThreadedSqliteStore(SqliteStore):
    """``SqliteStore`` whose :meth:`abatch` runs :meth:`batch` on the connection's thread."""

    def __init__(self, conn: sqlite3.Connection, thread: SerialThread, **kwargs: Any) -> None:
        """``conn`` (autocommit, ``check_same_thread=False``) is used on ``thread``."""
        super().__init__(conn, **kwargs)
        self.thread = thread

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` on the connection's thread."""
        ops = list(ops)
        return await self.thread.call(self.batch, ops)

    async def aupdate(
        self,
        namespace: tuple[str, ...],
        key: str,
        change: Callable[[dict[str, Any] | None], dict[str, Any] | None],
        also: Sequence[tuple[tuple[str, ...], str, dict[str, Any]]] = (),
    ) -> dict[str, Any] | None:
        """Read the value at ``namespace``/``key`` (None when there is none), write what ``change``
        makes of it (nothing when it makes None), and return that: one call on the connection's
        thread, instead of a hand-off for the read and another for the write (and no other call of
        this process between the two). ``also``: (namespace, key, value) to put right after, in
        the same call (a run's record with its thread's)."""

        def update() -> dict[str, Any] | None:
            item = self.get(namespace, key)
            value = change(item.value if item is not None else None)
            if value is not None:
                self.put(namespace, key, value)
            for other_namespace, other_key, other_value in also:
                self.put(other_namespace, other_key, other_value)
            return value

        return await self.thread.call(update)


def _connect(path: str, pragmas: Sequence[str], **kwargs: Any) -> sqlite3.Connection:
    conn = sqlite3.connect(path, check_same_thread=False, **kwargs)
    try:
        for pragma in pragmas:
            conn.execute(pragma)
    except BaseException:
        conn.close()
        raise
    return conn


async def _close(thread: SerialThread, conn: sqlite3.Connection) -> None:
    try:
        await thread.call(conn.close)
    finally:
        await thread.aclose()


@asynccontextmanager
async def open_sqlite_saver(path: str, pragmas: Sequence[str] = ()) -> AsyncIterator[ThreadedSqliteSaver]:
    """A :class:`ThreadedSqliteSaver` on the SQLite file ``path`` (tables made), with ``pragmas`` run first."""
    thread = SerialThread("sqlite-checkpoints")
    conn = await thread.call(_connect, path, pragmas)
    try:
        saver = ThreadedSqliteSaver(conn, thread)
        await thread.call(saver.setup)  # its tables, once, before any other call
        yield saver
    finally:
        await _close(thread, conn)


@asynccontextmanager
async def open_sqlite_store(path: str, pragmas: Sequence[str] = ()) -> AsyncIterator[ThreadedSqliteStore]:
    """A :class:`ThreadedSqliteStore` on the SQLite file ``path`` (migrated), with ``pragmas`` run first."""
    thread = SerialThread("sqlite-records")
    conn = await thread.call(_connect, path, pragmas, isolation_level=None)  # autocommit, as SqliteStore opens it
    try:
        store = ThreadedSqliteStore(conn, thread)
        await thread.call(store.setup)
        yield store
    finally:
        await _close(thread, conn)
