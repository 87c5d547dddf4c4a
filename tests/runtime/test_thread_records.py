"""Thread records updated in place: metadata merged, status set, an unknown thread left alone,
on the SQLite store (read and written in one hand-off) and the in-memory one alike."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from langgraph.store.memory import InMemoryStore

from herdsman.runtime.storage.sqlite_threaded import open_sqlite_store
from herdsman.runtime.storage.threads import ThreadStore


async def _updates(threads: ThreadStore) -> None:
    made = await threads.create("t1", metadata={"owner": "ana", "topic": "x"})
    assert await threads.update("nobody", status="busy") is None
    assert await threads.get("nobody") is None, "an update of an unknown thread makes none"

    busy = await threads.update("t1", metadata={"topic": "y", "graph_id": "lead_agent"}, status="busy")
    assert busy is not None and busy.status == "busy"
    # concurrent updates of one thread, as a run's record and its status are written together
    await asyncio.gather(threads.update("t1", metadata={"a": 1}), threads.update("t1", metadata={"b": 2}))
    idle = await threads.update("t1", status="idle")
    kept = await threads.get("t1")
    assert kept == idle and kept is not None
    assert kept.metadata == {"owner": "ana", "topic": "y", "graph_id": "lead_agent", "a": 1, "b": 2}
    assert kept.status == "idle" and kept.created_at == made.created_at and kept.updated_at >= made.updated_at

    # a run's record saved with its thread's (one hand-off on SQLite), also for a thread not known
    run = {"run_id": "r1", "thread_id": "t1", "status": "pending", "created_at": "2026-01-01T00:00:00+00:00"}
    started = await threads.update("t1", status="busy", run=run)
    assert started is not None and started.status == "busy" and await threads.get_run("t1", "r1") == run
    assert await threads.update("nobody", status="busy", run={**run, "thread_id": "nobody"}) is None
    assert await threads.get("nobody") is None and await threads.get_run("nobody", "r1") is not None


async def test_thread_updates_on_the_sqlite_store_persist(tmp_path: Path) -> None:
    path = str(tmp_path / "records.sqlite")
    async with open_sqlite_store(path) as store:
        await _updates(ThreadStore(store))
    async with open_sqlite_store(path) as store:  # written, not only cached
        again = await ThreadStore(store).get("t1")
    assert again is not None and again.status == "busy" and again.metadata["b"] == 2


@pytest.mark.parametrize("store", [InMemoryStore], ids=["memory"])
async def test_thread_updates_on_a_store_without_aupdate(store) -> None:
    await _updates(ThreadStore(store()))
