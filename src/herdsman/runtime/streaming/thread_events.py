"""The protocol events of a thread's runs, numbered once and read by any number of streams.

``POST /threads/{id}/stream/events`` is thread-centric: one stream follows run after run, and a
client that reconnects (or opens a second, wider stream) sends the last ``seq`` it saw as
``since``. So each thread gets one :class:`ThreadEventLog` that follows its runs (the run
manager tells of each new one), translates their events from the stream bridge
(:mod:`herdsman.runtime.streaming.protocol_events`) and numbers them: every stream of the thread sees the
same ``seq`` and ``event_id`` for the same event, as the SDK's ``since`` and dedup need.

A stream without ``since`` attaches to the thread as it is now (the SDK opens one to watch
lifecycle events, and reads a thread that has ended through ``GET .../state``): it starts at the
first event of the oldest run in progress (or waiting for its turn), or that ended before any
such stream read it (a quick run, over before the SDK's watcher connected after ``run.start``);
else at the first event of the last run when it stopped at an interrupt, so a client that comes
back learns what it is asked; else with the next run. Replaying a finished run's ``completed``
would end a new session's ``thread.output`` before its own run. Streams with ``since`` (the
SDK's projections, from ``run.start``'s ``applied_through_seq``) get exactly what follows it. Logs are in this
process's memory (bounded by count and bytes, dropped when idle), like the runs they follow.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from herdsman.logs import get_logger
from herdsman.runtime.runs.runs import Run, RunManager
from herdsman.runtime.streaming.bounded_log import DEFAULT_MAX_BYTES, BoundedLog
from herdsman.runtime.streaming.protocol_events import ProtocolEvent, RunProtocolTranslator
from herdsman.runtime.streaming.stream_bridge import END_EVENT, StreamBridge, follow_run

log = get_logger(__name__)

EVENT_OVERHEAD_BYTES = 200  # what an event costs beyond its data (ids, method, namespace)
GRAPH_NAME = "lead_agent"  # the root's name in lifecycle events: the graph every assistant runs


@dataclass
class _RunEntry:
    """Where a run's events start in the log, and how it ended."""

    first_seq: int
    translator: RunProtocolTranslator
    ended: bool = False
    attached: bool = False  # a stream without ``since`` has read some of its events


@dataclass(frozen=True)
class EventFilter:
    """What one stream wants: channels, namespace prefixes and how deep below them."""

    channels: frozenset[str]
    namespaces: tuple[tuple[str, ...], ...] | None = None
    depth: int | None = None

    def wants(self, event: dict[str, Any]) -> bool:
        """Whether ``event`` goes out on this stream (as the SDK's ``matches_subscription``)."""
        method = event["method"]
        channel = "input" if method == "input.requested" else method
        if channel == "custom":
            name = (
                (event["params"].get("data") or {}).get("name")
                if isinstance(event["params"].get("data"), dict)
                else None
            )
            if "custom" not in self.channels and f"custom:{name}" not in self.channels:
                return False
        elif channel not in self.channels:
            return False
        if not self.namespaces:
            return True
        namespace = event["params"]["namespace"]
        return any(
            _prefix_of(namespace, prefix) and (self.depth is None or len(namespace) - len(prefix) <= self.depth)
            for prefix in self.namespaces
        )


def _prefix_of(namespace: list[str], prefix: tuple[str, ...]) -> bool:
    """Whether ``prefix`` starts ``namespace``; a prefix segment without ``:`` also matches a
    segment with a task id (``tools`` matches ``tools:call_1``)."""
    if len(prefix) > len(namespace):
        return False
    return all(
        seg == cand or (":" not in seg and cand.partition(":")[0] == seg)
        for seg, cand in zip(prefix, namespace, strict=False)
    )


@dataclass
class ThreadEventLog:
    """The numbered protocol events of one thread's runs."""

    thread_id: str
    runs: RunManager
    bridge: StreamBridge
    max_events: int = 10_000
    max_bytes: int = DEFAULT_MAX_BYTES
    heartbeat: float = 15.0
    events: BoundedLog[dict[str, Any]] = field(init=False)
    seq: int = 0
    readers: int = 0
    created_at: str | None = None  # the thread record's it follows (None: not known yet)
    dropped: bool = False  # its thread was deleted (or its id names another one): its streams end
    last_used: float = field(default_factory=time.monotonic)
    _runs: dict[str, _RunEntry] = field(default_factory=dict)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task | None = None
    _watching: asyncio.Queue[Run] | None = None

    def __post_init__(self) -> None:
        self.events = BoundedLog(self.max_events, self.max_bytes)

    def start(self) -> None:
        """Follow the thread's runs: those in progress now, then each new one."""
        queue = self._watching = self.runs.watch_thread(self.thread_id)
        for run in self.runs.active_runs(self.thread_id):
            queue.put_nowait(run)
        self._task = asyncio.create_task(self._follow(queue), name=f"thread-events-{self.thread_id}")

    async def close(self) -> None:
        """Stop following the thread."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def drop(self) -> None:
        """Stop following the thread and end its streams (they held the log's events for ever)."""
        self.dropped = True
        if self._task is not None:
            self._task.cancel()
        if self._watching is not None:  # also when the task was cancelled before it ever ran
            self.runs.unwatch_thread(self.thread_id, self._watching)
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def idle(self) -> bool:
        """No reader, no run in progress."""
        return self.readers == 0 and not self.runs.active_runs(self.thread_id)

    async def _follow(self, queue: asyncio.Queue[Run]) -> None:
        try:
            while True:
                run = await queue.get()
                try:
                    await self._follow_run(run)
                except Exception as exc:  # noqa: BLE001 - one run's events must not end the thread's log
                    log.warning("thread_events_run_failed", thread_id=self.thread_id, run_id=run.run_id, error=str(exc))
        finally:
            self.runs.unwatch_thread(self.thread_id, queue)

    async def _follow_run(self, run: Run) -> None:
        if run.run_id in self._runs:
            return
        entry = _RunEntry(first_seq=self.seq + 1, translator=RunProtocolTranslator(GRAPH_NAME))
        self._runs[run.run_id] = entry
        translator = entry.translator
        self._append(run.run_id, translator.start())
        failed = False
        try:
            async for event in follow_run(
                self.bridge,
                run.run_id,
                heartbeat=self.heartbeat,
                ended=partial(self.runs.ended, run.thread_id, run.run_id),
            ):
                if event is None:
                    continue
                if event.event == END_EVENT:
                    break
                failed = failed or event.event == "error"
                self._append(run.run_id, translator.translate(event.event, json.loads(event.data)), len(event.data))
        except Exception as exc:  # noqa: BLE001 - the bridge gave up: the run is still closed once over
            log.warning("thread_events_run_lost", thread_id=self.thread_id, run_id=run.run_id, error=str(exc))
            await self._until_over(run)
        if run.task is not None:
            await asyncio.wait([run.task])  # its status is final once its task is done
        entry.ended = True
        self._append(run.run_id, [] if failed else translator.finish(await self._final_status(run)))

    async def _final_status(self, run: Run) -> str:
        """How ``run`` ended: its own status when this process executed it, else its record's
        (another process executed it: written before its end event)."""
        if run.task is not None:
            return run.status
        try:
            record = await self.runs.get(run.thread_id, run.run_id)
        except Exception as exc:  # noqa: BLE001 - the log still closes the run
            log.warning("thread_events_run_not_read", thread_id=self.thread_id, run_id=run.run_id, error=str(exc))
            record = None
        return (record or {}).get("status", "success")

    async def _until_over(self, run: Run) -> None:
        """Wait until ``run`` is over: its task here, or its record for a run another process
        executes (read every heartbeat; a read that fails is tried again)."""
        if run.task is not None:
            await asyncio.wait([run.task])
            return
        while True:
            try:
                if await self.runs.ended(run.thread_id, run.run_id):
                    return
            except Exception as exc:  # noqa: BLE001 - the record store may be away too
                log.warning("thread_events_run_not_read", thread_id=self.thread_id, run_id=run.run_id, error=str(exc))
            await asyncio.sleep(self.heartbeat)

    def _append(self, run_id: str, events: list[ProtocolEvent], source_bytes: int = 0) -> None:
        """Number and keep ``events``, translated from a bridge event of ``source_bytes`` (their
        size in the log's byte budget, shared among them)."""
        if not events:
            return
        size = EVENT_OVERHEAD_BYTES + source_bytes // len(events)
        now = int(time.time() * 1000)
        for event in events:
            self.seq += 1
            params: dict[str, Any] = {"namespace": list(event.namespace), "timestamp": now, "data": event.data}
            if event.node is not None:
                params["node"] = event.node
            self.events.append(
                {
                    "type": "event",
                    "event_id": f"{run_id}:{self.seq}",
                    "seq": self.seq,
                    "method": event.method,
                    "params": params,
                },
                size,
            )
        first_kept = self.events[0]["seq"]
        for old_id in [r for r, e in list(self._runs.items())[:-1] if e.ended and e.first_seq < first_kept]:
            del self._runs[old_id]  # its events are gone from the log
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def start_seq(self) -> int:
        """Where a stream without ``since`` starts (see the module docstring)."""
        active = {r.run_id for r in self.runs.active_runs(self.thread_id)}
        for run_id, entry in self._runs.items():
            if run_id in active or not entry.ended or not entry.attached:
                return entry.first_seq
        if active or not self._runs:
            return self.seq + 1  # the run's events are not in the log yet: they come next
        last = next(reversed(self._runs.values()))
        return last.first_seq if last.translator.interrupt_ids else self.seq + 1

    def tree(self) -> dict[str, Any]:
        """``agent.getTree``: the latest run's root and the subgraph namespaces it opened."""
        status = "completed"
        children: list[dict[str, Any]] = []
        if self._runs:
            entry = next(reversed(self._runs.values()))
            status = entry.translator.root_status
            for path, child_status in entry.translator.namespaces.items():
                if len(path) == 1:
                    children.append(
                        {"namespace": list(path), "status": child_status, "graph_name": path[0].partition(":")[0]}
                    )
        return {"namespace": [], "status": status, "graph_name": GRAPH_NAME, "children": children}

    async def read(self, since: int | None, wanted: EventFilter) -> AsyncIterator[dict[str, Any] | None]:
        """The events after ``since`` (see :meth:`start_seq` without it) that ``wanted`` takes,
        then live ones, forever; None when the thread has been quiet for ``heartbeat`` seconds."""
        after = since if since is not None else self.start_seq() - 1
        self.readers += 1
        try:
            while not self.dropped:
                self.last_used = time.monotonic()
                first = self.seq - len(self.events) + 1
                for index in range(max(0, after + 1 - first), len(self.events)):
                    event = self.events[index]
                    after = event["seq"]
                    if since is None and (entry := self._runs.get(event["event_id"].rpartition(":")[0])):
                        entry.attached = True
                    if wanted.wants(event):
                        yield event
                waiter = self._changed
                if self.seq > after:
                    continue
                try:
                    async with asyncio.timeout(self.heartbeat):
                        await waiter.wait()
                except TimeoutError:
                    yield None
        finally:
            self.readers -= 1
            self.last_used = time.monotonic()


class ThreadEventHub:
    """The event logs of the threads being streamed, one per thread, dropped when idle."""

    def __init__(
        self,
        runs: RunManager,
        bridge: StreamBridge,
        *,
        heartbeat: float = 15.0,
        idle_seconds: float = 600.0,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        """``idle_seconds``: how long a log nobody reads, of a thread with no run, is kept;
        ``max_bytes``: the byte budget of each thread's log."""
        self.max_bytes = max_bytes
        self.runs = runs
        self.bridge = bridge
        self.heartbeat = heartbeat
        self.idle_seconds = idle_seconds
        self._logs: dict[str, ThreadEventLog] = {}

    def log(self, thread_id: str, created_at: str | None = None) -> ThreadEventLog:
        """The thread's log, following the thread from now on (its runs in progress included).

        ``created_at`` is the thread record's (None: no thread has the id yet). A log kept for an
        earlier thread with this id, deleted through another process (whose delete could not
        :meth:`drop` it here), is dropped first: a thread made again with the id, by any user,
        never reads the deleted one's events."""
        self._sweep()
        found = self._logs.get(thread_id)
        if found is not None and found.created_at is not None and found.created_at != created_at:
            self.drop(thread_id)
            found = None
        if found is None:
            found = ThreadEventLog(
                thread_id, self.runs, self.bridge, heartbeat=self.heartbeat, max_bytes=self.max_bytes
            )
            found.start()
            self._logs[thread_id] = found
        found.created_at = found.created_at or created_at
        found.last_used = time.monotonic()
        return found

    def drop(self, thread_id: str) -> None:
        """Forget the thread's log now (the thread was deleted): a thread created later with the
        same id, by any user, starts with an empty log, never with the deleted thread's events."""
        old = self._logs.pop(thread_id, None)
        if old is not None:
            old.drop()

    def _sweep(self) -> None:
        cutoff = time.monotonic() - self.idle_seconds
        for thread_id, old in list(self._logs.items()):
            if old.last_used < cutoff and old.idle():
                del self._logs[thread_id]
                old.drop()

    async def close(self) -> None:
        """Stop following every thread."""
        logs, self._logs = list(self._logs.values()), {}
        for each in logs:
            await each.close()
