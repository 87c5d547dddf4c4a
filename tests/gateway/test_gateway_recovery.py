"""A run survives the death of the process executing it: ``herdsman serve`` processes are killed
with SIGKILL mid-run, and another process's worker takes the run over from the durable queue and
resumes it from the thread's last checkpoint (not from scratch, not marked lost).

The agent (``recovery_model.StepsModel``) makes three bash steps, each appending to a log in the
thread's workspace and printing it, and logs every model call with its process id; it holds the
call after the second step until the test removes the hold file, and the test kills the
process there.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from langgraph_sdk import get_client

from herdsman.runtime.storage.record_store import gateway_db_path
from tests.gateway.gateway_support import (
    HOLD,
    ServeProcess,
    child_env,
    running_gateway,
    scripted_model,
    serve_subprocess,
    user_message,
)
from tests.services import free_port
from tests.support import make_config

FINAL = ("success", "error", "interrupted", "timeout")


def write_config(tmp_path: Path, name: str, port: int, **sections: Any) -> Path:
    """A config.yaml for one ``herdsman serve`` child on ``port``: the steps agent, short leases."""
    data: dict[str, Any] = {
        "home": str(tmp_path / "home"),
        "lead": {"model_retries": 0, "verify_rounds": 0},
        "local_model": {"profile": "standard"},
        "models": [
            {
                "name": "steps",
                "use": "tests.gateway.recovery_model:StepsModel",
                "calls_file": str(tmp_path / "calls.log"),
                "hold_file": str(tmp_path / "hold"),
            }
        ],
        "checkpointer": {"type": "sqlite"},
        "runs": {"workers": 2, "lease_seconds": 1, "poll_seconds": 0.2},
        "gateway": {"port": port},
        **sections,
    }
    data["gateway"] = {"port": port, **sections.get("gateway", {})}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@contextmanager
def gateway_process(tmp_path: Path, name: str, **sections: Any) -> Iterator[ServeProcess]:
    """``herdsman serve`` with :func:`write_config`'s config, on a free port."""
    port = free_port()
    with serve_subprocess(write_config(tmp_path, name, port, **sections), port, tmp_path) as served:
        assert served.proc.poll() is None, "the gateway did not start"
        yield served


async def wait_for(path: Path) -> None:
    """Wait until ``path`` exists (the model reached its hold)."""
    while not path.exists():
        await asyncio.sleep(0.05)


async def settled(sdk: Any, thread_id: str, run_id: str) -> dict[str, Any]:
    """The run once it ended (looked at every 0.1 s)."""
    while (run := await sdk.runs.get(thread_id, run_id))["status"] not in FINAL:
        await asyncio.sleep(0.1)
    return run


async def thread_status(sdk: Any, thread_id: str) -> str:
    """The thread's status once its run settled it (a run's record ends just before its thread)."""
    while (status := (await sdk.threads.get(thread_id))["status"]) == "busy":
        await asyncio.sleep(0.05)
    return status


def calls(tmp_path: Path) -> list[tuple[int, int]]:
    """Every model call as (process id, tool results it had seen), in order."""
    lines = (tmp_path / "calls.log").read_text().split("\n")
    return [(int(pid), int(seen)) for pid, seen in (line.split() for line in lines if line)]


def assert_resumed(messages: list[dict[str, Any]], made: list[tuple[int, int]], killed: int, survivor: int) -> None:
    """The thread holds the whole conversation once, in order; the killed process made the calls
    up to the held one, the survivor repeated only that one (it was in flight) and went on."""
    kinds = [m["type"] for m in messages]
    assert kinds == ["human", "ai", "tool", "ai", "tool", "ai", "tool", "ai"]
    tools = [m["content"] for m in messages if m["type"] == "tool"]
    assert tools == ["step1", "step1\nstep2", "step1\nstep2\nstep3"], "each bash step ran exactly once"
    assert messages[-1]["content"] == "finished"
    assert made == [(killed, 0), (killed, 1), (killed, 2), (survivor, 2), (survivor, 3)]


async def test_a_run_whose_process_was_killed_is_resumed_on_sqlite_when_a_gateway_starts(tmp_path: Path) -> None:
    """One process on the embedded default (SQLite), auth on: killed mid-run; the next one
    started on the same home finds the run's lease expired and finishes it from its last
    checkpoint, still as its owner's run, which another user can neither see nor cancel."""
    keys = {"gateway": {"api_keys": ["key-ana", "key-bo"]}}
    (tmp_path / "hold").touch()
    with gateway_process(tmp_path, "first", **keys) as first:
        sdk = get_client(url=first.url, api_key="key-ana")
        tid = (await sdk.threads.create())["thread_id"]
        run = await sdk.runs.create(tid, "lead_agent", input=user_message("steps 3"))
        await asyncio.wait_for(wait_for(tmp_path / "hold.held"), 60)
        await sdk.aclose()
        first.proc.kill()
        first.proc.wait()
    os.unlink(tmp_path / "hold")
    with gateway_process(tmp_path, "second", **keys) as second:
        sdk, bo = get_client(url=second.url, api_key="key-ana"), get_client(url=second.url, api_key="key-bo")
        try:
            for peek in (
                bo.runs.get(tid, run["run_id"]),
                bo.runs.cancel(tid, run["run_id"]),
                bo.runs.join(tid, run["run_id"]),
            ):
                with pytest.raises(httpx.HTTPStatusError) as refused:
                    await peek
                assert refused.value.response.status_code == 404
            ended = await asyncio.wait_for(settled(sdk, tid, run["run_id"]), 60)
            assert ended["status"] == "success"
            assert ended["attempt"] == 2
            owner = run["kwargs"]["config"]["configurable"]["user_id"]
            assert ended["kwargs"]["config"]["configurable"]["user_id"] == owner  # resumed as its owner
            assert await thread_status(sdk, tid) == "idle"
            state = await sdk.threads.get_state(tid)
            assert_resumed(state["values"]["messages"], calls(tmp_path), first.proc.pid, second.proc.pid)
            assert [t["thread_id"] for t in await bo.threads.search()] == []
            again = await sdk.runs.wait(tid, "lead_agent", input=user_message("thanks"))
            assert again["messages"][-1]["content"] == "finished"  # the thread takes new runs
        finally:
            await sdk.aclose()
            await bo.aclose()


async def test_a_run_survives_the_death_of_its_gateway_on_postgres_and_redis(
    tmp_path, gateway_database, redis_url
) -> None:
    """Two gateway processes on one PostgreSQL and Redis: the one executing a run is killed with
    SIGKILL; the other takes the run over, and a client that follows it from the survivor sees
    the stream from its first event to the end, the continuation included."""
    shared = {
        "checkpointer": {"type": "postgres", "url": gateway_database},
        "gateway": {"stream_bridge": "redis", "redis_url": redis_url},
    }
    (tmp_path / "hold").touch()
    with ExitStack() as stack:
        a = stack.enter_context(gateway_process(tmp_path, "a", **shared))
        b = stack.enter_context(gateway_process(tmp_path, "b", **shared))
        on_a, on_b = get_client(url=a.url, api_key=None), get_client(url=b.url, api_key=None)
        try:
            tid = (await on_a.threads.create())["thread_id"]
            run = await on_a.runs.create(
                tid,
                "lead_agent",
                input=user_message("steps 3"),
                stream_mode=["values", "updates"],
                stream_resumable=True,
            )
            await asyncio.wait_for(wait_for(tmp_path / "hold.held"), 60)
            assert (await on_b.runs.get(tid, run["run_id"]))["status"] == "running"
            a.proc.kill()
            a.proc.wait()
            os.unlink(tmp_path / "hold")
            events = await asyncio.wait_for(collect(on_b.runs.join_stream(tid, run["run_id"])), 60)
            ended = await on_b.runs.get(tid, run["run_id"])
            assert ended["status"] == "success" and ended["attempt"] == 2
            assert [e.data["attempt"] for e in events if e.event == "metadata"] == [1, 2]
            ids = [e.id for e in events]
            assert len(set(ids)) == len(ids), "no event twice"
            finals = [e.data for e in events if e.event == "values"]
            assert finals[-1]["messages"][-1]["content"] == "finished"
            state = await on_b.threads.get_state(tid)
            assert_resumed(state["values"]["messages"], calls(tmp_path), a.proc.pid, b.proc.pid)
            assert await thread_status(on_b, tid) == "idle"
        finally:
            await on_a.aclose()
            await on_b.aclose()


async def stream_until_held(sdk: Any, tmp_path: Path) -> tuple[str, asyncio.Task]:
    """A new thread, and a task streaming a ``steps 3`` run on it to its end (values mode),
    handed over once the run is held mid-way."""
    tid = (await sdk.threads.create())["thread_id"]
    stream = asyncio.create_task(
        collect(sdk.runs.stream(tid, "lead_agent", input=user_message("steps 3"), stream_mode=["values"]))
    )
    await asyncio.wait_for(wait_for(tmp_path / "hold.held"), 60)
    return tid, stream


async def collect(stream: Any) -> list[Any]:
    """Every event of an SSE stream, to its end."""
    return [part async for part in stream]


async def test_a_run_cancelled_after_its_process_died_is_not_resumed(tmp_path: Path) -> None:
    """Two processes on one SQLite home; the one executing a run is killed, and the run is
    cancelled through the other before its lease ran out: the worker that takes it over ends
    it as cancelled instead of resuming it, and the thread takes new runs."""
    (tmp_path / "hold").touch()
    slow_lease = {"runs": {"workers": 2, "lease_seconds": 3, "poll_seconds": 0.2}}
    with gateway_process(tmp_path, "a", **slow_lease) as a, gateway_process(tmp_path, "b", **slow_lease) as b:
        on_b = get_client(url=b.url, api_key=None)
        try:
            tid = (await on_b.threads.create())["thread_id"]
            on_a = get_client(url=a.url, api_key=None)
            run = await on_a.runs.create(tid, "lead_agent", input=user_message("steps 3"))
            await asyncio.wait_for(wait_for(tmp_path / "hold.held"), 60)
            await on_a.aclose()
            a.proc.kill()
            a.proc.wait()
            await on_b.runs.cancel(tid, run["run_id"])
            os.unlink(tmp_path / "hold")
            ended = await asyncio.wait_for(settled(on_b, tid, run["run_id"]), 60)
            assert ended["status"] == "interrupted"
            assert await thread_status(on_b, tid) == "interrupted"
            assert {pid for pid, _ in calls(tmp_path)} == {a.proc.pid}, "the survivor did not go on with it"
            values = await on_b.runs.wait(tid, "lead_agent", input=user_message("steps 1"))
            assert values["messages"][-1]["content"] == "finished"
        finally:
            await on_b.aclose()


@contextmanager
def worker_process(tmp_path: Path, name: str, **sections: Any) -> Iterator[subprocess.Popen]:
    """``herdsman worker`` with :func:`write_config`'s config; terminated and reaped at the end."""
    config = write_config(tmp_path, name, free_port(), **sections)
    proc = subprocess.Popen(
        [sys.executable, "-m", "herdsman", "worker", "--config", str(config)],
        cwd=tmp_path,
        env=child_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def test_a_gateway_without_workers_queues_runs_that_worker_processes_execute_and_resume(
    tmp_path, redis_url
) -> None:
    """A gateway with ``runs.workers: 0`` only accepts and relays; two ``herdsman worker``
    processes execute. The worker holding a run is killed mid-run; the other resumes it, and the
    client streaming it from the gateway sees it to the end. A ``reject`` run on the busy thread
    is refused by the gateway, although the gateway itself runs nothing."""
    shared = {"gateway": {"stream_bridge": "redis", "redis_url": redis_url}}
    (tmp_path / "hold").touch()
    with ExitStack() as stack:
        gateway = stack.enter_context(gateway_process(tmp_path, "gateway", runs={"workers": 0}, **shared))
        workers = [stack.enter_context(worker_process(tmp_path, f"worker{n}", **shared)) for n in range(2)]
        sdk = get_client(url=gateway.url, api_key=None)
        try:
            tid, stream = await stream_until_held(sdk, tmp_path)
            with pytest.raises(httpx.HTTPStatusError) as refused:
                await sdk.runs.create(tid, "lead_agent", input=user_message("me too"), multitask_strategy="reject")
            assert refused.value.response.status_code == 409
            holder = next(w for w in workers if w.pid == calls(tmp_path)[-1][0])
            survivor = next(w for w in workers if w is not holder)
            holder.kill()
            holder.wait()
            os.unlink(tmp_path / "hold")
            events = await asyncio.wait_for(stream, 60)
            run_id = events[0].data["run_id"]
            assert [e.data["attempt"] for e in events if e.event == "metadata"] == [1, 2]
            assert events[-1].event == "values" and events[-1].data["messages"][-1]["content"] == "finished"
            ended = await sdk.runs.get(tid, run_id)
            assert ended["status"] == "success" and ended["attempt"] == 2
            state = await sdk.threads.get_state(tid)
            assert_resumed(state["values"]["messages"], calls(tmp_path), holder.pid, survivor.pid)
            assert gateway.proc.pid not in {pid for pid, _ in calls(tmp_path)}, "the gateway executed nothing"
        finally:
            await sdk.aclose()


def test_a_process_without_workers_needs_a_shared_database_and_redis(tmp_path: Path) -> None:
    """``runs.workers: 0`` with the memory checkpointer or bridge is a config error that says what to set."""
    from herdsman.config import parse_config
    from herdsman.config.loader import ConfigError

    for sections, fix in (
        ({"checkpointer": {"type": "memory"}}, "checkpointer.type sqlite or postgres"),
        ({"checkpointer": {"type": "sqlite"}}, "gateway.stream_bridge: redis"),
    ):
        with pytest.raises(ConfigError) as info:
            parse_config(yaml.safe_dump({"runs": {"workers": 0}, **sections}), env={})
        assert "runs.workers is 0" in str(info.value) and fix in str(info.value)


async def test_a_worker_asked_to_stop_hands_its_run_to_another_at_once(tmp_path, redis_url) -> None:
    """SIGTERM to the ``herdsman worker`` executing a run: it gives the run back to the queue, and
    another worker resumes it from its last checkpoint without waiting for the lease (an hour
    here) to run out; the client streaming it from the gateway sees it to the end."""
    shared = {
        "gateway": {"stream_bridge": "redis", "redis_url": redis_url},
        "runs": {"workers": 2, "lease_seconds": 3600, "poll_seconds": 0.2},
    }
    unheld = [
        {"name": "steps", "use": "tests.gateway.recovery_model:StepsModel", "calls_file": str(tmp_path / "calls.log")}
    ]
    (tmp_path / "hold").touch()
    with ExitStack() as stack:
        gateway = stack.enter_context(gateway_process(tmp_path, "gateway", **{**shared, "runs": {"workers": 0}}))
        first = stack.enter_context(worker_process(tmp_path, "first", **shared))
        sdk = get_client(url=gateway.url, api_key=None)
        try:
            tid, stream = await stream_until_held(sdk, tmp_path)
            second = stack.enter_context(worker_process(tmp_path, "second", models=unheld, **shared))
            first.terminate()
            assert first.wait(timeout=30) == 0
            events = await asyncio.wait_for(stream, 60)
            assert [e.data["attempt"] for e in events if e.event == "metadata"] == [1, 2]
            assert events[-1].data["messages"][-1]["content"] == "finished"
            run = (await sdk.runs.list(tid))[0]
            assert run["status"] == "success" and run["attempt"] == 2
            state = await sdk.threads.get_state(tid)
            assert_resumed(state["values"]["messages"], calls(tmp_path), first.pid, second.pid)
        finally:
            await sdk.aclose()


async def stopped_here(manager: Any, thread_id: str) -> None:
    """Wait until the process of ``manager`` executes no run of the thread."""
    while manager.active_runs(thread_id):
        await asyncio.sleep(0.05)


@asynccontextmanager
async def held_in_process(home: Path) -> AsyncIterator[tuple[Any, Any, dict[str, Any], Any]]:
    """An in-process gateway on SQLite with 1 s leases, executing a run held mid-way: (its SDK
    client, its run manager, the run, a connection to its run queue's database)."""
    config = make_config(home, checkpointer={"type": "sqlite"}, runs={"lease_seconds": 1, "poll_seconds": 0.2})
    model = scripted_model()
    with running_gateway(config, model=model) as served:
        sdk = get_client(url=served.url, api_key=None)
        try:
            tid = (await sdk.threads.create())["thread_id"]
            run = await sdk.runs.create(tid, "lead_agent", input=user_message(f"hello {HOLD}"))
            await asyncio.to_thread(model.wait_until_held)
            with sqlite3.connect(gateway_db_path(config, "runs.sqlite")) as db:
                yield sdk, served.app.state.gateway.runs, run, db
                model.release()
        finally:
            model.release()
            await sdk.aclose()


async def test_a_process_whose_lease_was_taken_stops_the_run_and_leaves_it_to_the_new_holder(home) -> None:
    """A run's row claimed by another worker while this process still executed it (as after a
    stall longer than a lease): at its next renewal this process stops the run without ending
    it (the record stays ``running``, for the new holder), so it never executes in two places."""
    async with held_in_process(home) as (sdk, manager, run, db):
        db.execute(
            "UPDATE herdsman_run_queue SET worker_id = 'elsewhere', lease_until = ? WHERE run_id = ?",
            (time.time() + 3600, run["run_id"]),
        )
        db.commit()
        await asyncio.wait_for(stopped_here(manager, run["thread_id"]), 60)
        assert (await sdk.runs.get(run["thread_id"], run["run_id"]))["status"] == "running"
        assert (await sdk.threads.get(run["thread_id"]))["status"] == "busy"


async def test_a_queued_run_that_cannot_be_read_back_ends_as_an_error_and_the_worker_goes_on(home) -> None:
    """A queued run whose row no longer reads as a run (as after an upgrade), left by a worker
    that lost it: the worker that claims it ends it as an error that says to start a new run,
    and the thread takes new runs."""
    async with held_in_process(home) as (sdk, manager, run, db):
        # taken by a worker that then died: this process stops it, and claims it once that lease ran out
        db.execute(
            "UPDATE herdsman_run_queue SET spec = ?, worker_id = 'gone', lease_until = ? WHERE run_id = ?",
            ('{"no_such_field": 1}', time.time() + 2, run["run_id"]),
        )
        db.commit()
        ended = await asyncio.wait_for(settled(sdk, run["thread_id"], run["run_id"]), 60)
        assert ended["status"] == "error" and ended["error"]["error"] == "RunNotResumable"
        assert "start a new run on the thread" in ended["error"]["message"]
        values = await sdk.runs.wait(run["thread_id"], "lead_agent", input=user_message("second"))
        assert values["messages"][-1]["content"] == "echo: second"


def ran_counts(home: Path, thread_id: str) -> dict[str, int]:
    """How many times each bash call of the chaos agent ran on the thread (by tool call id)."""
    ran = home / "threads" / thread_id / "user-data" / "workspace" / "ran"
    return {p.name: len(p.read_text().split()) for p in ran.iterdir()} if ran.is_dir() else {}


async def test_a_command_in_flight_when_its_worker_was_killed_is_reported_not_run_again(tmp_path, redis_url) -> None:
    """A ``herdsman worker`` is killed with SIGKILL while a bash command of its run executes; the
    other worker resumes the run: the command is not run again, the model is told it was
    interrupted (and makes the step again), and the run ends in success."""
    chaos = [
        {"name": "chaos", "use": "tests.gateway.chaos_model:ChaosModel", "calls_file": str(tmp_path / "calls.log")}
    ]
    shared = {"gateway": {"stream_bridge": "redis", "redis_url": redis_url}, "models": chaos}
    with ExitStack() as stack:
        gateway = stack.enter_context(gateway_process(tmp_path, "gateway", runs={"workers": 0}, **shared))
        workers = [stack.enter_context(worker_process(tmp_path, f"worker{n}", **shared)) for n in range(2)]
        sdk = get_client(url=gateway.url, api_key=None)
        try:
            tid = (await sdk.threads.create())["thread_id"]
            run = await sdk.runs.create(tid, "lead_agent", input=user_message("chaos r1 1 3"))
            while not (started := ran_counts(tmp_path / "home", tid)):
                await asyncio.sleep(0.05)
            (in_flight,) = started
            pid = int((tmp_path / "calls.log").read_text().split()[-1])
            holder = next(w for w in workers if w.pid == pid)
            holder.kill()
            holder.wait()
            ended = await asyncio.wait_for(settled(sdk, tid, run["run_id"]), 60)
            assert ended["status"] == "success" and ended["attempt"] == 2
            counts = ran_counts(tmp_path / "home", tid)
            assert counts[in_flight] == 1, "the command in flight was not run again"
            assert set(counts.values()) == {1} and len(counts) == 2, "the step made again ran once"
            messages = (await sdk.threads.get_state(tid))["values"]["messages"]
            assert [m["type"] for m in messages] == ["human", "ai", "tool", "ai", "tool", "ai"]
            notice, result = messages[2], messages[4]
            assert notice["tool_call_id"] == in_flight and notice["status"] == "error"
            assert "interrupted" in notice["content"] and "run it again if needed" in notice["content"]
            assert result["content"].strip() == "r1 step1"
            assert messages[-1]["content"] == "finished r1 after 1 interrupted", "the model saw the notice"
        finally:
            await sdk.aclose()


@contextmanager
def record_store_down(home: Path, redis_url: str) -> Iterator[tuple[Any, str, Any]]:
    """A gateway without workers (SQLite, Redis bridge) whose record store cannot write runs until
    the caller deletes ``manager.threads.put_run``: (config, url, run manager)."""
    sections = {"checkpointer": {"type": "sqlite"}, "gateway": {"stream_bridge": "redis", "redis_url": redis_url}}
    config = make_config(home, runs={"workers": 0, "lease_seconds": 1, "poll_seconds": 0.2}, **sections)
    with running_gateway(config, model=scripted_model()) as served:
        manager = served.app.state.gateway.runs

        async def store_down(record: dict[str, Any]) -> None:
            raise OSError("the record store is gone")

        manager.threads.put_run = store_down
        yield config, served.url, manager


def queued_runs(config: Any, tid: str) -> list[tuple[str]]:
    """The thread's rows in the SQLite run queue."""
    with sqlite3.connect(gateway_db_path(config, "runs.sqlite")) as db:
        return db.execute("SELECT run_id FROM herdsman_run_queue WHERE thread_id = ?", (tid,)).fetchall()


async def test_a_gateway_that_cannot_record_a_run_it_queued_leaves_no_run_behind(home, redis_url) -> None:
    """A gateway without workers queues a run (no worker may claim it before its record exists),
    then cannot write its record: the client gets an error, and neither the
    queue row nor a record is left (a held row would be renewed by the live gateway forever);
    the thread is not busy and takes the next run."""
    with record_store_down(home, redis_url) as (config, url, manager):
        sdk = get_client(url=url, api_key=None)
        try:
            tid = (await sdk.threads.create())["thread_id"]
            with pytest.raises(httpx.HTTPStatusError):
                await sdk.runs.create(tid, "lead_agent", input=user_message("hi"))
            del manager.threads.put_run
            assert queued_runs(config, tid) == []
            await sdk.aclose()
            sdk = get_client(url=url, api_key=None)  # the server closed the connection of its 500
            assert await sdk.runs.list(tid) == []
            assert (await sdk.threads.get(tid))["status"] == "idle"
        finally:
            await sdk.aclose()


async def test_a_streamed_run_whose_record_cannot_be_written_ends_its_stream_with_an_error(home, redis_url) -> None:
    """A gateway without workers sends a streamed run's metadata event as soon as its queue row is
    committed and writes its record afterwards; when that write fails, the stream that already
    has the metadata event ends with an error event naming the failure, no queue row or record
    is left, the thread is idle and the next run on it goes through."""
    with record_store_down(home, redis_url) as (config, url, manager):
        sdk = get_client(url=url, api_key=None)
        try:
            tid = (await sdk.threads.create())["thread_id"]
            parts = [p async for p in sdk.runs.stream(tid, "lead_agent", input=user_message("hi"))]
            del manager.threads.put_run
            assert [p.event for p in parts] == ["metadata", "error"]
            assert parts[1].data["error"] == "OSError" and "the record store is gone" in parts[1].data["message"]
            assert queued_runs(config, tid) == []
            assert await sdk.runs.list(tid) == []
            assert (await sdk.threads.get(tid))["status"] == "idle"
            run = await sdk.runs.create(tid, "lead_agent", input=user_message("hi"))
            assert (await sdk.runs.list(tid))[0]["run_id"] == run["run_id"]
        finally:
            await sdk.aclose()
