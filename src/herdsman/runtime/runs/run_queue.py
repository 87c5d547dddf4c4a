"""The durable run queue: every run is a row that a worker holds under a lease while it executes it.

A run accepted by a gateway becomes a row of ``herdsman_run_queue`` in the gateway's database
(``<home>/runs.sqlite`` beside the records' ``gateway.sqlite``, or the PostgreSQL database of the
checkpoints and records, see ``run_queue_postgres.py``), held at once by the accepting process's
worker; it stays there until the run ends. The holder renews its lease every third of
``runs.lease_seconds``; when the process dies, the lease runs out and any worker may claim the row,
and resumes the run from its thread's last checkpoint. A claim takes only the oldest row of its
thread, so the runs of one thread keep their order and never execute side by side.

Why a table and not Redis Streams: the runs already live in that database (on SQLite, a file of
its own beside it, in WAL mode, for the reason ``cron_store.py`` gives: the record store's
read-then-write batches fail at once with "database is locked" when another connection wrote to
their file in between), the same transaction
that claims a row records who holds it and until when, and the embedded default (SQLite, one
process) needs no other server. Written here (not a task-queue library) because what is queued is
a LangGraph run whose progress is the checkpointer's, not a job to re-run from scratch; the queue
only has to say who holds which run until when.

:class:`MemoryRunQueue` is the same contract for the memory checkpointer (nothing survives a
restart there, so it is not ``durable``); :class:`SqliteRunQueue` claims inside ``BEGIN IMMEDIATE``,
so two processes sharing the file never claim the same row.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any, Protocol

from herdsman.config.schema import HerdsmanConfig
from herdsman.runtime.runs.run_admission import Admission, Decision, QueueCounts, count_params, count_sql, decide
from herdsman.runtime.storage.record_store import SQLITE_BUSY_TIMEOUT_MS, gateway_db_path
from herdsman.runtime.storage.serial_thread import SerialThread

TABLE = "herdsman_run_queue"
COLUMNS = (
    "run_id, thread_id, created_at, spec, status, worker_id, lease_until, attempts, checkpoint_before, "
    "cancel_action, user_id"
)
SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (run_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, "
    "created_at TEXT NOT NULL, spec TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'pending', worker_id TEXT, "
    "lease_until DOUBLE PRECISION NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, checkpoint_before TEXT, "
    "cancel_action TEXT, user_id TEXT NOT NULL DEFAULT '')",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_thread ON {TABLE} (thread_id, created_at, run_id)",
)
# tables made before runs had a user (the per-user limits count them): SQLite has no ADD COLUMN IF NOT EXISTS
ADD_USER = f"ALTER TABLE {TABLE} ADD COLUMN user_id TEXT NOT NULL DEFAULT ''"
# the counts of run_admission.count_sql and the claims read by user and by lease
INDEXES = (
    f"CREATE INDEX IF NOT EXISTS {TABLE}_user ON {TABLE} (user_id, lease_until)",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_lease ON {TABLE} (lease_until)",
)
# The user of row q holds fewer runs than the limit (the last ?) with a live lease (the first ?: now).
UNDER_USER_LIMIT = (
    f"(SELECT count(*) FROM {TABLE} u WHERE u.user_id = q.user_id AND u.run_id <> q.run_id "
    "AND u.worker_id IS NOT NULL AND u.lease_until >= ?) < ?"
)


def claimable_from(capped: bool) -> str:
    """The oldest row of its thread whose lease ran out (its worker died, or no one took it yet);
    parameters: now, then (``capped``: ``runs.max_running_per_user``) now and the limit, so a
    user's runs beyond the limit wait for one of theirs to end."""
    return (
        f"FROM {TABLE} q WHERE q.lease_until < ? AND NOT EXISTS ("
        f"SELECT 1 FROM {TABLE} o WHERE o.thread_id = q.thread_id AND "
        "(o.created_at < q.created_at OR (o.created_at = q.created_at AND o.run_id < q.run_id))) "
        + (f"AND {UNDER_USER_LIMIT} " if capped else "")
        + "ORDER BY q.created_at, q.run_id LIMIT 1"
    )


def claim_params(now: float, max_running_per_user: int | None) -> tuple[Any, ...]:
    """The parameters of :func:`claimable_from` (capped when the limit is set)."""
    return (now,) if max_running_per_user is None else (now, now, max_running_per_user)


def count_in_memory(rows: Iterable[QueuedRun], thread_id: str, worker: str, user: str, now: float) -> QueueCounts:
    """:class:`QueueCounts` of rows held in memory (what ``count_sql`` counts in a table)."""
    rows = list(rows)
    on_thread = sorted(
        (r for r in rows if r.thread_id == thread_id and r.worker_id != worker), key=lambda r: (r.created_at, r.run_id)
    )
    waiting = [r for r in rows if r.worker_id is None or r.lease_until < now]
    held_users = [r.user_id for r in rows if not (r.worker_id is None or r.lease_until < now)]
    return QueueCounts(
        on_thread[-1].run_id if on_thread else None,
        len(waiting),
        held_users.count(user),
        sum(1 for r in waiting if r.user_id == user),
    )


RENEW = f"UPDATE {TABLE} SET lease_until = ? WHERE worker_id = ? RETURNING run_id, cancel_action"


def offer_sql(count: int) -> str:
    """Make ``count`` unheld runs claimable now (their ids the parameters)."""
    return f"UPDATE {TABLE} SET lease_until = 0 WHERE run_id IN ({', '.join('?' * count)}) AND worker_id IS NULL"


TAKE = f"UPDATE {TABLE} SET worker_id = ?, lease_until = ? WHERE run_id = ? AND lease_until < ? RETURNING {COLUMNS}"
PLACEHOLDERS = ", ".join("?" * len(COLUMNS.split(",")))  # one row's values


def insert_sql(count: int) -> str:
    """Queue ``count`` new runs in one statement (their rows' values the parameters, in order)."""
    return f"INSERT INTO {TABLE} ({COLUMNS}) VALUES " + ", ".join([f"({PLACEHOLDERS})"] * count)


INSERT = insert_sql(1)
# a new run, unless its thread has a run the asking worker (the last ?) does not hold
INSERT_IF_THREAD_FREE = (
    f"INSERT INTO {TABLE} ({COLUMNS}) SELECT {PLACEHOLDERS} WHERE NOT EXISTS ("
    f"SELECT 1 FROM {TABLE} WHERE thread_id = ? AND (worker_id IS NULL OR worker_id <> ?))"
)
WAITING = f"SELECT count(*) FROM {TABLE} WHERE worker_id IS NULL OR lease_until < ?"
RELEASE = f"UPDATE {TABLE} SET worker_id = NULL, lease_until = 0 WHERE run_id = ? AND worker_id = ?"
# The run's row, unless another worker holds it (it claimed the run when this one's lease ran out).
STARTABLE = "run_id = ? AND (worker_id IS NULL OR worker_id = ?)"
THREAD_RUNS = f"SELECT {COLUMNS} FROM {TABLE} WHERE thread_id = ? ORDER BY created_at, run_id"
CANCELS_ASKED = f"SELECT run_id, cancel_action FROM {TABLE} WHERE worker_id = ? AND cancel_action IS NOT NULL"


@dataclass
class QueuedRun:
    """One row of the queue: the run, what was asked (``spec``), and who holds it."""

    run_id: str
    thread_id: str
    created_at: str
    spec: dict[str, Any]
    status: str = "pending"  # pending: never started; running: started ``attempts`` times
    worker_id: str | None = None
    lease_until: float = 0.0
    attempts: int = 0
    checkpoint_before: str | None = None
    cancel_action: str | None = None  # a cancel asked while its worker was gone: honoured when taken over
    user_id: str = ""  # whose run it is (the per-user limits count by it); "": anonymous local use

    @classmethod
    def from_row(cls, row: Any) -> QueuedRun:
        """A row read in ``COLUMNS`` order (``spec`` as JSON text)."""
        run_id, thread_id, created_at, spec, status, worker_id, lease_until, attempts, before, cancel, user = row
        return cls(
            run_id,
            thread_id,
            created_at,
            json.loads(spec),
            status,
            worker_id,
            float(lease_until),
            int(attempts),
            before,
            cancel,
            user or "",
        )

    def row(self) -> tuple[Any, ...]:
        """The values of ``COLUMNS``, in order (``spec`` as JSON text)."""
        return (
            self.run_id,
            self.thread_id,
            self.created_at,
            json.dumps(self.spec),
            self.status,
            self.worker_id,
            self.lease_until,
            self.attempts,
            self.checkpoint_before,
            self.cancel_action,
            self.user_id,
        )

    def unheld(self) -> QueuedRun:
        """This run held by no process; no worker claims it before its lease time, until
        :meth:`RunQueue.offer` (its records are written then)."""
        return replace(self, worker_id=None)


class RunQueue(Protocol):
    """Where runs wait and who holds them. Times are seconds since the epoch."""

    durable: bool

    async def add(self, run: QueuedRun) -> None:
        """Queue a new run (held by ``run.worker_id`` until ``run.lease_until``)."""
        ...

    async def admit(self, run: QueuedRun, admission: Admission, now: float) -> Decision:
        """Count the queue and queue ``run`` as :func:`decide` says, in one transaction: held by
        ``run.worker_id`` (``hold``), held by no one (``wait``), or not at all (``behind``, a refusal)."""
        ...

    async def start(self, run_id: str, worker_id: str, lease_until: float, checkpoint_before: str | None) -> int:
        """Mark the run as started by ``worker_id`` (its first checkpoint kept from the first
        start); returns how many times it has been started, this one included, or 0 when another
        worker holds the run now (it claimed it when this one's lease ran out: this one must not
        execute it)."""
        ...

    async def renew(self, worker_id: str, lease_until: float) -> dict[str, str | None]:
        """Extend every lease ``worker_id`` holds; returns the ids of those runs, each with the
        cancel asked for it on its row (None: none), so a cancel reaches the holder through the
        queue even without a bridge between the processes."""
        ...

    async def claim(
        self, worker_id: str, now: float, lease_until: float, max_running_per_user: int | None = None
    ) -> QueuedRun | None:
        """Take the oldest run whose lease ran out, that no earlier run of its thread precedes
        and whose user holds fewer than ``max_running_per_user`` runs, or None."""
        ...

    async def get(self, run_id: str) -> QueuedRun | None:
        """The run's row, or None (not queued, or ended)."""
        ...

    async def thread_runs(self, thread_id: str) -> list[QueuedRun]:
        """The thread's unfinished runs, oldest first."""
        ...

    async def waiting(self, now: float) -> int:
        """How many runs no live process holds (new ones, and those of workers that died): the
        queue's depth, what a worker autoscaler follows."""
        ...

    async def release(self, run_id: str, worker_id: str) -> None:
        """Give up ``worker_id``'s hold on the run: any worker may claim it at once."""
        ...

    async def request_cancel(self, run_id: str, action: str) -> None:
        """Note that the run is to be cancelled (``interrupt`` or ``rollback``), for the worker
        that holds it (see :meth:`cancels_asked`) or takes it over."""
        ...

    async def cancels_asked(self, worker_id: str) -> dict[str, str]:
        """The runs ``worker_id`` holds whose cancel was asked (run id -> action): how a cancel
        reaches the process executing a run when no shared bridge (Redis) carries it."""
        ...

    async def offer(self, run_ids: Sequence[str]) -> None:
        """Let any worker claim these runs queued held by no process (their records are written
        now: a worker that claimed one before would have found no record and dropped it)."""
        ...

    async def take(self, run_id: str, worker_id: str, now: float, lease_until: float) -> QueuedRun | None:
        """Hold this one run if no live process holds it (it waits for a worker, or its worker
        died), whatever its place in the queue; None otherwise. For ending a cancelled run at once."""
        ...

    async def remove(self, run_id: str) -> None:
        """Forget the run (it ended)."""
        ...

    async def close(self) -> None:
        """Release the connection."""
        ...


class MemoryRunQueue:
    """The queue in this process's memory (the memory checkpointer: nothing to resume after a restart)."""

    durable = False

    def __init__(self) -> None:
        self._rows: dict[str, QueuedRun] = {}

    async def add(self, run: QueuedRun) -> None:
        """Queue a new run."""
        self._rows[run.run_id] = run

    async def admit(self, run: QueuedRun, admission: Admission, now: float) -> Decision:
        """Queue ``run`` as the counts of this process's rows decide."""
        decision = decide(
            count_in_memory(self._rows.values(), run.thread_id, admission.worker, run.user_id, now), admission
        )
        if decision.verdict in ("hold", "wait"):
            await self.add(run if decision.verdict == "hold" else run.unheld())
        return decision

    async def start(self, run_id: str, worker_id: str, lease_until: float, checkpoint_before: str | None) -> int:
        """Mark the run started; returns its start count."""
        row = self._rows.get(run_id)
        if row is None:
            return 1
        if row.worker_id not in (None, worker_id):
            return 0  # another worker holds it
        row.status, row.worker_id, row.lease_until = "running", worker_id, lease_until
        row.attempts += 1
        row.checkpoint_before = row.checkpoint_before or checkpoint_before
        return row.attempts

    async def renew(self, worker_id: str, lease_until: float) -> dict[str, str | None]:
        """Extend the worker's leases."""
        held = [r for r in self._rows.values() if r.worker_id == worker_id]
        for row in held:
            row.lease_until = lease_until
        return {r.run_id: r.cancel_action for r in held}

    async def claim(
        self, worker_id: str, now: float, lease_until: float, max_running_per_user: int | None = None
    ) -> QueuedRun | None:
        """The oldest claimable run, now held by ``worker_id``."""
        oldest: dict[str, QueuedRun] = {}
        for row in sorted(self._rows.values(), key=lambda r: (r.created_at, r.run_id)):
            oldest.setdefault(row.thread_id, row)
        for row in oldest.values():
            held = count_in_memory(self._rows.values(), "", "", row.user_id, now).user_held
            if row.lease_until < now and (max_running_per_user is None or held < max_running_per_user):
                row.worker_id, row.lease_until = worker_id, lease_until
                return row
        return None

    async def get(self, run_id: str) -> QueuedRun | None:
        """The run's row."""
        return self._rows.get(run_id)

    async def thread_runs(self, thread_id: str) -> list[QueuedRun]:
        """The thread's unfinished runs, oldest first."""
        return sorted(
            (r for r in self._rows.values() if r.thread_id == thread_id), key=lambda r: (r.created_at, r.run_id)
        )

    async def waiting(self, now: float) -> int:
        """How many runs no live process holds."""
        return sum(1 for r in self._rows.values() if r.worker_id is None or r.lease_until < now)

    async def release(self, run_id: str, worker_id: str) -> None:
        """Give up the hold on the run."""
        if (row := self._rows.get(run_id)) is not None and row.worker_id == worker_id:
            row.worker_id, row.lease_until = None, 0.0

    async def request_cancel(self, run_id: str, action: str) -> None:
        """Note the cancel on the run's row."""
        if (row := self._rows.get(run_id)) is not None:
            row.cancel_action = action

    async def cancels_asked(self, worker_id: str) -> dict[str, str]:
        """The worker's runs whose cancel was asked."""
        return {r.run_id: r.cancel_action for r in self._rows.values() if r.worker_id == worker_id and r.cancel_action}

    async def offer(self, run_ids: Sequence[str]) -> None:
        """Make the unheld runs claimable now."""
        for run_id in run_ids:
            if (row := self._rows.get(run_id)) is not None and row.worker_id is None:
                row.lease_until = 0.0

    async def take(self, run_id: str, worker_id: str, now: float, lease_until: float) -> QueuedRun | None:
        """Hold the run if no live process does."""
        if (row := self._rows.get(run_id)) is None or row.lease_until >= now:
            return None
        row.worker_id, row.lease_until = worker_id, lease_until
        return row

    async def remove(self, run_id: str) -> None:
        """Forget the run."""
        self._rows.pop(run_id, None)

    async def close(self) -> None:
        """Nothing to release."""


class SqliteRunQueue:
    """The queue in the gateway's SQLite file; several processes may share it.

    ``synchronous = NORMAL``: a new run's row is written before its first event is sent, and
    with SQLite's default (FULL) each of those commits waited for an fsync (about 3 ms here, so a
    burst of 100 new runs queued up 300 ms behind one another; 10 ms with NORMAL). In WAL mode
    NORMAL never corrupts the file and loses nothing when a process dies (what leases recover
    from); only an OS crash or a power cut may undo the last commits, and the runs whose rows
    were undone are then reported lost at the next start, as they were before the queue existed.

    The connection lives on a :class:`~herdsman.runtime.storage.serial_thread.SerialThread`: each
    method is one hand-off to it, its statements and its transaction run there whole (with
    aiosqlite each statement and each fetch was a round trip of its own: starting a run took
    two, a claim five), and the thread runs one method at a time, so no lock is needed here.
    """

    durable = True

    def __init__(self, conn: sqlite3.Connection, thread: SerialThread) -> None:
        """``conn`` (autocommit, ``check_same_thread=False``) is used on ``thread`` only."""
        self._conn = conn
        self._thread = thread

    @classmethod
    async def open(cls, path: str) -> SqliteRunQueue:
        """Connect to ``path`` and create the table when missing."""
        thread = SerialThread("sqlite-run-queue")
        try:
            conn = await thread.call(_open_queue_db, path)
        except BaseException:
            await thread.aclose()
            raise
        return cls(conn, thread)

    def _in_transaction(self, work: Any) -> Any:
        """``work(conn)`` inside ``BEGIN IMMEDIATE`` (the write lock: one process at a time),
        committed, or rolled back when it fails; on the thread."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = work(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return result

    async def _write(self, sql: str, params: tuple[Any, ...]) -> int:
        return await self._thread.call(lambda: self._conn.execute(sql, params).rowcount)

    async def _one(self, sql: str, params: tuple[Any, ...]) -> Any:
        return await self._thread.call(lambda: self._conn.execute(sql, params).fetchone())

    async def _all(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        return await self._thread.call(lambda: self._conn.execute(sql, params).fetchall())

    async def add(self, run: QueuedRun) -> None:
        """Queue a new run."""
        await self._write(INSERT, run.row())

    async def admit(self, run: QueuedRun, admission: Admission, now: float) -> Decision:
        """Count and queue inside one write transaction, so two processes never both take the last place."""
        if not admission.limited:
            return await self._thread.call(self._admit_unlimited, run, admission)

        def count_and_queue(conn: sqlite3.Connection) -> Decision:
            counts = conn.execute(
                count_sql(TABLE, admission), count_params(run.thread_id, admission.worker, run.user_id, now, admission)
            ).fetchone()
            decision = decide(QueueCounts(*counts), admission)
            if decision.verdict in ("hold", "wait"):
                conn.execute(INSERT, (run if decision.verdict == "hold" else run.unheld()).row())
            return decision

        return await self._thread.call(self._in_transaction, count_and_queue)

    def _admit_unlimited(self, run: QueuedRun, admission: Admission) -> Decision:
        """Without limits only the thread matters: one ``INSERT ... WHERE NOT EXISTS`` (atomic on
        its own, instead of a four-statement transaction), and the thread's run read back only
        when the run was refused; on the thread."""
        hold = bool(admission.worker) and admission.hold
        row = (run if hold else run.unheld()).row()
        guarded = admission.reject_if_busy or bool(admission.worker)
        if not guarded:
            self._conn.execute(INSERT, row)
            return Decision("wait", QueueCounts(None, 0, 0, 0))
        if self._conn.execute(INSERT_IF_THREAD_FREE, (*row, run.thread_id, admission.worker)).rowcount == 1:
            return Decision("hold" if hold else "wait", QueueCounts(None, 0, 0, 0))
        counts = QueueCounts(
            *self._conn.execute(count_sql(TABLE, admission), (run.thread_id, admission.worker)).fetchone()
        )
        return Decision("busy" if admission.reject_if_busy else "behind", counts)

    async def start(self, run_id: str, worker_id: str, lease_until: float, checkpoint_before: str | None) -> int:
        """Mark the run started; returns its start count."""

        def start() -> int:
            row = self._conn.execute(
                f"UPDATE {TABLE} SET status = 'running', worker_id = ?, lease_until = ?, attempts = attempts + 1, "
                f"checkpoint_before = COALESCE(checkpoint_before, ?) WHERE {STARTABLE} RETURNING attempts",
                (worker_id, lease_until, checkpoint_before, run_id, worker_id),
            ).fetchone()
            if row is None:  # held by another worker, or not queued
                return 0 if self._conn.execute(f"SELECT 1 FROM {TABLE} WHERE run_id = ?", (run_id,)).fetchone() else 1
            return int(row[0])

        return await self._thread.call(start)

    async def renew(self, worker_id: str, lease_until: float) -> dict[str, str | None]:
        """Extend the worker's leases."""
        return {row[0]: row[1] for row in await self._all(RENEW, (lease_until, worker_id))}

    async def claim(
        self, worker_id: str, now: float, lease_until: float, max_running_per_user: int | None = None
    ) -> QueuedRun | None:
        """The oldest claimable run, now held by ``worker_id``: a cheap read first, then the
        claim inside ``BEGIN IMMEDIATE`` (the write lock), so two processes never take one row."""
        claimable = f"SELECT {COLUMNS} {claimable_from(max_running_per_user is not None)}"
        params = claim_params(now, max_running_per_user)

        def take_oldest(conn: sqlite3.Connection) -> Any:
            row = conn.execute(claimable, params).fetchone()
            if row is not None:
                conn.execute(
                    f"UPDATE {TABLE} SET worker_id = ?, lease_until = ? WHERE run_id = ?",
                    (worker_id, lease_until, row[0]),
                )
            return row

        def claim() -> Any:
            if self._conn.execute(claimable, params).fetchone() is None:
                return None
            return self._in_transaction(take_oldest)

        row = await self._thread.call(claim)
        if row is None:
            return None
        claimed = QueuedRun.from_row(row)
        claimed.worker_id, claimed.lease_until = worker_id, lease_until
        return claimed

    async def get(self, run_id: str) -> QueuedRun | None:
        """The run's row."""
        row = await self._one(f"SELECT {COLUMNS} FROM {TABLE} WHERE run_id = ?", (run_id,))
        return QueuedRun.from_row(row) if row else None

    async def thread_runs(self, thread_id: str) -> list[QueuedRun]:
        """The thread's unfinished runs, oldest first."""
        return [QueuedRun.from_row(row) for row in await self._all(THREAD_RUNS, (thread_id,))]

    async def waiting(self, now: float) -> int:
        """How many runs no live process holds (one count)."""
        (count,) = await self._one(WAITING, (now,))
        return int(count)

    async def release(self, run_id: str, worker_id: str) -> None:
        """Give up the hold on the run."""
        await self._write(RELEASE, (run_id, worker_id))

    async def request_cancel(self, run_id: str, action: str) -> None:
        """Note the cancel on the run's row."""
        await self._write(f"UPDATE {TABLE} SET cancel_action = ? WHERE run_id = ?", (action, run_id))

    async def cancels_asked(self, worker_id: str) -> dict[str, str]:
        """The worker's runs whose cancel was asked."""
        return {run_id: action for run_id, action in await self._all(CANCELS_ASKED, (worker_id,))}

    async def offer(self, run_ids: Sequence[str]) -> None:
        """Make the unheld runs claimable now (one statement)."""
        if run_ids:
            await self._write(offer_sql(len(run_ids)), tuple(run_ids))

    async def take(self, run_id: str, worker_id: str, now: float, lease_until: float) -> QueuedRun | None:
        """Hold the run if no live process does (one statement)."""
        row = await self._one(TAKE, (worker_id, lease_until, run_id, now))
        return QueuedRun.from_row(row) if row else None

    async def remove(self, run_id: str) -> None:
        """Forget the run."""
        await self._write(f"DELETE FROM {TABLE} WHERE run_id = ?", (run_id,))

    async def close(self) -> None:
        """Close the connection, then the thread."""
        try:
            await self._thread.call(self._conn.close)
        finally:
            await self._thread.aclose()


def _open_queue_db(path: str) -> sqlite3.Connection:
    """The queue's connection to ``path`` (autocommit: transactions are explicit), its table made; on the thread."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")  # readers never wait for the claims
        conn.execute("PRAGMA synchronous = NORMAL")  # see SqliteRunQueue's docstring
        for statement in SCHEMA:
            conn.execute(statement)
        if "user_id" not in [row[1] for row in conn.execute(f"PRAGMA table_info({TABLE})").fetchall()]:
            conn.execute(ADD_USER)
        for statement in INDEXES:
            conn.execute(statement)
    except BaseException:
        conn.close()
        raise
    return conn


@asynccontextmanager
async def open_run_queue(config: HerdsmanConfig) -> AsyncIterator[RunQueue]:
    """The queue matching ``checkpointer.type`` (memory, ``runs.sqlite`` in the home, PostgreSQL),
    open for the ``async with`` block."""
    kind = config.checkpointer.type
    if kind == "memory":
        queue: RunQueue = MemoryRunQueue()
    elif kind == "sqlite":
        queue = await SqliteRunQueue.open(str(gateway_db_path(config, "runs.sqlite")))
    else:
        from herdsman.runtime.runs.run_queue_postgres import PostgresRunQueue

        queue = await PostgresRunQueue.open(config.checkpointer.url or "")
    try:
        yield queue
    finally:
        await queue.close()
