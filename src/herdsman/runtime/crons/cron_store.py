"""Scheduled runs (crons) and their firings, in two small SQL tables of the gateway's database.

A LangGraph ``BaseStore`` (what ``record_store.py`` opens) has no conditional write, and firing a
cron exactly once across several gateway processes needs one: :meth:`CronStore.claim` moves a
cron's ``next_run_at`` forward only if it still holds the value the scheduler read (a
compare-and-set in one ``UPDATE``), so of two schedulers that saw the same due cron, one wins.
The tables live in ``<home>/crons.sqlite`` for ``sqlite`` (in WAL mode: a claim costs a few
milliseconds instead of tens; beside ``gateway.sqlite`` rather than in it, because in WAL mode
the record store's batches, which read then write in one transaction, would fail at once with
"database is locked" when another process wrote in between), in the checkpointer's database for
``postgres``, and in an SQLite database in memory for ``memory``. The SQL is plain (text,
integers) so one statement serves both engines; written by hand because the two queries and one
compare-and-set are smaller than any job-queue library that would bring its own tables.

A cron is stored as its indexed columns (owner, thread, enabled, next time) plus a JSON
document with the rest (schedule, timezone, end time, run payload, metadata).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any, Protocol

from herdsman.config.schema import HerdsmanConfig
from herdsman.postgres_pool import open_async_pool
from herdsman.postgres_setup import setup_lock
from herdsman.runtime.crons.cron_schedule import iso, next_fire, parse_time
from herdsman.runtime.storage.checkpointer import postgres_missing
from herdsman.runtime.storage.record_store import gateway_db_path

SCAN_LIMIT = 100_000
SORT_KEYS = ("cron_id", "assistant_id", "thread_id", "created_at", "updated_at", "next_run_date", "end_time")

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS herdsman_crons (
        cron_id TEXT PRIMARY KEY,
        user_id TEXT,
        thread_id TEXT,
        assistant_id TEXT NOT NULL,
        enabled INTEGER NOT NULL,
        next_run_at TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        data TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS herdsman_crons_due ON herdsman_crons (enabled, next_run_at)",
    """CREATE TABLE IF NOT EXISTS herdsman_cron_firings (
        cron_id TEXT NOT NULL,
        scheduled_at TEXT NOT NULL,
        fired_at TEXT NOT NULL,
        run_id TEXT,
        thread_id TEXT,
        status TEXT NOT NULL,
        error TEXT,
        PRIMARY KEY (cron_id, scheduled_at)
    )""",
)
COLUMNS = "cron_id, user_id, thread_id, assistant_id, enabled, next_run_at, created_at, updated_at, data"
FIRING_COLUMNS = "cron_id, scheduled_at, fired_at, run_id, thread_id, status, error"


class Sql(Protocol):
    """The two calls the store needs from a database connection (``?`` placeholders)."""

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a statement; how many rows it changed."""
        ...

    async def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """Run a query; its rows."""
        ...

    async def all_or_none(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> bool:
        """Run the statements in one transaction; if one of them changes no row, undo them all
        and answer False."""
        ...


class _NothingChanged(Exception):
    """A statement of :meth:`Sql.all_or_none` changed no row: its transaction is rolled back."""


class _Sqlite:
    """:class:`Sql` over one aiosqlite connection in autocommit mode.

    Each write is its own ``BEGIN IMMEDIATE`` transaction: it takes the file's write lock first,
    waiting for it (busy timeout), where a plain statement that read first and then wants to
    write fails at once with "database is locked" when another process wrote in between (WAL).
    """

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self._writing = asyncio.Lock()  # one transaction at a time on this connection

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        counts = await self._transaction([(sql, params)], every_one_changes=False)
        return counts[0]

    async def all_or_none(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> bool:
        try:
            await self._transaction(statements, every_one_changes=True)
        except _NothingChanged:
            return False
        return True

    async def _transaction(
        self, statements: Sequence[tuple[str, Sequence[Any]]], *, every_one_changes: bool
    ) -> list[int]:
        async with self._writing:
            await self.conn.execute("BEGIN IMMEDIATE")
            try:
                counts = []
                for sql, params in statements:
                    counts.append((await self.conn.execute(sql, tuple(params))).rowcount)
                    if every_one_changes and counts[-1] == 0:
                        raise _NothingChanged
            except BaseException:
                await self.conn.execute("ROLLBACK")
                raise
            await self.conn.execute("COMMIT")
            return counts

    async def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        # executed and read in one call: a cursor left open between awaits would hold the file's
        # shared lock while this connection waits, and two processes could wait on each other
        return list(await self.conn.execute_fetchall(sql, tuple(params)))


class _Postgres:
    """:class:`Sql` over a pool of psycopg async connections in autocommit mode (``postgres_pool.py``)."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        async with self.pool.connection() as conn:
            return (await conn.execute(sql.replace("?", "%s"), tuple(params))).rowcount

    async def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        async with self.pool.connection() as conn:
            return list(await (await conn.execute(sql.replace("?", "%s"), tuple(params))).fetchall())

    async def all_or_none(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> bool:
        try:
            async with self.pool.connection() as conn, conn.transaction():
                for sql, params in statements:
                    if (await conn.execute(sql.replace("?", "%s"), tuple(params))).rowcount == 0:
                        raise _NothingChanged
        except _NothingChanged:
            return False
        return True


def _matches(have: dict[str, Any], wanted: dict[str, Any] | None) -> bool:
    """Every key of ``wanted`` is in ``have`` with an equal value."""
    return all(have.get(k) == v for k, v in (wanted or {}).items())


def planned_next(cron: dict[str, Any], now: datetime) -> str | None:
    """When an enabled cron fires next after ``now`` (None: disabled, or past its end time)."""
    if not cron.get("enabled", True):
        return None
    return iso(next_fire(cron["schedule"], now, cron.get("timezone"), parse_time(cron.get("end_time"))))


class CronStore:
    """Crons and their firings in the gateway's database."""

    def __init__(self, sql: Sql) -> None:
        self.sql = sql

    async def setup(self) -> None:
        """Create the tables if they do not exist."""
        for statement in SCHEMA:
            await self.sql.execute(statement)

    # -- crons -----------------------------------------------------------------------------

    async def create(self, cron: dict[str, Any], now: datetime) -> dict[str, Any]:
        """Save a new cron (``schedule``, ``assistant_id``, ``payload``... and optionally
        ``thread_id``, ``user_id``); it gets an id, timestamps and its next run date."""
        stamp = iso(now)
        record = {
            "cron_id": str(uuid.uuid4()),
            "thread_id": None,
            "user_id": None,
            "timezone": None,
            "end_time": None,
            "on_run_completed": None,
            "metadata": {},
            "payload": {},
            "enabled": True,
            **cron,
            "created_at": stamp,
            "updated_at": stamp,
        }
        record["next_run_date"] = planned_next(record, now)
        await self.sql.execute(
            f"INSERT INTO herdsman_crons ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", self._row(record)
        )
        return record

    @staticmethod
    def _row(record: dict[str, Any]) -> tuple:
        data = {
            k: v
            for k, v in record.items()
            if k
            not in (
                "cron_id",
                "user_id",
                "thread_id",
                "assistant_id",
                "enabled",
                "next_run_date",
                "created_at",
                "updated_at",
            )
        }
        return (
            record["cron_id"],
            record["user_id"],
            record["thread_id"],
            record["assistant_id"],
            int(bool(record["enabled"])),
            record["next_run_date"],
            record["created_at"],
            record["updated_at"],
            json.dumps(data),
        )

    @staticmethod
    def _record(row: tuple) -> dict[str, Any]:
        cron_id, user_id, thread_id, assistant_id, enabled, next_run_at, created_at, updated_at, data = row
        return {
            "cron_id": cron_id,
            "assistant_id": assistant_id,
            "thread_id": thread_id,
            "user_id": user_id,
            **json.loads(data),
            "enabled": bool(enabled),
            "next_run_date": next_run_at,
            "created_at": created_at,
            "updated_at": updated_at,
        }

    async def get(self, cron_id: str) -> dict[str, Any] | None:
        """The cron, or None."""
        rows = await self.sql.fetch(f"SELECT {COLUMNS} FROM herdsman_crons WHERE cron_id = ?", (cron_id,))
        return self._record(rows[0]) if rows else None

    async def update(self, cron_id: str, changes: dict[str, Any], now: datetime) -> dict[str, Any] | None:
        """Apply ``changes`` (top-level fields; ``payload`` merged key by key) and plan the next
        run again from ``now``; None when the cron is gone."""
        record = await self.get(cron_id)
        if record is None:
            return None
        payload = {**record["payload"], **changes.pop("payload", {})}
        record.update(changes, payload=payload, updated_at=iso(now))
        record["next_run_date"] = planned_next(record, now)
        row = self._row(record)
        await self.sql.execute(
            "UPDATE herdsman_crons SET enabled = ?, next_run_at = ?, updated_at = ?, data = ? WHERE cron_id = ?",
            (row[4], row[5], row[7], row[8], cron_id),
        )
        return record

    async def delete(self, cron_id: str) -> bool:
        """Forget the cron and its firings; False when it did not exist."""
        await self.sql.execute("DELETE FROM herdsman_cron_firings WHERE cron_id = ?", (cron_id,))
        return await self.sql.execute("DELETE FROM herdsman_crons WHERE cron_id = ?", (cron_id,)) > 0

    async def delete_for_thread(self, thread_id: str) -> int:
        """Forget every cron of a thread (the thread is being deleted); how many there were."""
        rows = await self.sql.fetch("SELECT cron_id FROM herdsman_crons WHERE thread_id = ?", (thread_id,))
        for (cron_id,) in rows:
            await self.delete(cron_id)
        return len(rows)

    async def search(
        self,
        *,
        user_id: str | None = None,
        assistant_id: str | None = None,
        thread_id: str | None = None,
        enabled: bool | None = None,
        metadata: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        sort_by: str | None = None,
        sort_order: str | None = None,
    ) -> list[dict[str, Any]]:
        """Crons matching every filter given (``user_id``: only that owner's), sorted and paged."""
        where: list[str] = []
        params: list[Any] = []
        for column, value in (("user_id", user_id), ("assistant_id", assistant_id), ("thread_id", thread_id)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if enabled is not None:
            where.append("enabled = ?")
            params.append(int(enabled))
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = await self.sql.fetch(f"SELECT {COLUMNS} FROM herdsman_crons{clause} LIMIT {SCAN_LIMIT}", params)
        found = [r for r in map(self._record, rows) if _matches(r.get("metadata") or {}, metadata)]
        key = sort_by if sort_by in SORT_KEYS else "created_at"
        found.sort(key=lambda r: (r.get(key) is not None, r.get(key) or ""), reverse=(sort_order or "desc") != "asc")
        return found[offset : offset + limit]

    # -- firing ----------------------------------------------------------------------------

    async def due(self, now: datetime) -> list[tuple[str, str]]:
        """``(cron_id, next_run_at)`` of the enabled crons whose next run is at or before ``now``."""
        return [
            tuple(r)
            for r in await self.sql.fetch(
                "SELECT cron_id, next_run_at FROM herdsman_crons WHERE enabled = 1 AND next_run_at IS NOT NULL "
                "AND next_run_at <= ? ORDER BY next_run_at",
                (iso(now),),
            )
        ]

    async def claim(self, cron_id: str, seen_next: str, new_next: str | None, now: datetime) -> bool:
        """Move the cron's next run from ``seen_next`` to ``new_next`` and record the firing for
        ``seen_next`` (status ``starting`` until its run exists), in one transaction, only if no
        one moved it first (compare-and-set): True means this caller fires it."""
        return await self.sql.all_or_none(
            [
                (
                    (
                        "UPDATE herdsman_crons SET next_run_at = ?, updated_at = ? WHERE cron_id = ? AND "
                        "next_run_at = ? AND enabled = 1"
                    ),
                    (new_next, iso(now), cron_id, seen_next),
                ),
                (
                    (
                        f"INSERT INTO herdsman_cron_firings ({FIRING_COLUMNS}) VALUES (?, ?, ?, NULL, NULL, "
                        "'starting', NULL)"
                    ),
                    (cron_id, seen_next, iso(now)),
                ),
            ]
        )

    async def set_firing(
        self,
        cron_id: str,
        scheduled_at: str,
        status: str,
        *,
        run_id: str | None = None,
        thread_id: str | None = None,
        error: str | None = None,
    ) -> None:
        """Update a firing: its run (once started) and its outcome (the run's final status, or ``error``)."""
        await self.sql.execute(
            "UPDATE herdsman_cron_firings SET status = ?, run_id = COALESCE(?, run_id), "
            "thread_id = COALESCE(?, thread_id), error = ? WHERE cron_id = ? AND scheduled_at = ?",
            (status, run_id, thread_id, error, cron_id, scheduled_at),
        )

    async def firings(self, cron_id: str, limit: int = 20) -> list[dict[str, Any]]:
        """The cron's firings, newest first."""
        rows = await self.sql.fetch(
            f"SELECT {FIRING_COLUMNS} FROM herdsman_cron_firings WHERE cron_id = ? ORDER BY scheduled_at DESC LIMIT ?",
            (cron_id, limit),
        )
        names = [c.strip() for c in FIRING_COLUMNS.split(",")]
        return [dict(zip(names, row, strict=False)) for row in rows]


@asynccontextmanager
async def _connect(config: HerdsmanConfig) -> AsyncIterator[Sql]:
    """A connection in autocommit mode to the crons' database (see the module docstring)."""
    if config.checkpointer.type == "postgres":
        try:
            pool = await open_async_pool(config.checkpointer.url or "", max_size=2, name="crons")
        except ImportError:
            raise postgres_missing() from None
        try:
            yield _Postgres(pool)
        finally:
            await pool.close()
        return
    import aiosqlite

    target = str(gateway_db_path(config, "crons.sqlite")) if config.checkpointer.type == "sqlite" else ":memory:"
    async with aiosqlite.connect(target, isolation_level=None, timeout=30) as lite:
        await lite.execute("PRAGMA busy_timeout = 30000")  # another process may be writing the file
        await lite.execute("PRAGMA journal_mode = WAL")  # see the module docstring
        yield _Sqlite(lite)


@asynccontextmanager
async def open_cron_store(config: HerdsmanConfig) -> AsyncIterator[CronStore]:
    """The cron store of the gateway's database (see the module docstring), tables created."""
    async with _connect(config) as sql:
        store = CronStore(sql)
        if isinstance(sql, _Postgres):
            async with sql.pool.connection() as conn, setup_lock(conn):
                await store.setup()
        else:
            await store.setup()
        yield store
