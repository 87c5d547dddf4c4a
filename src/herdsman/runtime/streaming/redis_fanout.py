"""One blocking ``XREAD`` per process for every run stream its clients follow.

A blocking ``XREAD`` holds its Redis connection until it answers, so one read per subscriber
needs one connection per open stream: past the pool's size (redis-py's default is 100) a
gateway answered new streams with 500 ``Too many connections``, and under a burst it spent
most of its time opening connections. :class:`StreamFanout` reads every subscribed stream with
one command on one connection and hands each subscriber the entries after its own cursor.

A subscriber added while the read is blocked wakes it: the fan-out appends to a wake stream of
its own (one per process, read from the last wake entry it saw, so a wake that reaches Redis
before the read it is meant to interrupt still counts). A subscriber is handed entries up to
``max_pending`` entries or ``max_pending_bytes`` waiting for it (one entry past them at most: the
rest of a read is dropped for it) and is then left out of the read until it has caught up with
what it was given (then it is read again from its own cursor), so a slow client costs at most
that much memory however big a read was. Once entries of some size were seen, a read asks for
about a quarter of ``max_pending_bytes`` of them per stream (``XREAD COUNT`` counts entries, not
bytes: 500 entries of a run whose events are its whole 1 MB state are 500 MB in one reply, which
every other stream of the process waits for). A read that fails is sent again once (a dropped
connection is no error); when that fails too (Redis gone), every subscriber gets the error and the
next subscriber starts over.

Written here because redis-py has no multiplexed stream reader (its pub/sub multiplexes
channels, but pub/sub keeps no history to replay after ``Last-Event-ID``).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from bisect import bisect_left, bisect_right
from collections import deque
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from herdsman.logs import get_logger

log = get_logger(__name__)

Entry = tuple[str, dict[str, str]]
WAKE_PREFIX = "herdsman:wake:"
WAKE_TTL_SECONDS = 3600  # a wake stream outlives its process by at most this long
SIZE_MEMORY_SECONDS = 60.0  # how long a big entry keeps the reads' count down


def _entry_size(entry: Entry) -> int:
    """About the memory an entry holds: the length of its field values."""
    return sum(len(v) for v in entry[1].values())


def entry_order(entry_id: str) -> tuple[int, int]:
    """A Redis stream entry id (``<ms>-<seq>``) as a tuple that sorts like the ids."""
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


@dataclass(eq=False)
class Subscription:
    """One reader of one stream: what the fan-out read for it after ``cursor`` waits in ``queue``
    (a batch of entries each, or the error that ended the read)."""

    key: str
    cursor: str
    queue: asyncio.Queue[list[Entry] | BaseException] = field(default_factory=asyncio.Queue)
    pending: int = 0  # entries queued and not yet taken
    pending_bytes: int = 0  # and their size
    paused: bool = False  # left out of the read until it caught up (see ``max_pending``)
    batch_bytes: deque[int] = field(default_factory=deque)  # the size of each batch queued, in order

    def put(self, batch: list[Entry], size: int) -> None:
        """Queue a batch of ``size`` bytes for the reader."""
        self.pending += len(batch)
        self.pending_bytes += size
        self.batch_bytes.append(size)
        self.queue.put_nowait(batch)

    def take(self, batch: list[Entry]) -> None:
        """Count a batch as handed to the reader (the batches are taken in the order they were put)."""
        self.pending -= len(batch)
        self.pending_bytes -= self.batch_bytes.popleft()


class StreamFanout:
    """Reads every subscribed stream with one blocking ``XREAD`` and fans the entries out."""

    def __init__(
        self,
        redis: Any,
        waker: Any,
        *,
        block_ms: int,
        count: int = 500,
        max_pending: int = 2000,
        max_pending_bytes: int = 16 * 1024 * 1024,
    ) -> None:
        """``redis``: a redis-py asyncio client for this reader alone (the read holds its
        connection), closed with the fan-out; ``waker``: another client, to wake the read;
        ``block_ms``: how long one read blocks (less than the client's socket timeout);
        ``count``: entries per stream and read; ``max_pending`` and ``max_pending_bytes``: what a
        subscriber may have waiting (entries, bytes of their values) before it is left out of the
        reads until it caught up."""
        self._redis = redis
        self._waker = waker
        self._block_ms = block_ms
        self._count = count
        self._max_pending = max_pending
        self._max_pending_bytes = max_pending_bytes
        self._entry_bytes = 0  # the biggest entry read lately: what a read's count is sized by
        self._entry_seen = 0.0  # when it was read (time.monotonic)
        self._wake_key = WAKE_PREFIX + uuid.uuid4().hex
        self._wake_cursor = "0-0"
        self._subs: dict[str, set[Subscription]] = {}
        self._task: asyncio.Task[None] | None = None
        self._blocked = False
        self._wake_sent = False
        self._waking: asyncio.Task[None] | None = None
        self._closing = False
        self._failing = False  # the last read failed: the next failures are not warned about again

    def add(self, sub: Subscription) -> None:
        """Read ``sub.key`` after ``sub.cursor`` for ``sub`` from now on (after :meth:`close`, it
        gets the closed error: a paused subscriber that caught up must not start a read again)."""
        if self._closing:
            sub.queue.put_nowait(ConnectionError("the stream bridge was closed"))
            return
        sub.paused = False
        self._subs.setdefault(sub.key, set()).add(sub)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._read(), name="redis-stream-fanout")
        elif self._blocked and not self._wake_sent:
            self._wake_sent = True
            self._waking = asyncio.get_running_loop().create_task(self._wake(), name="redis-stream-fanout-wake")

    def remove(self, sub: Subscription) -> None:
        """Stop reading for ``sub``."""
        subs = self._subs.get(sub.key)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._subs[sub.key]

    async def _wake(self) -> None:
        try:
            async with self._waker.pipeline(transaction=False) as pipe:
                pipe.xadd(self._wake_key, {"w": "1"}, maxlen=1, approximate=False)
                pipe.expire(self._wake_key, WAKE_TTL_SECONDS)
                await pipe.execute()
        except Exception as exc:  # noqa: BLE001 - the read answers within block_ms anyway
            log.warning("stream_fanout_wake_failed", error=f"{type(exc).__name__}: {exc}")

    def _streams(self) -> dict[str, str]:
        """Each subscribed stream from the earliest cursor of its subscribers, and the wake stream."""
        streams = {key: min((s.cursor for s in subs), key=entry_order) for key, subs in self._subs.items()}
        streams[self._wake_key] = self._wake_cursor
        return streams

    async def _read(self) -> None:
        try:
            while self._subs:
                streams = self._streams()
                self._blocked, self._wake_sent = True, False
                try:
                    reply = await self._xread(streams)
                finally:
                    self._blocked = False
                read = []  # each stream's entries with their sizes, worked out once per read
                for key, entries in reply or ():
                    if key == self._wake_key:
                        self._wake_cursor = entries[-1][0]
                    elif entries:
                        read.append((key, entries, [_entry_size(entry) for entry in entries]))
                self._failing = False
                self._learn_sizes([size for _, _, sizes in read for size in sizes])
                for key, entries, sizes in read:
                    self._deliver(key, streams[key], entries, sizes)
        except Exception as exc:  # noqa: BLE001 - every subscriber gets it; the next one starts over
            if self._closing:
                return
            # a warning once per outage: while Redis is away, every follower that subscribes again
            # starts a read that fails (see stream_bridge.follow_run)
            (log.debug if self._failing else log.warning)(
                "stream_fanout_failed", error=f"{type(exc).__name__}: {exc}", streams=len(self._subs)
            )
            self._failing = True
            subs = [s for group in self._subs.values() for s in group]
            self._subs.clear()
            for sub in subs:
                sub.queue.put_nowait(exc)

    async def _xread(self, streams: dict[str, str]) -> Any:
        """One read; one that fails is sent again at once before it fails every subscriber: the
        read changes nothing (the cursors are the fan-out's), and a dropped connection (a proxy's
        idle timeout, a failover, ``CLIENT KILL``) is then no error for any stream of the process."""
        count = self._read_count()
        try:
            return await self._redis.xread(streams, block=self._block_ms, count=count)
        except Exception as exc:  # noqa: BLE001 - the second try raises what is not a dropped connection
            if self._closing:
                raise
            (log.debug if self._failing else log.info)(
                "stream_fanout_read_again", error=f"{type(exc).__name__}: {exc}", streams=len(streams) - 1
            )
            return await self._redis.xread(streams, block=self._block_ms, count=count)

    def _read_count(self) -> int:
        """Entries per stream for the next read: ``count``, or fewer once big entries were seen,
        so that a stream's share of one reply is about a quarter of ``max_pending_bytes``."""
        if not self._entry_bytes:
            return self._count
        return max(1, min(self._count, self._max_pending_bytes // 4 // self._entry_bytes))

    def _learn_sizes(self, sizes: list[int]) -> None:
        """Remember the biggest entry read in the last ``SIZE_MEMORY_SECONDS`` (about: a bigger one
        replaces it at once, a smaller one once it is that old); ``sizes``: those of a read."""
        if sizes:
            now = time.monotonic()
            if max(sizes) >= self._entry_bytes or now - self._entry_seen > SIZE_MEMORY_SECONDS:
                self._entry_bytes, self._entry_seen = max(sizes), now

    def _deliver(self, key: str, read_after: str, entries: list[Entry], sizes: list[int]) -> None:
        """Hand ``entries`` (read after ``read_after``, of ``sizes``) to the subscribers of ``key`` past that point;
        one further behind (added while the read was under way) is served by the next read. The
        entries' ids and sizes are worked out once per read, not once per subscriber (a thousand
        clients joining one run from its start cost 0.5 s of the loop per read of 500)."""
        floor = entry_order(read_after)
        orders = [entry_order(entry_id) for entry_id, _ in entries]
        ends = list(accumulate(sizes))  # size of entries[:k + 1]
        for sub in list(self._subs.get(key, ())):
            after = entry_order(sub.cursor)
            if after < floor:
                continue
            first = bisect_right(orders, after)
            if first == len(entries):
                continue
            before = ends[first - 1] if first else 0
            stop = self._stop(sub, first, before, ends)
            batch = entries[first:stop]
            sub.cursor = batch[-1][0]
            sub.put(batch, ends[stop - 1] - before)
            if sub.pending >= self._max_pending or sub.pending_bytes >= self._max_pending_bytes:
                sub.paused = True
                self.remove(sub)

    def _stop(self, sub: Subscription, first: int, before: int, ends: list[int]) -> int:
        """Where the entries ``sub`` may hold from ``first`` on end: just after the one that reaches
        ``max_pending`` or ``max_pending_bytes`` (the rest is read for it again once it caught up);
        ``ends``: the read's running sizes, ``before``: theirs before ``first``."""
        by_count = first + self._max_pending - sub.pending
        by_size = bisect_left(ends, self._max_pending_bytes - sub.pending_bytes + before, lo=first) + 1
        return min(len(ends), by_count, by_size)

    async def close(self) -> None:
        """Stop reading; subscribers still waiting get a ``ConnectionError``."""
        self._closing = True
        subs = [s for group in self._subs.values() for s in group]
        self._subs.clear()
        if self._redis.connection is not None:  # a blocked read ends now (it does not answer a cancel until it returns)
            await self._redis.connection.disconnect(nowait=True)
        for task in (self._task, self._waking):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        for sub in subs:
            sub.queue.put_nowait(ConnectionError("the stream bridge was closed"))
        await self._redis.aclose()
