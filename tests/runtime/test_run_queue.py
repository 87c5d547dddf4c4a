"""The durable run queue on a real SQLite file and a real PostgreSQL: who may claim what.

Two queue objects on one database stand for two processes (each has its own connection).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest

from herdsman.runtime.runs.run_admission import Admission
from herdsman.runtime.runs.run_queue import QueuedRun, RunQueue, SqliteRunQueue
from herdsman.runtime.runs.run_queue_postgres import PostgresRunQueue


@pytest.fixture(params=["sqlite", "postgres"])
async def queues(request, tmp_path: Path) -> AsyncIterator[tuple[RunQueue, RunQueue]]:
    """Two queues on one database (SQLite file, or a fresh PostgreSQL database)."""
    if request.param == "sqlite":
        opened = [await SqliteRunQueue.open(str(tmp_path / "runs.sqlite")) for _ in range(2)]
    else:
        server = request.getfixturevalue("postgres_url")
        name = f"queue_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        url = server.rsplit("/", 1)[0] + f"/{name}"
        opened = [await PostgresRunQueue.open(url) for _ in range(2)]
    try:
        yield opened[0], opened[1]
    finally:
        for queue in opened:
            await queue.close()


def row(run_id: str, thread_id: str, created_at: str, *, worker: str = "dead", lease_until: float = 0.0) -> QueuedRun:
    """A queued run held by ``worker`` until ``lease_until`` (by default: a lease long gone)."""
    return QueuedRun(
        run_id,
        thread_id,
        created_at,
        {"thread_id": thread_id, "input": {"n": run_id}},
        worker_id=worker,
        lease_until=lease_until,
    )


async def test_a_live_lease_is_never_claimed_and_an_expired_one_is(queues) -> None:
    one, two = queues
    now = time.time()
    await one.add(row("live", "t1", "2026-01-01T00:00:01", worker="one", lease_until=now + 60))
    assert await two.claim("two", now, now + 30) is None
    await one.add(row("lost", "t2", "2026-01-01T00:00:02"))
    claimed = await two.claim("two", now, now + 30)
    assert claimed is not None and claimed.run_id == "lost" and claimed.spec["input"] == {"n": "lost"}
    assert (await one.get("lost")).worker_id == "two"
    assert await one.claim("one", now, now + 30) is None  # now held by two
    assert set(await one.renew("one", now + 120)) == {"live"}
    assert (await two.claim("two", now + 90, now + 120)).run_id == "lost"  # two's lease ran out: taken again
    assert set(await two.renew("two", now + 150)) == {"lost"}
    assert await one.claim("one", now + 110, now + 140) is None  # both renewed in time


async def test_a_thread_s_runs_are_claimed_oldest_first_and_one_at_a_time(queues) -> None:
    one, two = queues
    now = time.time()
    await one.add(row("second", "t", "2026-01-01T00:00:02"))
    await one.add(row("first", "t", "2026-01-01T00:00:01"))
    assert (await one.claim("one", now, now + 30)).run_id == "first"
    assert await two.claim("two", now, now + 30) is None  # "first" still holds the thread
    assert await one.start("first", "one", now + 30, "ckpt-0") == 1
    await one.remove("first")
    assert (await two.claim("two", now, now + 30)).run_id == "second"


async def test_starts_are_counted_and_the_first_checkpoint_is_kept(queues) -> None:
    one, two = queues
    now = time.time()
    await one.add(row("r", "t", "2026-01-01T00:00:01", worker="one", lease_until=now + 30))
    assert await one.start("r", "one", now + 30, "before") == 1
    claimed = await two.claim("two", now + 60, now + 90)
    assert (claimed.status, claimed.attempts, claimed.checkpoint_before) == ("running", 1, "before")
    assert await two.start("r", "two", now + 90, "later") == 2
    assert (await one.get("r")).checkpoint_before == "before"
    await one.request_cancel("r", "rollback")
    assert (await two.get("r")).cancel_action == "rollback"


async def test_two_processes_claiming_at_once_never_take_the_same_run(queues) -> None:
    one, two = queues
    now = time.time()
    for n in range(20):
        await one.add(row(f"r{n:02d}", f"t{n}", f"2026-01-01T00:00:{n:02d}"))

    async def drain(queue: RunQueue, worker: str) -> list[str]:
        taken = []
        while (claimed := await queue.claim(worker, now, now + 30)) is not None:
            taken.append(claimed.run_id)
        return taken

    first, second = await asyncio.gather(drain(one, "one"), drain(two, "two"))
    assert sorted(first + second) == [f"r{n:02d}" for n in range(20)]
    assert not set(first) & set(second)


def new_run(
    run_id: str, thread_id: str, user: str, *, worker: str | None = None, lease_until: float = 0.0
) -> QueuedRun:
    """A new run of ``user`` as a gateway admits it (held by ``worker``, or by no process)."""
    return QueuedRun(
        run_id,
        thread_id,
        f"2026-01-01T00:00:{run_id[-2:]}",
        {"thread_id": thread_id},
        worker_id=worker,
        lease_until=lease_until,
        user_id=user,
    )


async def test_two_processes_admitting_at_once_never_pass_the_limits_together(queues) -> None:
    one, two = queues
    now = time.time()
    queued_only = Admission(max_queued=7, max_queued_per_user=4, worker="", hold=False)
    runs = [new_run(f"r{n:02d}", f"t{n}", "ana" if n < 10 else "bo", lease_until=now + 30) for n in range(20)]
    decisions = await asyncio.gather(
        *(queue.admit(run, queued_only, now) for queue, run in zip([one, two] * 10, runs, strict=False))
    )
    admitted = [run for run, decision in zip(runs, decisions, strict=False) if decision.verdict == "wait"]
    assert len(admitted) == 7, [d.verdict for d in decisions]
    users = [run.user_id for run in admitted]
    assert users.count("ana") <= 4 and users.count("bo") <= 4
    assert {d.verdict for d in decisions} <= {"wait", "queue_full", "user_full"}
    rows = {run.run_id: await two.get(run.run_id) for run in runs}
    assert {run_id for run_id, found in rows.items() if found} == {run.run_id for run in admitted}, (
        "a refused run leaves no row"
    )


async def test_reject_on_one_thread_from_two_processes_at_once_admits_one(queues) -> None:
    one, two = queues
    now = time.time()
    reject = Admission(worker="", hold=False, reject_if_busy=True)
    decisions = await asyncio.gather(
        one.admit(new_run("a01", "t", "ana", lease_until=now + 30), reject, now),
        two.admit(new_run("b02", "t", "ana", lease_until=now + 30), reject, now),
    )
    assert sorted(d.verdict for d in decisions) == ["busy", "wait"]


async def test_a_user_at_max_running_waits_and_workers_claim_others_first(queues) -> None:
    one, two = queues
    now = time.time()
    capped = Admission(max_running_per_user=1, worker="gw", hold=True)
    assert (
        await one.admit(new_run("a01", "t1", "ana", worker="gw", lease_until=now + 30), capped, now)
    ).verdict == "hold"
    waits = await two.admit(new_run("a02", "t2", "ana", worker="gw", lease_until=now + 30), capped, now)
    assert waits.verdict == "wait" and (await one.get("a02")).worker_id is None  # queued for a worker, held by none
    assert (
        await one.admit(new_run("b03", "t3", "bo", worker="gw", lease_until=now + 30), capped, now)
    ).verdict == "hold"
    assert await one.claim("w", now, now + 30, 1) is None  # not offered yet: its records are being written
    await one.offer(["a02"])
    assert await two.claim("w", now, now + 30, 1) is None  # ana holds her one run
    await one.remove("a01")
    assert (await two.claim("w", now, now + 30, 1)).run_id == "a02"
    # a thread whose run another process holds: a process with workers is told to queue behind it
    behind = await one.admit(new_run("a04", "t2", "ana", worker="gw", lease_until=now + 30), capped, now)
    assert behind.verdict == "behind" and behind.counts.thread_run == "a02"


async def test_a_restarting_process_leaves_alone_the_runs_other_live_processes_are_queueing_or_ending(
    tmp_path: Path,
) -> None:
    """``RunManager.recover`` at start with a durable queue: a run another gateway recorded and
    queues a moment later, and a run that ends meanwhile, are not marked lost; a run recorded
    and never queued (its process died in between) is."""
    from langgraph.store.memory import InMemoryStore

    from herdsman.runtime.runs.runs import RunManager
    from herdsman.runtime.storage.threads import ThreadStore
    from herdsman.runtime.streaming.stream_bridge import MemoryStreamBridge
    from tests.support import make_config

    queue = await SqliteRunQueue.open(str(tmp_path / "runs.sqlite"))
    threads = ThreadStore(InMemoryStore())
    manager = RunManager(None, MemoryStreamBridge(), threads, make_config(tmp_path), queue=queue)
    records = {}
    for name, status in (("queueing", "pending"), ("ending", "running"), ("orphan", "pending")):
        await threads.create(thread_id=f"t-{name}")
        records[name] = {
            "run_id": name,
            "thread_id": f"t-{name}",
            "status": status,
            "updated_at": "2026-01-01T00:00:00",
        }
        await threads.put_run(records[name])

    async def other_processes() -> None:
        await asyncio.sleep(0.2)
        await queue.add(
            row("queueing", "t-queueing", "2026-01-01T00:00:01", worker="gateway-b", lease_until=time.time() + 60)
        )
        await threads.put_run({**records["ending"], "status": "success", "updated_at": "2026-01-01T00:00:02"})

    try:
        lost, _ = await asyncio.gather(manager.recover(), other_processes())
        assert lost == 1
        assert (await threads.get_run("t-orphan", "orphan"))["error"]["error"] == "GatewayRestarted"
        assert (await threads.get_run("t-queueing", "queueing"))["status"] == "pending"
        assert (await threads.get_run("t-ending", "ending"))["status"] == "success"
    finally:
        await queue.close()


async def test_a_cancel_asked_by_one_process_reaches_the_holder_through_its_rows(queues) -> None:
    one, two = queues
    now = time.time()
    await one.add(row("held", "t1", "2026-01-01T00:00:01", worker="one", lease_until=now + 60))
    await one.add(row("other", "t2", "2026-01-01T00:00:02", worker="one", lease_until=now + 60))
    assert await one.cancels_asked("one") == {}
    await two.request_cancel("held", "rollback")  # another process, no bridge between them
    assert await one.cancels_asked("one") == {"held": "rollback"}
    assert await two.cancels_asked("two") == {}, "only the holder's rows"


async def test_the_queue_depth_counts_runs_no_live_process_holds(queues) -> None:
    """``waiting`` (the ``herdsman_runs_waiting`` gauge a worker autoscaler follows): new runs
    held by no one and runs whose holder's lease ran out, seen alike from every process."""
    one, two = queues
    now = time.time()
    assert await one.waiting(now) == 0
    await one.add(row("executing", "t1", "2026-01-01T00:00:01", worker="one", lease_until=now + 60))
    await one.add(row("new", "t2", "2026-01-01T00:00:02", worker=None, lease_until=now + 60))
    await one.add(row("orphaned", "t3", "2026-01-01T00:00:03", worker="dead", lease_until=now - 1))
    assert await one.waiting(now) == await two.waiting(now) == 2
    assert (await two.claim("two", now, now + 30)).run_id == "orphaned"  # taken over: held again
    assert await one.waiting(now) == 1
    assert await two.waiting(now + 120) == 3  # every lease ran out: nothing is held any more
