"""The store that keeps thread and run records (metadata, status, timestamps) for the gateway.

A LangGraph ``BaseStore`` of the same kind as the checkpointer: in memory for ``memory``,
``<home>/gateway.sqlite`` for ``sqlite``, the same database for ``postgres`` (through a pool of
connections that outlives a PostgreSQL restart, ``postgres_pool.py``). Thread state
itself stays in the checkpointer; these records are what the LangGraph API lists and searches.

The SQLite file is in WAL mode with ``synchronous = NORMAL``, as the run queue's and the file
history's are: a run writes its record and its thread's status a few times, and with SQLite's
defaults (a rollback journal, FULL) each commit made, wrote and removed a journal and waited for two
fsyncs (about 4 ms of wall time and 0.45 ms of CPU each here, one after another on the store's one
connection, so a burst of runs queued behind them); in WAL mode with NORMAL a commit is an append
(well under 0.1 ms). It never corrupts the file and loses nothing when a process dies; an OS crash
or a power cut may undo the last commits, and a run whose record went back to ``running`` is then
reported lost at the next start (``runs.py``), as any run cut by one. The store is LangGraph's
SQLite store, reached in one thread hand-off per batch of operations (``sqlite_threaded.py``)
instead of one per statement.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from herdsman.config.schema import HerdsmanConfig
from herdsman.postgres_setup import setup_lock
from herdsman.runtime.storage.checkpointer import postgres_missing, sqlite_path
from herdsman.runtime.storage.sqlite_threaded import open_sqlite_store

SQLITE_BUSY_TIMEOUT_MS = 30_000
POOL_SIZE = 4  # connections to PostgreSQL a process's record store may hold (see postgres_pool.py)


def gateway_db_path(config: HerdsmanConfig, name: str = "gateway.sqlite") -> Path:
    """A SQLite file of the gateway beside the checkpoints (the records' by default); its folder is created."""
    path = sqlite_path(config).with_name(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@asynccontextmanager
async def open_record_store(config: HerdsmanConfig) -> AsyncIterator[BaseStore]:
    """Open the record store matching ``checkpointer.type`` for the ``async with`` block."""
    kind = config.checkpointer.type
    if kind == "memory":
        yield InMemoryStore()
        return
    if kind == "sqlite":
        # several gateway processes may share the file: wait for another's write instead of failing
        # at once with "database is locked" (SQLite's default is not to wait); WAL: see the module docstring
        pragmas = (
            f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}",
            "PRAGMA journal_mode = WAL",
            "PRAGMA synchronous = NORMAL",
        )
        async with open_sqlite_store(str(gateway_db_path(config)), pragmas) as sqlite_store:
            yield sqlite_store
        return
    try:
        from langgraph.store.postgres.aio import AsyncPostgresStore
    except ImportError:
        raise postgres_missing() from None
    from herdsman.postgres_pool import async_pool, langgraph_kwargs

    async with async_pool(
        config.checkpointer.url or "", max_size=POOL_SIZE, kwargs=langgraph_kwargs(), name="records"
    ) as pool:
        store = AsyncPostgresStore(pool)
        async with pool.connection() as conn, setup_lock(conn):
            await store.setup()
        yield store
