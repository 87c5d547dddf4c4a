"""Thread and run records: what the LangGraph API lists, searches and reports as status.

A thread record holds its id, metadata, status and timestamps; a run record is the JSON of one
run. Both live in a LangGraph ``BaseStore`` (see ``record_store.py``), so they survive a
restart with a SQLite or Postgres checkpointer. The conversation itself is in the checkpointer.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from langgraph.store.base import BaseStore

ThreadStatus = Literal["idle", "busy", "interrupted", "error"]
THREADS_NS = ("herdsman_threads",)
RUNS_NS = "herdsman_runs"
SCAN_LIMIT = 100_000
OWNER_KEY = "owner"
"""The metadata key of a thread's owner (a user id; the gateway's ``auth.OWNER_KEY``)."""


def utc_now() -> str:
    """The current time as an ISO-8601 UTC string."""
    return datetime.now(UTC).isoformat()


class ThreadExistsError(Exception):
    """``POST /threads`` with the id of a thread that exists and ``if_exists: raise``."""


@dataclass
class ThreadRecord:
    """One thread as stored: id, metadata, status and timestamps."""

    thread_id: str
    created_at: str
    updated_at: str
    metadata: dict[str, Any] = field(default_factory=dict)
    status: ThreadStatus = "idle"

    def to_dict(self) -> dict[str, Any]:
        """The record as a JSON-ready dict."""
        return asdict(self)


def metadata_contains(metadata: dict[str, Any], wanted: dict[str, Any] | None) -> bool:
    """Every key of ``wanted`` is in ``metadata`` with an equal value (nested dicts too)."""
    for key, value in (wanted or {}).items():
        have = metadata.get(key)
        if isinstance(value, dict) and isinstance(have, dict):
            if not metadata_contains(have, value):
                return False
        elif have != value:
            return False
    return True


class ThreadStore:
    """Thread and run records in a ``BaseStore``."""

    def __init__(self, store: BaseStore) -> None:
        self.store = store

    async def create(
        self,
        thread_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        if_exists: Literal["raise", "do_nothing"] = "raise",
    ) -> ThreadRecord:
        """A new thread (a fresh id when ``thread_id`` is None)."""
        thread_id = thread_id or str(uuid.uuid4())
        existing = await self.get(thread_id)
        if existing is not None:
            if if_exists == "do_nothing":
                return existing
            raise ThreadExistsError(thread_id)
        now = utc_now()
        record = ThreadRecord(thread_id, now, now, dict(metadata or {}))
        await self.store.aput(THREADS_NS, thread_id, record.to_dict())
        return record

    async def get(self, thread_id: str) -> ThreadRecord | None:
        """The thread record, or None."""
        item = await self.store.aget(THREADS_NS, thread_id)
        return ThreadRecord(**item.value) if item is not None else None

    async def update(
        self,
        thread_id: str,
        *,
        metadata: dict[str, Any] | None = None,
        status: ThreadStatus | None = None,
        run: dict[str, Any] | None = None,
    ) -> ThreadRecord | None:
        """Merge ``metadata`` into the thread's and set ``status``; None when the thread is unknown.
        ``run``: a run's JSON saved too, as :meth:`put_run` does (whether the thread is known or not).

        On a store that can (``aupdate``: the SQLite one), read and written in one hand-off to its
        thread, the run's record with them: a run updates its thread's record a few times, each a
        read and a write."""

        def change(value: dict[str, Any] | None) -> dict[str, Any] | None:
            if value is None:
                return None
            record = ThreadRecord(**value)
            if metadata:
                record.metadata = {**record.metadata, **metadata}
            if status:
                record.status = status
            record.updated_at = utc_now()
            return record.to_dict()

        also = [((RUNS_NS, run["thread_id"]), run["run_id"], run)] if run is not None else []
        if (aupdate := getattr(self.store, "aupdate", None)) is not None:
            value = await aupdate(THREADS_NS, thread_id, change, also)
        else:
            item = await self.store.aget(THREADS_NS, thread_id)
            value = change(item.value if item is not None else None)
            if value is not None:
                await self.store.aput(THREADS_NS, thread_id, value)
            for namespace, key, saved in also:
                await self.store.aput(namespace, key, saved)
        return ThreadRecord(**value) if value is not None else None

    async def adopt_unowned(self, owner: str | None, unless: Sequence[str] = ()) -> int:
        """Give every thread with no owner to ``owner`` (None: nothing done) and return how many:
        threads made by the CLI, or by a gateway without API keys, before keys were set, are the
        host owner's once they are (``GatewayConfig.host_owner``), not nobody's. A thread whose
        metadata has a key of ``unless`` (an IM chat's ``channel``) is someone else's and stays as it is."""
        if owner is None:
            return 0
        adopted = 0
        for item in await self.store.asearch(THREADS_NS, limit=SCAN_LIMIT):
            record = ThreadRecord(**item.value)
            if OWNER_KEY not in record.metadata and not any(key in record.metadata for key in unless):
                record.metadata = {**record.metadata, OWNER_KEY: owner}
                await self.store.aput(THREADS_NS, record.thread_id, record.to_dict())
                adopted += 1
        return adopted

    async def delete(self, thread_id: str) -> bool:
        """Forget the thread and its runs; False when it did not exist."""
        record = await self.get(thread_id)
        for run in await self.list_runs(thread_id, limit=SCAN_LIMIT):
            await self.store.adelete((RUNS_NS, thread_id), run["run_id"])
        if record is None:
            return False
        await self.store.adelete(THREADS_NS, thread_id)
        return True

    async def search(
        self,
        *,
        metadata: dict[str, Any] | None = None,
        ids: list[str] | None = None,
        status: str | None = None,
        limit: int = 10,
        offset: int = 0,
        sort_by: str = "created_at",
        sort_order: str = "desc",
    ) -> list[ThreadRecord]:
        """Threads whose metadata contains ``metadata``, filtered by ``ids`` and ``status``."""
        items = await self.store.asearch(THREADS_NS, limit=SCAN_LIMIT)
        records = [ThreadRecord(**item.value) for item in items]
        wanted = set(ids) if ids else None
        found = [
            r
            for r in records
            if (wanted is None or r.thread_id in wanted)
            and (status is None or r.status == status)
            and metadata_contains(r.metadata, metadata)
        ]
        key = sort_by if sort_by in ("thread_id", "created_at", "updated_at", "status") else "created_at"
        found.sort(key=lambda r: getattr(r, key), reverse=sort_order != "asc")
        return found[offset : offset + limit]

    # -- runs ------------------------------------------------------------------------------

    async def put_run(self, run: dict[str, Any]) -> None:
        """Save the JSON of a run under its thread."""
        await self.store.aput((RUNS_NS, run["thread_id"]), run["run_id"], run)

    async def get_run(self, thread_id: str, run_id: str) -> dict[str, Any] | None:
        """A saved run, or None."""
        item = await self.store.aget((RUNS_NS, thread_id), run_id)
        return item.value if item is not None else None

    async def delete_run(self, thread_id: str, run_id: str) -> None:
        """Forget a run."""
        await self.store.adelete((RUNS_NS, thread_id), run_id)

    async def list_runs(
        self, thread_id: str, *, limit: int = 10, offset: int = 0, status: str | None = None
    ) -> list[dict[str, Any]]:
        """The thread's runs, newest first."""
        items = await self.store.asearch((RUNS_NS, thread_id), limit=SCAN_LIMIT)
        runs = [i.value for i in items if status is None or i.value.get("status") == status]
        runs.sort(key=lambda r: r.get("created_at", ""), reverse=True)
        return runs[offset : offset + limit]

    async def unfinished_runs(self) -> list[dict[str, Any]]:
        """Runs saved as pending or running (after a restart: runs the old process lost)."""
        items = await self.store.asearch((RUNS_NS,), limit=SCAN_LIMIT)
        return [i.value for i in items if i.value.get("status") in ("pending", "running")]
