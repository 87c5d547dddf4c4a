"""The durable run queue on PostgreSQL (``checkpointer.type: postgres``): the same table and
contract as ``run_queue.py``, in the database that already holds the checkpoints and run records.

A claim is one statement: the oldest claimable row is picked with ``FOR UPDATE SKIP LOCKED`` (a
row another worker is claiming is skipped, not waited for) and updated with its new holder and
lease in the same transaction, so any number of workers on any number of machines never take the
same run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from herdsman.postgres_pool import open_async_pool
from herdsman.postgres_setup import setup_lock
from herdsman.runtime.runs.coalesce import Coalescer
from herdsman.runtime.runs.run_admission import Admission, Decision, QueueCounts, count_params, count_sql, decide
from herdsman.runtime.runs.run_queue import (
    ADD_USER,
    CANCELS_ASKED,
    COLUMNS,
    INDEXES,
    INSERT,
    RELEASE,
    RENEW,
    SCHEMA,
    STARTABLE,
    TABLE,
    TAKE,
    THREAD_RUNS,
    WAITING,
    QueuedRun,
    claim_params,
    claimable_from,
    insert_sql,
    offer_sql,
)
from herdsman.runtime.storage.checkpointer import postgres_missing

# Admissions under a limit, and claims under a per-user limit, take this transaction lock in
# turn: the counts they read stay true until they commit (READ COMMITTED alone lets two see the
# same last place). Without limits an admission locks only its thread (two-key form: this class
# and the thread's hash).
ADMISSION_LOCK_KEY = 0x68657264_61646D74  # "herdadmt"
THREAD_LOCK_CLASS = 0x68657264  # "herd"


def _pg(sql: str) -> str:
    return sql.replace("?", "%s")


def claim_sql(capped: bool) -> str:
    """The claim: one UPDATE of the row picked with ``FOR UPDATE SKIP LOCKED``."""
    return (
        f"UPDATE {TABLE} SET worker_id = %s, lease_until = %s WHERE run_id = (SELECT q.run_id "
        + _pg(claimable_from(capped))
        + f" FOR UPDATE OF q SKIP LOCKED) RETURNING {COLUMNS}"
    )


class PostgresRunQueue:
    """The queue in PostgreSQL, through a small psycopg connection pool."""

    durable = True

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self._insert = Coalescer(self._insert_rows)  # a burst of new runs: one INSERT for those waiting

    async def _insert_rows(self, rows: list[tuple[Any, ...]]) -> list[None]:
        """Queue several new runs with one multi-row ``INSERT``."""
        await self._execute(_pg(insert_sql(len(rows))), tuple(v for row in rows for v in row))
        return [None] * len(rows)

    @classmethod
    async def open(cls, url: str) -> PostgresRunQueue:
        """Connect to ``url`` and create the table when missing."""
        try:
            pool = await open_async_pool(url, max_size=4, name="run-queue")
        except ImportError:
            raise postgres_missing() from None
        async with pool.connection() as conn, setup_lock(conn):
            for statement in SCHEMA:
                await conn.execute(statement)
            await conn.execute(ADD_USER.replace("ADD COLUMN", "ADD COLUMN IF NOT EXISTS"))
            for statement in INDEXES:
                await conn.execute(statement)
        return cls(pool)

    async def _execute(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        async with self._pool.connection() as conn:
            cursor = await conn.execute(sql, params)
            return await cursor.fetchall() if cursor.description else [(cursor.rowcount,)]

    async def add(self, run: QueuedRun) -> None:
        """Queue a new run."""
        await self._insert(run.row())

    async def admit(self, run: QueuedRun, admission: Admission, now: float) -> Decision:
        """Count and queue in one transaction, under the admission lock (or the thread's, without
        limits); a run that nothing can refuse (no limits, ``enqueue``, asked by a process without
        workers: it waits behind whatever the thread has) is one ``INSERT``, shared with the new
        runs that arrive meanwhile, instead of a five-statement transaction."""
        if not (admission.limited or admission.reject_if_busy or admission.worker):
            await self._insert(run.unheld().row())
            return Decision("wait", QueueCounts(None, 0, 0, 0))
        async with self._pool.connection() as conn, conn.transaction():
            if admission.limited:
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (ADMISSION_LOCK_KEY,))
            else:
                await conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (THREAD_LOCK_CLASS, run.thread_id))
            cursor = await conn.execute(
                _pg(count_sql(TABLE, admission)),
                count_params(run.thread_id, admission.worker, run.user_id, now, admission),
            )
            decision = decide(QueueCounts(*await cursor.fetchone()), admission)
            if decision.verdict in ("hold", "wait"):
                await conn.execute(_pg(INSERT), (run if decision.verdict == "hold" else run.unheld()).row())
        return decision

    async def start(self, run_id: str, worker_id: str, lease_until: float, checkpoint_before: str | None) -> int:
        """Mark the run started; returns its start count."""
        rows = await self._execute(
            f"UPDATE {TABLE} SET status = 'running', worker_id = %s, lease_until = %s, attempts = attempts + 1, "
            "checkpoint_before = COALESCE(checkpoint_before, %s) WHERE " + _pg(STARTABLE) + " RETURNING attempts",
            (worker_id, lease_until, checkpoint_before, run_id, worker_id),
        )
        if rows:
            return int(rows[0][0])
        return 0 if await self.get(run_id) is not None else 1  # held by another worker, or not queued

    async def renew(self, worker_id: str, lease_until: float) -> dict[str, str | None]:
        """Extend the worker's leases."""
        return {row[0]: row[1] for row in await self._execute(_pg(RENEW), (lease_until, worker_id))}

    async def claim(
        self, worker_id: str, now: float, lease_until: float, max_running_per_user: int | None = None
    ) -> QueuedRun | None:
        """The oldest claimable run, now held by ``worker_id`` (one statement, rows being claimed
        skipped; under the admission lock when a per-user limit is counted)."""
        params = (worker_id, lease_until, *claim_params(now, max_running_per_user))
        if max_running_per_user is None:
            rows = await self._execute(claim_sql(False), params)
        else:
            async with self._pool.connection() as conn, conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (ADMISSION_LOCK_KEY,))
                rows = await (await conn.execute(claim_sql(True), params)).fetchall()
        return QueuedRun.from_row(rows[0]) if rows else None

    async def get(self, run_id: str) -> QueuedRun | None:
        """The run's row."""
        rows = await self._execute(f"SELECT {COLUMNS} FROM {TABLE} WHERE run_id = %s", (run_id,))
        return QueuedRun.from_row(rows[0]) if rows else None

    async def thread_runs(self, thread_id: str) -> list[QueuedRun]:
        """The thread's unfinished runs, oldest first."""
        return [QueuedRun.from_row(row) for row in await self._execute(_pg(THREAD_RUNS), (thread_id,))]

    async def waiting(self, now: float) -> int:
        """How many runs no live process holds (one count)."""
        return int((await self._execute(_pg(WAITING), (now,)))[0][0])

    async def release(self, run_id: str, worker_id: str) -> None:
        """Give up the hold on the run."""
        await self._execute(_pg(RELEASE), (run_id, worker_id))

    async def request_cancel(self, run_id: str, action: str) -> None:
        """Note the cancel on the run's row."""
        await self._execute(f"UPDATE {TABLE} SET cancel_action = %s WHERE run_id = %s", (action, run_id))

    async def cancels_asked(self, worker_id: str) -> dict[str, str]:
        """The worker's runs whose cancel was asked."""
        return {row[0]: row[1] for row in await self._execute(CANCELS_ASKED.replace("?", "%s"), (worker_id,))}

    async def offer(self, run_ids: Sequence[str]) -> None:
        """Make the unheld runs claimable now (one statement)."""
        if run_ids:
            await self._execute(_pg(offer_sql(len(run_ids))), tuple(run_ids))

    async def take(self, run_id: str, worker_id: str, now: float, lease_until: float) -> QueuedRun | None:
        """Hold the run if no live process does (one statement)."""
        rows = await self._execute(_pg(TAKE), (worker_id, lease_until, run_id, now))
        return QueuedRun.from_row(rows[0]) if rows else None

    async def remove(self, run_id: str) -> None:
        """Forget the run."""
        await self._execute(f"DELETE FROM {TABLE} WHERE run_id = %s", (run_id,))

    async def close(self) -> None:
        """Close the pool."""
        await self._pool.close()
