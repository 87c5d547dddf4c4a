"""Red team: a run is never started by a worker that lost it to another.

Finding (durable run queue, #15): ``start`` (the mark a worker writes as it begins executing a run)
took the run's row whoever held it. A process that stalled past its lease while its run waited
for a slot or for the thread's earlier run, and whose row another worker claimed and started
meanwhile, took the row back as it started: both executed the run until the next lease renewal
of the one that lost it. ``start`` now refuses (0) a row another worker holds, and the run
manager then leaves the run to that worker.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from herdsman.runtime.runs.run_queue import MemoryRunQueue, QueuedRun, SqliteRunQueue


@pytest.fixture(params=["memory", "sqlite"])
async def queue(request, tmp_path: Path):
    opened = MemoryRunQueue() if request.param == "memory" else await SqliteRunQueue.open(str(tmp_path / "runs.sqlite"))
    try:
        yield opened
    finally:
        await opened.close()


async def test_a_worker_cannot_start_a_run_another_worker_claimed(queue) -> None:
    now = time.time()
    await queue.add(
        QueuedRun("r", "t", "2026-01-01T00:00:01", {"thread_id": "t"}, worker_id="stalled", lease_until=now - 1)
    )
    claimed = await queue.claim("other", now, now + 60)
    assert claimed is not None and claimed.run_id == "r"
    assert await queue.start("r", "other", now + 60, "ckpt") == 1

    assert await queue.start("r", "stalled", now + 60, "ckpt") == 0  # the stalled process wakes up: not its run
    row = await queue.get("r")
    assert (row.worker_id, row.attempts) == ("other", 1)
    assert await queue.start("gone", "stalled", now + 60, None) == 1  # a run not queued (its row never written) goes on
