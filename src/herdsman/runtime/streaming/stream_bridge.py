"""Stream bridges: a run publishes its events once, any number of subscribers read them.

Each run has an ordered log of events with ids. A subscriber reads from the start, or from just
after a ``Last-Event-ID`` it already saw, then waits for new events until the run's stream ends;
so a client that reconnects loses nothing and sees nothing twice. When the run is quiet, the
subscriber yields ``None`` every ``heartbeat`` seconds so the HTTP layer can send a keep-alive.

:class:`MemoryStreamBridge` keeps the log in this process (the default). The Redis bridge
(``stream_bridge_redis.py``) keeps it in a Redis stream, so several gateway processes share runs.
Written here because no library offers a replayable per-run fan-out with SSE event ids.

A subscriber inside the gateway (a thread's event log, a chat channel's follow-up, a thread
stream) has no client that would reconnect for it when Redis goes away for a while: it follows
a run with :func:`follow_run`, which subscribes again from the last event it saw.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from herdsman.logs import get_logger
from herdsman.runtime.streaming.bounded_log import DEFAULT_MAX_BYTES, BoundedLog

log = get_logger(__name__)

END_EVENT = "end"
RESUBSCRIBE_FIRST_SECONDS = 0.5  # the first wait before subscribing again after the bridge failed
RESUBSCRIBE_MAX_SECONDS = 5.0  # the longest (it doubles each time)
RESUBSCRIBE_FOR_SECONDS = 300.0  # failures in a row for this long, and the follower gives up


@dataclass(frozen=True)
class StreamEvent:
    """One event of a run: its id (for ``Last-Event-ID``), SSE event name and JSON text."""

    id: str
    event: str
    data: str


@runtime_checkable
class StreamBridge(Protocol):
    """Fan-out of run events with a replay buffer."""

    async def publish(self, run_id: str, event: str, data: str) -> str:
        """Append an event (``data`` is JSON text) to the run's log; returns its id."""
        ...

    async def finish(self, run_id: str) -> None:
        """Mark the run's stream as ended: subscribers stop after the last event."""
        ...

    def subscribe(
        self, run_id: str, *, last_event_id: str | None = None, heartbeat: float = 15.0
    ) -> AsyncIterator[StreamEvent | None]:
        """Events after ``last_event_id`` (all when None), then live ones until the end.

        Yields ``None`` when nothing happened for ``heartbeat`` seconds.
        """
        ...

    async def exists(self, run_id: str) -> bool:
        """Whether the bridge still holds events of ``run_id``."""
        ...

    async def request_cancel(self, run_id: str, action: str) -> None:
        """Ask whichever process executes ``run_id`` to cancel it."""
        ...

    def cancel_requests(self) -> AsyncIterator[tuple[str, str]]:
        """(run id, action) of every cancel request, until the bridge closes."""
        ...

    async def close(self) -> None:
        """Release connections and wake every subscriber."""
        ...

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        ...


async def follow_run(
    bridge: StreamBridge,
    run_id: str,
    *,
    heartbeat: float = 15.0,
    last_event_id: str | None = None,
    give_up_after: float = RESUBSCRIBE_FOR_SECONDS,
    ended: Callable[[], Awaitable[bool]] | None = None,
) -> AsyncIterator[StreamEvent | None]:
    """The run's events as :meth:`StreamBridge.subscribe` yields them, for a follower inside the
    gateway: when the bridge fails (Redis stopped, restarted, failed over), it subscribes again
    after the last event it yielded, waiting 0.5 s, then twice as long each time up to 5 s, and
    yielding ``None`` (a heartbeat) meanwhile; no event is lost or yielded twice. It gives up,
    raising the bridge's error, after ``give_up_after`` seconds of failures in a row (a
    subscription that worked for a fifth of that before it failed starts a new count, also when
    the run was quiet meanwhile), and at once when the bridge was closed.

    A run whose end event could not be written (Redis was away longer than the bridge retries)
    would be followed for ever: with ``ended`` (whether the run's record is final), the follow
    also stops, as after the end event, once ``ended`` said so and the stream then stayed quiet
    for a whole ``heartbeat`` (a run that ends well writes its end event right after its record)."""
    delay, failing_since, ended_seen = RESUBSCRIBE_FIRST_SECONDS, None, False
    while True:
        subscribed_at = time.monotonic()
        try:
            async for event in bridge.subscribe(run_id, last_event_id=last_event_id, heartbeat=heartbeat):
                if event is not None:
                    last_event_id, failing_since, delay, ended_seen = event.id, None, RESUBSCRIBE_FIRST_SECONDS, False
                elif ended is not None:
                    if ended_seen:
                        log.warning("stream_bridge_end_missing", run_id=run_id, after=last_event_id)
                        return
                    ended_seen = await _ended(ended, run_id)
                yield event
            return
        except Exception as exc:  # noqa: BLE001 - subscribed again unless closed or failing for too long
            now = time.monotonic()
            first = failing_since is None or now - subscribed_at >= give_up_after / 5
            if first or failing_since is None:  # (the None test is first's: it narrows the type)
                failing_since = now  # the first failure, or one after the bridge worked a while (a quiet run)
            if bridge.closed or now - failing_since >= give_up_after:
                raise
            # one warning per outage and follower (every few seconds for minutes, times every follower, was noise)
            (log.warning if first else log.debug)(
                "stream_bridge_resubscribe",
                run_id=run_id,
                after=last_event_id,
                retry_in=delay,
                error=f"{type(exc).__name__}: {exc}",
            )
        yield None
        await asyncio.sleep(delay)
        delay = min(delay * 2, RESUBSCRIBE_MAX_SECONDS)


async def event_batches(
    bridge: StreamBridge, run_id: str, *, last_event_id: str | None = None, heartbeat: float = 15.0
) -> AsyncIterator[list[StreamEvent] | None]:
    """The run's events as :meth:`StreamBridge.subscribe` gives them, in lists of those ready
    together (a bridge's ``subscribe_batches``; one event a list from a bridge without it), so a
    reader can send them in one write; ``None`` for a heartbeat."""
    batches = getattr(bridge, "subscribe_batches", None)
    if batches is not None:
        async for batch in batches(run_id, last_event_id=last_event_id, heartbeat=heartbeat):
            yield batch
        return
    async for event in bridge.subscribe(run_id, last_event_id=last_event_id, heartbeat=heartbeat):
        yield None if event is None else [event]


async def _ended(ended: Callable[[], Awaitable[bool]], run_id: str) -> bool:
    """``ended()``, False when it fails (asked again at the next quiet heartbeat)."""
    try:
        return await ended()
    except Exception as exc:  # noqa: BLE001 - the record store may be away too
        log.warning("run_end_not_checked", run_id=run_id, error=f"{type(exc).__name__}: {exc}")
        return False


def parse_event_id(value: str | None) -> int:
    """The sequence number in a memory-bridge event id; 0 (the start) for none or junk."""
    if not value:
        return 0
    try:
        return max(0, int(value.split("-", 1)[0]))
    except ValueError:
        return 0


@dataclass
class _RunLog:
    """The events of one run held in memory, and a way to wait for the next one."""

    events: BoundedLog[StreamEvent]
    next_seq: int = 1
    ended: bool = False
    ended_at: float | None = None
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def notify(self) -> None:
        """Wake the waiting subscribers (each then waits on a fresh event)."""
        self.changed.set()
        self.changed = asyncio.Event()


class MemoryStreamBridge:
    """A stream bridge inside this process.

    Keeps at most ``max_events`` events and ``max_bytes`` of event data per run (the oldest are
    dropped first) and forgets a run ``retention_seconds`` after its stream ended.
    """

    def __init__(
        self, *, max_events: int = 10_000, retention_seconds: float = 600.0, max_bytes: int = DEFAULT_MAX_BYTES
    ) -> None:
        self._logs: dict[str, _RunLog] = {}
        self._ended: deque[tuple[float, str]] = deque()  # (ended_at, run id), oldest first
        self._max_events = max_events
        self._max_bytes = max_bytes
        self._retention = retention_seconds
        self._closed = False

    def _log(self, run_id: str) -> _RunLog:
        log = self._logs.get(run_id)
        if log is None:
            log = _RunLog(events=BoundedLog(self._max_events, self._max_bytes))
            self._logs[run_id] = log
        return log

    def _expire(self) -> None:
        """Forget the runs whose retention ran out (oldest first: O(1) per call when none did)."""
        cutoff = time.monotonic() - self._retention
        while self._ended and self._ended[0][0] < cutoff:
            _, rid = self._ended.popleft()
            log = self._logs.get(rid)
            if log is not None and log.ended:
                del self._logs[rid]

    async def publish(self, run_id: str, event: str, data: str) -> str:
        """Append an event; its id is the run's next sequence number."""
        log = self._log(run_id)
        event_id = str(log.next_seq)
        log.next_seq += 1
        log.events.append(StreamEvent(event_id, event, data), len(data) + len(event) + len(event_id))
        log.notify()
        return event_id

    async def finish(self, run_id: str) -> None:
        """Mark the run's stream as ended and start its retention clock."""
        log = self._log(run_id)
        log.ended = True
        log.ended_at = time.monotonic()
        self._ended.append((log.ended_at, run_id))
        log.notify()
        self._expire()

    async def exists(self, run_id: str) -> bool:
        """Whether events of ``run_id`` are still held."""
        self._expire()
        return run_id in self._logs

    async def subscribe(
        self, run_id: str, *, last_event_id: str | None = None, heartbeat: float = 15.0
    ) -> AsyncIterator[StreamEvent | None]:
        """Replay what is held after ``last_event_id``, then follow the run until it ends."""
        async for batch in self.subscribe_batches(run_id, last_event_id=last_event_id, heartbeat=heartbeat):
            if batch is None:
                yield None
                continue
            for event in batch:
                yield event

    async def subscribe_batches(
        self, run_id: str, *, last_event_id: str | None = None, heartbeat: float = 15.0
    ) -> AsyncIterator[list[StreamEvent] | None]:
        """:meth:`subscribe`, with the events held at each wake-up in one list (never empty)."""
        after = parse_event_id(last_event_id)
        log = self._log(run_id)
        while True:
            # Sequence numbers are contiguous: the held events are first_seq .. next_seq - 1, so
            # the ones to send start at an index (no copy or scan of the whole log per wake-up).
            first_seq = log.next_seq - len(log.events)
            start = max(0, after + 1 - first_seq)
            if start < len(log.events):
                batch = [log.events[i] for i in range(start, len(log.events))]
                after = int(batch[-1].id)
                yield batch
                continue  # more may have come while the batch was sent
            if log.ended or self._closed:
                return
            waiter = log.changed
            try:
                async with asyncio.timeout(heartbeat):
                    await waiter.wait()
            except TimeoutError:
                yield None

    async def request_cancel(self, run_id: str, action: str) -> None:
        """Nothing to do: in one process the run manager cancels its runs itself."""

    async def cancel_requests(self) -> AsyncIterator[tuple[str, str]]:
        """Never yields: no other process can ask (returns when the bridge closes)."""
        while not self._closed:
            await asyncio.sleep(3600)
        return
        yield  # pragma: no cover - makes this an async generator

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    async def close(self) -> None:
        """Wake every subscriber so it returns."""
        self._closed = True
        for log in self._logs.values():
            log.notify()
