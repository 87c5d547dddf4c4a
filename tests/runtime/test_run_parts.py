"""The run manager's parts on their own: the table of runs, and the recorder of queued runs on a
real SQLite run queue (the gateway tests drive them all together through the official client)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from langgraph.store.memory import InMemoryStore

from herdsman.runtime.runs.run_executor import RunExecutor
from herdsman.runtime.runs.run_queue import QueuedRun, SqliteRunQueue
from herdsman.runtime.runs.run_recorder import QueuedRunRecorder
from herdsman.runtime.runs.run_table import RunTable
from herdsman.runtime.runs.run_types import KEEP_FINISHED, Run, RunSpec
from herdsman.runtime.storage.threads import ThreadStore, utc_now
from herdsman.runtime.streaming.stream_bridge import END_EVENT, MemoryStreamBridge
from tests.support import make_config


def a_run(run_id: str, thread_id: str = "t1", status: str = "pending") -> Run:
    now = utc_now()
    return Run(
        run_id=run_id,
        spec=RunSpec(thread_id=thread_id, input={"messages": []}),
        created_at=now,
        updated_at=now,
        status=status,
    )  # type: ignore[arg-type]


async def test_the_table_knows_a_thread_s_runs_in_progress_and_forgets_old_finished_ones() -> None:
    table = RunTable()
    watcher = table.watch("t1")
    first, second, elsewhere = a_run("r1"), a_run("r2"), a_run("r3", thread_id="t2")
    for run in (first, second, elsewhere):
        table.add(run)
        table.tell_watchers(run)
    assert [r.run_id for r in table.active("t1")] == ["r1", "r2"] and table.in_progress() == 3
    assert [watcher.get_nowait().run_id for _ in range(2)] == ["r1", "r2"] and watcher.empty()  # t1's only
    first.status = "success"
    table.finished(first)
    assert [r.run_id for r in table.active("t1")] == ["r2"] and table.get("r1") is first  # kept a while
    table.unwatch("t1", watcher)
    assert table.watchers == {}
    for n in range(KEEP_FINISHED):
        done = a_run(f"old-{n}", thread_id="t3", status="success")
        table.add(done)
        table.finished(done)
    assert table.get("r1") is None and "t1" in table.by_thread  # the oldest finished run went; r2 stays
    table.forget("r2")
    assert "t1" not in table.by_thread and table.get("r2") is None


class FailingThreads(ThreadStore):
    """A record store whose writes of runs fail (a database gone away)."""

    async def put_run(self, record):  # type: ignore[override]
        raise ConnectionError("the record store is unreachable")


async def _recorder(
    tmp_path: Path, threads: ThreadStore
) -> tuple[QueuedRunRecorder, SqliteRunQueue, MemoryStreamBridge]:
    queue = await SqliteRunQueue.open(str(tmp_path / "runs.sqlite"))
    bridge = MemoryStreamBridge()
    table = RunTable()
    executor = RunExecutor(None, bridge, threads, make_config(tmp_path), table, queue, "here", [])
    return QueuedRunRecorder(executor, table), queue, bridge


async def test_queued_runs_are_recorded_together_then_offered_to_the_workers(tmp_path: Path) -> None:
    threads = ThreadStore(InMemoryStore())
    recorder, queue, _ = await _recorder(tmp_path, threads)
    try:
        runs = [a_run(f"q{n}", thread_id=f"t{n}") for n in range(3)]
        now = time.time()
        for run in runs:
            await threads.create(thread_id=run.thread_id)
            await queue.add(
                QueuedRun(run.run_id, run.thread_id, run.created_at, run.spec.to_queue(), lease_until=now + 60)
            )
        assert await queue.claim("worker", now, now + 30) is None  # not offered before its record is written
        await asyncio.gather(*(recorder.queue_run(run) for run in runs))
        assert {r.run_id for r in recorder.unsaved("t1")} <= {"q1"}
        await asyncio.gather(*(run.saved.wait() for run in runs))
        for run in runs:
            assert (await threads.get_run(run.thread_id, run.run_id))["status"] == "pending"
            assert (await threads.get(run.thread_id)).status == "busy"
            assert run.save_error is None and recorder.get(run.run_id) is None
        claimed = {(await queue.claim("worker", time.time(), time.time() + 30)).run_id for _ in runs}
        assert claimed == {"q0", "q1", "q2"}
    finally:
        await queue.close()


async def test_a_queued_run_whose_record_cannot_be_written_is_taken_back_and_its_stream_says_why(
    tmp_path: Path,
) -> None:
    threads = FailingThreads(InMemoryStore())
    recorder, queue, bridge = await _recorder(tmp_path, threads)
    try:
        run = a_run("lost", thread_id="t1")
        await threads.create(thread_id="t1")
        await queue.add(
            QueuedRun(run.run_id, run.thread_id, run.created_at, run.spec.to_queue(), lease_until=time.time() + 60)
        )
        await recorder.queue_run(run)
        await run.saved.wait()
        assert isinstance(run.save_error, ConnectionError)
        assert await queue.get("lost") is None, "its queue row is taken back: no worker runs a run without a record"
        assert (await threads.get("t1")).status == "idle"
        events = [e async for e in bridge.subscribe("lost") if e is not None]
        assert [e.event for e in events] == ["metadata", "error", END_EVENT]
        assert "unreachable" in json.loads(events[1].data)["message"]
    finally:
        await queue.close()


async def test_a_rebuilt_agent_is_the_graph_the_next_runs_execute(tmp_path: Path) -> None:
    """The gateway rebuilds its agent (a skill or MCP server switched) by setting ``runs.graph``:
    the executor, which starts the runs, must use the new graph, not keep the old one."""
    from herdsman.runtime.runs.runs import RunManager

    manager = RunManager(object(), MemoryStreamBridge(), ThreadStore(InMemoryStore()), make_config(tmp_path))
    rebuilt = object()
    manager.graph = rebuilt
    assert manager.graph is rebuilt and manager.executor.graph is rebuilt
