"""The durable run queue on PostgreSQL (``checkpointer.type: postgres``): the same table and
contract as ``run_queue.py``, in the database that already holds the checkpoints and run records.

A claim is one statement: the oldest claimable row is picked with ``FOR UPDATE SKIP LOCKED`` (a
row another worker is claiming is skipped, not waited for) and updated with its new holder and
lease in the same transaction, so any number of workers on any number of machines never take the
same run.
"""

from __future__ import annotations

from typing import Any

from herdsman.runtime.checkpointer import postgres_missing
from herdsman.postgres_setup import setup_lock
from herdsman.runtime.run_queue import (
    CANCELS_ASKED,
    CLAIMABLE_FROM,
    COLUMNS,
    RELEASE,
    RENEW,
    SCHEMA,
    STARTABLE,
    TABLE,
    THREAD_RUNS,
    QueuedRun,
)

CLAIM = (
    f"UPDATE {TABLE} SET worker_id = %s, lease_until = %s WHERE run_id = (SELECT q.run_id "
    + CLAIMABLE_FROM.replace("?", "%s")
    + f" FOR UPDATE OF q SKIP LOCKED) RETURNING {COLUMNS}"
)


class PostgresRunQueue:
    """The queue in PostgreSQL, through a small psycopg connection pool."""

    durable = True

    def __init__(self, pool: Any) -> None:
        self._pool = pool

    @classmethod
    async def open(cls, url: str) -> "PostgresRunQueue":
        """Connect to ``url`` and create the table when missing."""
        try:
            from psycopg_pool import AsyncConnectionPool
        except ImportError:
            raise postgres_missing() from None
        pool = AsyncConnectionPool(url, min_size=1, max_size=4, kwargs={"autocommit": True}, open=False)
        await pool.open(wait=True)
        async with pool.connection() as conn, setup_lock(conn):
            for statement in SCHEMA:
                await conn.execute(statement)
        return cls(pool)

    async def _execute(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        async with self._pool.connection() as conn:
            cursor = await conn.execute(sql, params)
            return await cursor.fetchall() if cursor.description else [(cursor.rowcount,)]

    async def add(self, run: QueuedRun) -> None:
        """Queue a new run."""
        await self._execute(
            f"INSERT INTO {TABLE} ({COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            run.row(),
        )

    async def start(self, run_id: str, worker_id: str, lease_until: float, checkpoint_before: str | None) -> int:
        """Mark the run started; returns its start count."""
        rows = await self._execute(
            f"UPDATE {TABLE} SET status = 'running', worker_id = %s, lease_until = %s, attempts = attempts + 1, "
            "checkpoint_before = COALESCE(checkpoint_before, %s) WHERE " + STARTABLE.replace("?", "%s") + " RETURNING attempts",
            (worker_id, lease_until, checkpoint_before, run_id, worker_id),
        )
        if rows:
            return int(rows[0][0])
        return 0 if await self.get(run_id) is not None else 1  # held by another worker, or not queued

    async def renew(self, worker_id: str, lease_until: float) -> set[str]:
        """Extend the worker's leases."""
        return {row[0] for row in await self._execute(RENEW.replace("?", "%s"), (lease_until, worker_id))}

    async def claim(self, worker_id: str, now: float, lease_until: float) -> QueuedRun | None:
        """The oldest claimable run, now held by ``worker_id`` (one statement, rows being claimed skipped)."""
        rows = await self._execute(CLAIM, (worker_id, lease_until, now))
        return QueuedRun.from_row(rows[0]) if rows else None

    async def get(self, run_id: str) -> QueuedRun | None:
        """The run's row."""
        rows = await self._execute(f"SELECT {COLUMNS} FROM {TABLE} WHERE run_id = %s", (run_id,))
        return QueuedRun.from_row(rows[0]) if rows else None

    async def thread_runs(self, thread_id: str) -> list[QueuedRun]:
        """The thread's unfinished runs, oldest first."""
        return [QueuedRun.from_row(row) for row in await self._execute(THREAD_RUNS.replace("?", "%s"), (thread_id,))]

    async def release(self, run_id: str, worker_id: str) -> None:
        """Give up the hold on the run."""
        await self._execute(RELEASE.replace("?", "%s"), (run_id, worker_id))

    async def request_cancel(self, run_id: str, action: str) -> None:
        """Note the cancel on the run's row."""
        await self._execute(f"UPDATE {TABLE} SET cancel_action = %s WHERE run_id = %s", (action, run_id))

    async def cancels_asked(self, worker_id: str) -> dict[str, str]:
        """The worker's runs whose cancel was asked."""
        return {row[0]: row[1] for row in await self._execute(CANCELS_ASKED.replace("?", "%s"), (worker_id,))}

    async def remove(self, run_id: str) -> None:
        """Forget the run."""
        await self._execute(f"DELETE FROM {TABLE} WHERE run_id = %s", (run_id,))

    async def close(self) -> None:
        """Close the pool."""
        await self._pool.close()
