"""The chaos test: 200 runs through 2 gateways executed by 3 workers, while a worker and a
gateway are killed with SIGKILL and restarted.

Two ``herdsman serve`` gateways with ``runs.workers: 0`` (they accept runs and relay streams)
and three ``herdsman worker`` processes share a real PostgreSQL (checkpoints, records, the run
queue) and Redis (the stream bridge). 40 conversations of 5 runs each go through both gateways
with the official ``langgraph-sdk`` client; a third of the runs are streamed, the rest created
and joined. The agent (``chaos_model.ChaosModel``) makes 2 or 3 bash steps per run, some of
them long; each bash call writes one line per execution into a file named by its tool call id.
Mid-way the worker holding the most runs is killed and restarted, then gateway ``a`` is killed
while clients stream from it and restarted; a client whose gateway is gone goes on through the
other one (a stream reconnects there with ``Last-Event-ID``).

Then: every run ended ``success``; every thread holds its 5 conversations complete and in
order; no tool call ran twice, and no step ran that the thread does not show (a step executed
again past its last checkpoint would leave one); every stream a client received equals the
run's whole stream, reconnected ones included, with no event twice or missing; and no gateway
failed a request (the SDK would hide a stream that failed with 500 by reconnecting).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from langgraph_sdk.schema import StreamPart

from tests.gateway.chaos_support import GatewayDown, Stack, sdk_client
from tests.gateway.gateway_support import user_message

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(600)]

THREADS, RUNS_PER_THREAD = 40, 5
GATEWAYS, WORKERS = ("a", "b"), ("w1", "w2", "w3")
FAILURES = (GatewayDown, httpx.TransportError)


@dataclass(frozen=True)
class Plan:
    """One run: what the user asks, through which gateway first, streamed or joined."""

    thread: int
    index: int

    @property
    def tag(self) -> str:
        """The run's name in its messages and metadata."""
        return f"t{self.thread}r{self.index}"

    @property
    def text(self) -> str:
        """The user message: 2 or 3 steps, one run in seven with long (1.5 s) steps."""
        steps = 3 if (self.thread + self.index) % 3 == 1 else 2
        sleep = 1.5 if (self.thread * RUNS_PER_THREAD + self.index) % 7 == 0 else 0.1
        return f"chaos {self.tag} {steps} {sleep}"

    @property
    def steps(self) -> int:
        """How many bash steps the run makes."""
        return int(self.text.split()[2])

    @property
    def gateway(self) -> str:
        """The gateway the client tries first."""
        return GATEWAYS[(self.thread + self.index) % 2]

    @property
    def streamed(self) -> bool:
        """Whether the client streams the run (else it creates and joins it)."""
        return (self.thread + self.index) % 3 == 0


@dataclass
class Clients:
    """The SDK clients of both gateways, which of them are down, and what the runs did."""

    sdk: dict[str, Any]
    down: set[str] = field(default_factory=set)
    finished: int = 0
    open_streams: Counter = field(default_factory=Counter)
    streams: dict[str, list[StreamPart]] = field(default_factory=dict)  # run id -> events received
    reconnected: list[str] = field(default_factory=list)  # run ids whose stream went on elsewhere

    def pick(self, preferred: str) -> str:
        """``preferred``, unless it is down."""
        if preferred in self.down:
            return next(g for g in GATEWAYS if g != preferred)
        return preferred

    async def call(self, preferred: str, request: Callable[[Any], Awaitable[Any]]) -> Any:
        """An idempotent request, sent again through the other gateway when one is gone."""
        for _ in range(50):
            name = self.pick(preferred)
            try:
                return await request(self.sdk[name])
            except FAILURES:
                self.down.add(name)
                preferred = next(g for g in GATEWAYS if g != name)
                await asyncio.sleep(0.1)
        raise AssertionError("no gateway answered")

    async def find(self, thread_id: str, tag: str) -> dict[str, Any] | None:
        """The thread's run named ``tag``, when a gateway accepted it before it died."""
        runs = await self.call("b", lambda sdk: sdk.runs.list(thread_id, limit=100))
        return next((r for r in runs if r["metadata"].get("tag") == tag), None)

    async def create(self, thread_id: str, plan: Plan) -> str:
        """Create the run (background); when the gateway died mid-request, look for it first."""
        for _ in range(50):
            name = self.pick(plan.gateway)
            try:
                run = await self.sdk[name].runs.create(
                    thread_id, "lead_agent", input=user_message(plan.text), metadata={"tag": plan.tag}
                )
                return run["run_id"]
            except FAILURES:
                self.down.add(name)
                if (found := await self.find(thread_id, plan.tag)) is not None:
                    return found["run_id"]
        raise AssertionError(f"run {plan.tag} could not be created")

    async def stream(self, thread_id: str, plan: Plan) -> str:
        """Stream the run; when its gateway dies, go on through the other one from the last event."""
        events: list[StreamPart] = []
        counted = False
        name = self.pick(plan.gateway)
        parts = self.sdk[name].runs.stream(
            thread_id,
            "lead_agent",
            input=user_message(plan.text),
            metadata={"tag": plan.tag},
            stream_mode=["values", "updates"],
            stream_resumable=True,
        )
        try:
            async for part in parts:
                if not counted:
                    self.open_streams[name] += 1
                    counted = True
                events.append(part)
        except FAILURES:
            self.down.add(name)
            if events:
                run_id = events[0].data["run_id"]
            elif (found := await self.find(thread_id, plan.tag)) is not None:
                run_id = found["run_id"]
            else:
                return await self.stream(thread_id, plan)  # never accepted: send it again
            other = self.pick(name)
            last = events[-1].id if events else None
            events += [p async for p in self.sdk[other].runs.join_stream(thread_id, run_id, last_event_id=last)]
            self.reconnected.append(run_id)
        finally:
            if counted:
                self.open_streams[name] -= 1
        run_id = events[0].data["run_id"]
        self.streams[run_id] = events
        return run_id

    async def conversation(self, thread: int) -> tuple[str, list[str]]:
        """Create a thread and make its runs one after another; (thread id, run ids)."""
        first = Plan(thread, 0)
        thread_id = (await self.call(first.gateway, lambda sdk: sdk.threads.create()))["thread_id"]
        run_ids = []
        for index in range(RUNS_PER_THREAD):
            plan = Plan(thread, index)
            run_id = await (self.stream(thread_id, plan) if plan.streamed else self.create(thread_id, plan))
            await self.call(plan.gateway, lambda sdk, run_id=run_id: sdk.runs.join(thread_id, run_id))
            run_ids.append(run_id)
            self.finished += 1
        return thread_id, run_ids


async def until(condition: Callable[[], bool], what: str, timeout: float = 240) -> None:
    """Wait until ``condition()`` holds (looked at every 50 ms)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def leases(database_url: str) -> Counter:
    """How many runs each worker process holds now, by process id."""
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT worker_id FROM herdsman_run_queue WHERE worker_id IS NOT NULL "
            "AND lease_until > extract(epoch from now())"
        ).fetchall()
    return Counter(int(worker_id.split(":")[1]) for (worker_id,) in rows)


async def chaos(stack: Stack, clients: Clients, database_url: str) -> dict[str, Any]:
    """Kill the busiest worker mid-run, then gateway ``a`` mid-stream; restart each."""
    await until(lambda: clients.finished >= 40, "40 runs to finish")
    pids = {stack.procs[w].pid: w for w in WORKERS}
    while not (
        held := Counter({pid: n for pid, n in (await asyncio.to_thread(leases, database_url)).items() if pid in pids})
    ):
        await asyncio.sleep(0.05)
    victim = pids[held.most_common(1)[0][0]]
    held_runs = held[stack.procs[victim].pid]
    stack.kill(victim)
    await asyncio.sleep(0.5)
    stack.start_worker(victim)
    await until(lambda: clients.finished >= 90 and clients.open_streams["a"] >= 2, "streams open on gateway a")
    streams_cut = clients.open_streams["a"]
    stack.kill("a")
    await asyncio.sleep(3)  # clients notice and go to b (the SDK waits ~1 s before it reconnects)
    await asyncio.to_thread(stack.start_gateway, "a")
    clients.down.discard("a")
    return {"worker_killed_holding": held_runs, "streams_cut": streams_cut}


def ran(home: Path, thread_id: str) -> dict[str, int]:
    """How many times each bash call ran on the thread, by tool call id."""
    folder = home / "threads" / thread_id / "user-data" / "workspace" / "ran"
    return {p.name: len(p.read_text().split()) for p in folder.iterdir()} if folder.is_dir() else {}


def check_conversation(thread: int, messages: list[dict[str, Any]], counts: dict[str, int]) -> int:
    """The thread's messages are its runs' conversations, complete and in order, and each bash
    call ran once (one in flight when its worker died: at most once); returns how many calls
    were answered as interrupted."""
    at, interrupted, seen = 0, 0, set()
    for index in range(RUNS_PER_THREAD):
        plan = Plan(thread, index)
        assert messages[at]["type"] == "human" and messages[at]["content"] == plan.text
        at, done, notices = at + 1, 0, 0
        while messages[at]["type"] == "ai" and messages[at]["tool_calls"]:
            (call,) = messages[at]["tool_calls"]
            result = messages[at + 1]
            assert result["type"] == "tool" and result["tool_call_id"] == call["id"], (
                f"{plan.tag}: a call without its result"
            )
            seen.add(call["id"])
            if result["status"] == "error":
                assert "interrupted" in result["content"], result["content"]
                assert counts.get(call["id"], 0) <= 1, f"{plan.tag}: interrupted call {call['id']} ran twice"
                notices += 1
            else:
                done += 1
                assert result["content"].strip() == f"{plan.tag} step{done}", "steps in order"
                assert counts.get(call["id"]) == 1, f"{plan.tag}: call {call['id']} ran {counts.get(call['id'])} times"
            at += 2
        assert done == plan.steps
        assert (
            messages[at]["type"] == "ai"
            and messages[at]["content"] == f"finished {plan.tag} after {notices} interrupted"
        )
        at, interrupted = at + 1, interrupted + notices
    assert at == len(messages), "nothing after the last run"
    assert set(counts) <= seen, f"steps ran that the thread does not show: {set(counts) - seen}"
    return interrupted


async def test_runs_survive_killed_workers_and_gateways(tmp_path: Path, gateway_database: str, redis_url: str) -> None:
    """200 runs, a worker and a gateway killed with SIGKILL mid-way: see the module docstring."""
    stack = Stack(tmp_path, gateway_database, redis_url)
    clients: Clients | None = None
    try:
        for name in WORKERS:
            stack.start_worker(name)
        started = await asyncio.gather(*(asyncio.to_thread(stack.start_gateway, name) for name in GATEWAYS))
        urls = dict(zip(GATEWAYS, started, strict=False))
        clients = Clients({name: sdk_client(url) for name, url in urls.items()})
        started = time.monotonic()
        killer = asyncio.create_task(chaos(stack, clients, gateway_database))
        conversations = await asyncio.wait_for(asyncio.gather(*(clients.conversation(t) for t in range(THREADS))), 400)
        chaos_done = await asyncio.wait_for(killer, 60)
        seconds = time.monotonic() - started

        sdk = clients.sdk["b"]
        interrupted, resumed = 0, 0
        for thread, (thread_id, run_ids) in enumerate(conversations):
            runs = await sdk.runs.list(thread_id, limit=100)
            assert sorted(r["run_id"] for r in runs) == sorted(run_ids), "one run per request, none lost or doubled"
            assert {r["status"] for r in runs} == {"success"}, [(r["run_id"], r["status"], r["error"]) for r in runs]
            resumed += sum(1 for r in runs if r["attempt"] > 1)
            assert (await sdk.threads.get(thread_id))["status"] == "idle"
            messages = (await sdk.threads.get_state(thread_id))["values"]["messages"]
            interrupted += check_conversation(thread, messages, ran(tmp_path / "home", thread_id))
        for conversation_run_ids in (ids for _, ids in conversations):
            for run_id in conversation_run_ids:
                if run_id not in clients.streams:
                    continue
                received = clients.streams[run_id]
                thread_id = next(t for t, ids in conversations if run_id in ids)
                whole = [p async for p in sdk.runs.join_stream(thread_id, run_id)]
                assert [(p.id, p.event, p.data) for p in received] == [(p.id, p.event, p.data) for p in whole], (
                    f"run {run_id}: the stream received differs from the run's stream"
                )
                assert len({p.id for p in received}) == len(received)
        for name in GATEWAYS:  # the SDK retries a stream that failed with 500; a browser's EventSource shows it
            assert "unhandled_error" not in (tmp_path / f"{name}.log").read_text(errors="replace"), (
                f"gateway {name} failed requests"
            )
        assert resumed >= 1, "the killed worker held runs that another resumed"
        assert clients.reconnected, "streams cut by the gateway's death went on through the other"
        print(
            f"chaos: {THREADS * RUNS_PER_THREAD} runs in {seconds:.1f} s, {resumed} resumed, "
            f"{interrupted} tool calls interrupted, {len(clients.reconnected)} streams reconnected, {chaos_done}"
        )
    except BaseException:
        for log in sorted(tmp_path.glob("*.log")):  # what the processes said, for a failure in CI
            print(f"--- {log.name} (last lines)\n" + "\n".join(log.read_text(errors="replace").splitlines()[-40:]))
        raise
    finally:
        if clients is not None:
            for client in clients.sdk.values():
                await client.aclose()
        stack.stop_all()
