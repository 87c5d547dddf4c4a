"""One process at a time creates or migrates Herdsman's tables in a PostgreSQL database.

LangGraph's checkpointer and store record each migration in a table with a unique key, and
``CREATE TABLE IF NOT EXISTS`` itself is not safe against a concurrent twin: two gateways or
workers starting together on an empty database fail with a duplicate key. Every setup runs under
one session-level advisory lock of the database, so the second process waits for the first, then
finds the tables made. Written here because neither library offers a lock around its
``setup()``; the lock is PostgreSQL's own.

The lock is polled with ``pg_try_advisory_lock``, not awaited with ``pg_advisory_lock``: a
session blocked inside a statement holds a snapshot, and the checkpointer's migrations build an
index ``CONCURRENTLY``, which waits for every older snapshot to end: the holder would wait for
the waiter, a deadlock.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

#: the advisory lock key every Herdsman schema setup takes (any constant 64-bit integer)
SETUP_LOCK_KEY = 0x4845524453_4D4E  # "HERDSMN"
TRY_LOCK = "SELECT pg_try_advisory_lock(%s)"
UNLOCK = "SELECT pg_advisory_unlock(%s)"
#: seconds between two tries while another process holds the lock
POLL_SECONDS = 0.05


@asynccontextmanager
async def setup_lock(conn: Any) -> AsyncIterator[None]:
    """Hold the setup lock on the async psycopg connection ``conn`` (autocommit) for the block."""
    from psycopg.rows import tuple_row

    async with conn.cursor(row_factory=tuple_row) as cursor:
        while not (await (await cursor.execute(TRY_LOCK, (SETUP_LOCK_KEY,))).fetchone())[0]:
            await asyncio.sleep(POLL_SECONDS)
    try:
        yield
    finally:
        await conn.execute(UNLOCK, (SETUP_LOCK_KEY,))


@contextmanager
def setup_lock_sync(conn: Any) -> Iterator[None]:
    """``setup_lock`` for a blocking psycopg connection (the memory store's)."""
    from psycopg.rows import tuple_row

    with conn.cursor(row_factory=tuple_row) as cursor:
        while not cursor.execute(TRY_LOCK, (SETUP_LOCK_KEY,)).fetchone()[0]:
            time.sleep(POLL_SECONDS)
    try:
        yield
    finally:
        conn.execute(UNLOCK, (SETUP_LOCK_KEY,))
