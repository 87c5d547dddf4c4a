"""Open the LangGraph BaseStore that holds long-term memory: SQLite by default, Postgres by config.

``memory.store: sqlite`` uses langgraph's SqliteStore on ``memory.path`` (default
``<home>/memory.sqlite``); ``memory.store: postgres`` uses langgraph's PostgresStore on
``memory.url``, through a pool that outlives a PostgreSQL restart (``postgres_pool.py``). The
connection or pool lives as long as the process (``close_store`` ends it).

langgraph's SqliteStore writes a put with ``INSERT OR REPLACE``, which deletes the old row and so
gives an updated item a new ``created_at`` (PostgresStore and the LangGraph server keep it). A
trigger installed beside the store's own tables turns such an insert over an existing key into
an update of that row, so both backends answer the same ``created_at``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, cast

from langgraph.store.base import BaseStore

from herdsman.config.schema import HerdsmanConfig
from herdsman.postgres_pool import langgraph_kwargs, sync_pool
from herdsman.postgres_setup import setup_lock_sync

POOL_SIZE = 2  # connections to PostgreSQL the memory store may hold (see postgres_pool.py)


class MemoryStoreError(RuntimeError):
    """The memory store cannot be opened: names the setting and what to do."""


def memory_db_path(config: HerdsmanConfig) -> Path:
    """The SQLite file of memory (and of its update queue)."""
    home = config.resolve_home()
    path = config.memory.path
    if path is None:
        return home / "memory.sqlite"
    path = path.expanduser()
    return path if path.is_absolute() else home / path


def connect_sqlite(path: Path) -> sqlite3.Connection:
    """A connection shared across threads, in autocommit mode, that waits on a locked file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=10)
    conn.execute("PRAGMA journal_mode=WAL")
    return conn


# Before an insert over an existing (prefix, key): update that row in place and drop the insert
# (RAISE(IGNORE) skips only this row, the statement goes on), so created_at is kept.
KEEP_CREATED_AT = """
CREATE TRIGGER IF NOT EXISTS herdsman_store_keeps_created_at
BEFORE INSERT ON store
WHEN EXISTS (SELECT 1 FROM store WHERE prefix = NEW.prefix AND key = NEW.key)
BEGIN
    UPDATE store SET value = NEW.value, updated_at = NEW.updated_at, expires_at = NEW.expires_at,
        ttl_minutes = NEW.ttl_minutes
    WHERE prefix = NEW.prefix AND key = NEW.key;
    SELECT RAISE(IGNORE);
END
"""


def open_store(config: HerdsmanConfig) -> BaseStore:
    """The configured memory store, set up and ready."""
    memory = config.memory
    if memory.store == "postgres":
        try:
            from langgraph.store.postgres import PostgresStore
            from psycopg_pool import ConnectionPool
        except ImportError as exc:  # pragma: no cover - shipped with langgraph-checkpoint-postgres
            raise MemoryStoreError(f"memory.store is postgres but {exc.name} is not installed") from None
        try:
            pool: ConnectionPool = sync_pool(
                memory.url or "", max_size=POOL_SIZE, kwargs=langgraph_kwargs(), name="memory"
            )
        except Exception as exc:  # noqa: BLE001 - reported with the setting to fix
            raise MemoryStoreError(
                f"memory.url: cannot connect to PostgreSQL ({type(exc).__name__}: {exc}); check the URL and that "
                "the server is running"
            ) from None
        store = PostgresStore(cast(Any, pool))  # the pool's rows are dicts (its kwargs); its type says tuples
        with pool.connection() as conn, setup_lock_sync(conn):
            store.setup()
        return store
    from langgraph.store.sqlite import SqliteStore

    path = memory_db_path(config)
    try:
        sqlite_store = SqliteStore(connect_sqlite(path))
    except sqlite3.Error as exc:
        raise MemoryStoreError(f"memory.path: cannot open {path} ({exc}); check the folder is writable") from None
    sqlite_store.setup()
    sqlite_store.conn.execute(KEEP_CREATED_AT)
    return sqlite_store


def close_store(store: BaseStore) -> None:
    """Close the store's connection, if it has one.

    Taken under the store's own lock (SqliteStore serializes its queries with it), so a
    background worker never uses a connection while it is being closed (sqlite3 can crash
    on that rather than raise).
    """
    conn = getattr(store, "conn", None)
    close = getattr(conn, "close", None)
    if not callable(close):
        return
    lock = getattr(store, "lock", None)
    if lock is not None and hasattr(lock, "__enter__"):
        with lock:
            close()
    else:
        close()
