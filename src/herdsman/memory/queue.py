"""The durable queue of pending memory updates: one SQLite table, one row per thread and user.

After a turn, the turn's messages are appended to its thread's row and the row's due time is
pushed back by ``memory.debounce_seconds`` (so a quick exchange is read once, as a whole). A
worker claims due rows with a lease, writes memory, and only then removes the messages it read.
A crash between queueing and writing therefore loses nothing: the row is still there, its lease
runs out, and the next worker takes it again (at-least-once; the writes are idempotent).

A row belongs to its thread *and* its user: a thread deleted and re-created by someone else
under the same id starts a row of its own, so the first owner's queued turns never reach the new
owner's memory.

Written here because LangGraph has no durable work queue; a table with a lease is all it needs.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from herdsman.memory.backend import connect_sqlite

SCHEMA = """
CREATE TABLE IF NOT EXISTS memory_pending (
    thread_id     TEXT NOT NULL,
    user_id       TEXT NOT NULL,
    messages      TEXT NOT NULL,
    version       INTEGER NOT NULL DEFAULT 1,
    due_at        REAL NOT NULL,
    leased_until  REAL NOT NULL DEFAULT 0,
    attempts      INTEGER NOT NULL DEFAULT 0,
    last_error    TEXT,
    created_at    REAL NOT NULL,
    updated_at    REAL NOT NULL,
    PRIMARY KEY (thread_id, user_id)
)
"""
#: the table of earlier versions (keyed by thread only): its rows move into the new one on open
OLD_TABLE = "memory_updates"
MIGRATE = f"""
INSERT OR IGNORE INTO memory_pending SELECT thread_id, user_id, messages, version, due_at, leased_until,
    attempts, last_error, created_at, updated_at FROM {OLD_TABLE}
"""
LEASE_SECONDS = 300.0
#: the condition that picks one row
ROW = "thread_id = ? AND user_id = ?"


class QueueClosedError(RuntimeError):
    """The queue was closed (the process is shutting down); nothing was lost."""


@dataclass(frozen=True)
class PendingUpdate:
    """A claimed row: the turns of one thread waiting to be read by the memory model."""

    thread_id: str
    user_id: str
    messages: list[dict[str, Any]]
    version: int
    attempts: int


class UpdateQueue:
    """The queue table in a SQLite file (see module docstring). Safe to share across threads."""

    def __init__(self, path: Path) -> None:
        """Open (and create) the queue in ``path``."""
        self.path = path
        self._conn = connect_sqlite(path)
        self._lock = threading.Lock()
        self._closed = False
        with self._tx() as cur:
            cur.execute(SCHEMA)
            if cur.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (OLD_TABLE,)).fetchone():
                cur.execute(MIGRATE)
                cur.execute(f"DROP TABLE {OLD_TABLE}")

    def close(self) -> None:
        """Close the connection, once no transaction is using it (a worker may still be running)."""
        with self._lock:
            self._closed = True
            self._conn.close()

    def _tx(self) -> Any:
        return _Transaction(self._conn, self._lock, lambda: self._closed)

    def enqueue(self, thread_id: str, user_id: str, messages: list[dict[str, Any]], delay: float = 0.0) -> None:
        """Append ``messages`` to the thread's pending update and make it due ``delay`` seconds from now."""
        now = time.time()
        with self._tx() as cur:
            row = cur.execute("SELECT messages FROM memory_pending WHERE " + ROW, (thread_id, user_id)).fetchone()
            if row is None:
                cur.execute(
                    "INSERT INTO memory_pending (thread_id, user_id, messages, due_at, created_at, updated_at) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (thread_id, user_id, json.dumps(messages), now + delay, now, now),
                )
            else:
                merged = json.loads(row[0]) + messages
                cur.execute(
                    "UPDATE memory_pending SET messages = ?, version = version + 1, due_at = ?, "
                    "updated_at = ? WHERE " + ROW,
                    (json.dumps(merged), now + delay, now, thread_id, user_id),
                )

    def claim(self, limit: int = 10, now: float | None = None, lease: float = LEASE_SECONDS) -> list[PendingUpdate]:
        """Take up to ``limit`` due rows that no live worker holds; they are leased for ``lease`` seconds."""
        now = time.time() if now is None else now
        with self._tx() as cur:
            rows = cur.execute(
                "SELECT thread_id, user_id, messages, version, attempts FROM memory_pending "
                "WHERE due_at <= ? AND leased_until <= ? ORDER BY due_at LIMIT ?",
                (now, now, limit),
            ).fetchall()
            for row in rows:
                cur.execute("UPDATE memory_pending SET leased_until = ? WHERE " + ROW, (now + lease, row[0], row[1]))
        return [PendingUpdate(r[0], r[1], json.loads(r[2]), r[3], r[4]) for r in rows]

    def complete(self, update: PendingUpdate) -> None:
        """The update was written: drop the messages it read (newer ones stay queued)."""
        with self._tx() as cur:
            row = cur.execute(
                "SELECT messages, version FROM memory_pending WHERE " + ROW, (update.thread_id, update.user_id)
            ).fetchone()
            if row is None:
                return
            if row[1] == update.version:
                cur.execute("DELETE FROM memory_pending WHERE " + ROW, (update.thread_id, update.user_id))
                return
            rest = json.loads(row[0])[len(update.messages) :]
            cur.execute(
                "UPDATE memory_pending SET messages = ?, leased_until = 0, attempts = 0 WHERE " + ROW,
                (json.dumps(rest), update.thread_id, update.user_id),
            )

    def fail(self, update: PendingUpdate, error: str, max_attempts: int, retry_in: float = 30.0) -> bool:
        """Record a failed try; retry later, or drop the row after ``max_attempts``. True when dropped."""
        attempts = update.attempts + 1
        with self._tx() as cur:
            if attempts >= max_attempts:
                cur.execute("DELETE FROM memory_pending WHERE " + ROW, (update.thread_id, update.user_id))
                return True
            cur.execute(
                "UPDATE memory_pending SET attempts = ?, last_error = ?, leased_until = 0, due_at = ? WHERE " + ROW,
                (attempts, error[:500], time.time() + retry_in * attempts, update.thread_id, update.user_id),
            )
        return False

    def holds(self, update: PendingUpdate) -> bool:
        """The update's row is still queued (a purge of its user removes it while it is read)."""
        with self._tx() as cur:
            row = cur.execute(
                "SELECT 1 FROM memory_pending WHERE " + ROW, (update.thread_id, update.user_id)
            ).fetchone()
        return row is not None

    def forget_user(self, user_id: str) -> int:
        """Drop every queued turn of ``user_id`` (their memory is being purged); how many threads."""
        with self._tx() as cur:
            return int(cur.execute("DELETE FROM memory_pending WHERE user_id = ?", (user_id,)).rowcount)

    def expire(self, before: float) -> int:
        """Drop the rows whose first queued turn is older than ``before`` (epoch seconds): a turn
        waiting to be learned outlives no retention (:mod:`herdsman.memory.retention`); how many."""
        with self._tx() as cur:
            return int(cur.execute("DELETE FROM memory_pending WHERE created_at < ?", (before,)).rowcount)

    def pending(self) -> list[dict[str, Any]]:
        """Every queued row (for the CLI): thread, user, message count, due time, attempts, last error."""
        with self._tx() as cur:
            rows = cur.execute(
                "SELECT thread_id, user_id, messages, due_at, attempts, last_error FROM memory_pending ORDER BY due_at"
            ).fetchall()
        return [
            {
                "thread_id": r[0],
                "user_id": r[1],
                "messages": len(json.loads(r[2])),
                "due_at": r[3],
                "attempts": r[4],
                "last_error": r[5],
            }
            for r in rows
        ]

    def next_due(self) -> float | None:
        """When the next row falls due (epoch seconds), or None when the queue is empty."""
        with self._tx() as cur:
            row = cur.execute("SELECT MIN(MAX(due_at, leased_until)) FROM memory_pending").fetchone()
        return row[0] if row and row[0] is not None else None


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (or ``ROLLBACK``) under the queue's lock."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.Lock, closed: Any = lambda: False) -> None:
        self._conn = conn
        self._lock = lock
        self._closed = closed

    def __enter__(self) -> sqlite3.Cursor:
        self._lock.acquire()
        if self._closed():
            self._lock.release()
            raise QueueClosedError("the memory update queue is closed; pending updates stay for the next run")
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._lock.release()
            raise
        self._cur = self._conn.cursor()
        return self._cur

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        try:
            self._conn.execute("ROLLBACK" if exc_type else "COMMIT")
        finally:
            self._cur.close()
            self._lock.release()
