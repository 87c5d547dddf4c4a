"""The Redis stream bridge: run events in Redis streams, shared by several gateway processes.

Each run's events are one Redis stream (``herdsman:run:<run_id>``), appended with ``XADD`` (capped
near ``max_events``) and read by one blocking ``XREAD`` per process for all its subscribers
(:mod:`herdsman.runtime.streaming.redis_fanout`); the Redis entry id is the SSE event id, so ``Last-Event-ID``
works across processes: a run executing in one gateway can be joined from another. A subscriber
stops after the run's ``end`` event and gets a heartbeat tick while its run is quiet; a finished
run's stream expires ``retention_seconds`` later. The ``XREAD`` blocks at most half the client's
socket timeout (``socket_timeout``, redis-py's 5 s by default) and is sent again: one that blocked
longer would end as a ``TimeoutError`` in the middle of a quiet run's stream (found by the chaos
test: streams of runs waiting for a worker failed with 500). Cancel requests travel on a pub/sub
channel, so a run can be cancelled through any gateway.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from herdsman.runtime.runs.coalesce import Coalescer
from herdsman.runtime.streaming.redis_fanout import StreamFanout, Subscription
from herdsman.runtime.streaming.stream_bridge import END_EVENT, StreamEvent

KEY_PREFIX = "herdsman:run:"
CANCEL_CHANNEL = "herdsman:cancel"
RETRIES = 10  # a command on a dropped connection is sent again up to this many times,
RETRY_BASE_SECONDS = 0.05  # after a wait doubling from this (with jitter)
RETRY_CAP_SECONDS = 1.0  # up to this: about 6 s in all


class RedisBridgeError(Exception):
    """Redis cannot be reached or used; the message names ``gateway.redis_url``."""


def redis_failed(what: str, exc: BaseException, advice: str) -> RedisBridgeError:
    """The error for a Redis command that failed with ``exc``, naming ``gateway.redis_url``."""
    return RedisBridgeError(f"gateway.redis_url: {what} ({type(exc).__name__}: {exc}); {advice}")


class RedisStreamBridge:
    """A stream bridge backed by Redis streams (needs the ``redis`` package)."""

    def __init__(
        self,
        url: str,
        *,
        max_events: int = 10_000,
        retention_seconds: float = 600.0,
        socket_timeout: float = 5.0,
        max_pending: int = 2000,
    ) -> None:
        """``socket_timeout``: seconds a Redis command may wait for its answer before it fails;
        ``max_pending``: events read for a subscriber and not yet taken by it before reading for it
        waits until it caught up (bounds a slow client's memory)."""
        try:
            from redis import asyncio as aioredis
            from redis.asyncio.retry import Retry
            from redis.backoff import ExponentialWithJitterBackoff
            from redis.exceptions import ConnectionError as RedisConnectionError
        except ImportError:
            raise RedisBridgeError(
                "gateway.stream_bridge is redis but the redis package is missing; pip install 'herdsman[redis]'"
            ) from None
        # A command on a connection Redis dropped (it restarted, failed over, or a proxy closed an
        # idle connection) is sent again on a new one for a few seconds, so a run does not fail on
        # its next event; a timeout is not (the command may have been done: an event twice).
        retry = Retry(
            ExponentialWithJitterBackoff(base=RETRY_BASE_SECONDS, cap=RETRY_CAP_SECONDS),
            RETRIES,
            supported_errors=(RedisConnectionError,),
        )
        self._redis = aioredis.from_url(url, decode_responses=True, socket_timeout=socket_timeout, retry=retry)
        self._fanout = StreamFanout(  # one read for every stream followed here, on a connection of its own
            aioredis.from_url(url, decode_responses=True, socket_timeout=socket_timeout, single_connection_client=True),
            self._redis,
            block_ms=max(1, int(socket_timeout * 500)),  # half the socket timeout
            max_pending=max_pending,
        )
        self._appends = Coalescer(self._append)
        self._url = url
        self._max_events = max_events
        self._retention = max(1, int(retention_seconds))
        self._closed = False

    @staticmethod
    def key(run_id: str) -> str:
        """The Redis key of a run's stream."""
        return KEY_PREFIX + run_id

    async def ping(self) -> None:
        """Check the connection; RedisBridgeError names the URL setting when it fails."""
        try:
            await self._redis.ping()
        except Exception as exc:  # noqa: BLE001 - every connection failure gets the same advice
            raise redis_failed("cannot reach Redis", exc, "check the URL and that the server is running") from None

    async def publish(self, run_id: str, event: str, data: str) -> str:
        """Append an event to the run's stream; returns its Redis entry id. Events published
        while others are on their way go together in one pipeline (in the order published)."""
        return await self._appends((run_id, event, data))

    async def _append(self, events: list[tuple[str, str, str]]) -> list[str | BaseException]:
        if len(events) == 1:  # nothing else on its way: a plain XADD costs less than a pipeline of one
            return [await self._xadd(self._redis, *events[0])]
        async with self._redis.pipeline(transaction=False) as pipe:
            for event in events:
                self._xadd(pipe, *event)
            return await pipe.execute(raise_on_error=False)

    def _xadd(self, target: Any, run_id: str, event: str, data: str) -> Any:
        """``XADD`` one event on ``target`` (the client: awaitable; a pipeline: queued), trimmed."""
        return target.xadd(self.key(run_id), {"event": event, "data": data}, maxlen=self._max_events, approximate=True)

    async def finish(self, run_id: str) -> None:
        """Start the retention clock of the run's stream."""
        await self._redis.expire(self.key(run_id), self._retention)

    async def exists(self, run_id: str) -> bool:
        """Whether Redis still holds the run's stream."""
        return bool(await self._redis.exists(self.key(run_id)))

    async def subscribe(
        self, run_id: str, *, last_event_id: str | None = None, heartbeat: float = 15.0
    ) -> AsyncIterator[StreamEvent | None]:
        """Entries after ``last_event_id`` (from the start without it), then live ones until ``end``."""
        cursor = stream_entry_id(last_event_id) or "0-0"
        sub = Subscription(self.key(run_id), cursor)
        self._fanout.add(sub)
        try:
            while True:
                try:
                    async with asyncio.timeout(heartbeat):
                        batch = await sub.queue.get()
                except TimeoutError:
                    yield None  # the run was quiet for ``heartbeat`` seconds
                    continue
                if isinstance(batch, BaseException):  # the read shared by every stream failed: each its own error
                    raise redis_failed(
                        f"reading run {run_id}'s events from Redis failed",
                        batch,
                        "join its stream again (with Last-Event-ID) once Redis is back",
                    ) from batch
                sub.take(batch)
                for entry_id, fields in batch:
                    event = fields.get("event", "")
                    yield StreamEvent(entry_id, event, fields.get("data", "null"))
                    if event == END_EVENT:
                        return
                if sub.paused and sub.queue.empty():  # it fell behind and has caught up: read for it again
                    self._fanout.add(sub)
        finally:
            self._fanout.remove(sub)

    async def request_cancel(self, run_id: str, action: str) -> None:
        """Publish a cancel request; the gateway executing the run acts on it."""
        await self._redis.publish(CANCEL_CHANNEL, json.dumps({"run_id": run_id, "action": action}))

    async def cancel_requests(self) -> AsyncIterator[tuple[str, str]]:
        """Cancel requests published by any gateway, as (run id, action)."""
        pubsub = self._redis.pubsub()
        await pubsub.subscribe(CANCEL_CHANNEL)
        try:
            async for message in pubsub.listen():
                if message.get("type") != "message":
                    continue
                try:
                    request = json.loads(message["data"])
                    yield str(request["run_id"]), str(request.get("action") or "interrupt")
                except (ValueError, KeyError, TypeError):
                    continue
        finally:
            await pubsub.aclose()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    async def close(self) -> None:
        """Stop reading streams and close the connections."""
        self._closed = True
        await self._fanout.close()
        await self._redis.aclose()


MAX_ID_PART = 2**64 - 1  # a stream entry id is two unsigned 64-bit numbers


def stream_entry_id(value: str | None) -> str | None:
    """``value`` as a Redis stream entry id in its plain form (``<ms>-<seq>``, ASCII digits, no
    leading zeros), or None when it is not one. A client's ``Last-Event-ID`` goes into the read
    shared by every stream of the process, where an id Redis refuses (a part past 64 bits) would
    fail the read for all of them."""
    ms, sep, seq = (value or "").partition("-")
    if not (sep and ms.isascii() and ms.isdigit() and seq.isascii() and seq.isdigit()):
        return None
    if len(ms) > 20 or len(seq) > 20 or int(ms) > MAX_ID_PART or int(seq) > MAX_ID_PART:
        return None
    return f"{int(ms)}-{int(seq)}"
