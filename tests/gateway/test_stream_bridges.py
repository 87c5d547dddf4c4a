"""Stream bridges (memory and a real Redis): fan-out, replay after an event id, end of stream."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from herdsman.runtime.streaming.stream_bridge import (
    END_EVENT,
    MemoryStreamBridge,
    StreamEvent,
    event_batches,
    follow_run,
)
from herdsman.runtime.streaming.stream_bridge_redis import RedisStreamBridge


@pytest.fixture(params=["memory", "redis"])
async def bridge(request):
    if request.param == "memory":
        made = MemoryStreamBridge(max_events=100)
    else:
        made = RedisStreamBridge(request.getfixturevalue("redis_url"))
    yield made
    await made.close()


async def _collect(bridge, run_id, **kwargs):
    return [e async for e in bridge.subscribe(run_id, heartbeat=0.05, **kwargs) if e is not None]


async def test_every_subscriber_gets_every_event_once(bridge) -> None:
    run_id = uuid.uuid4().hex
    early = [asyncio.create_task(_collect(bridge, run_id)) for _ in range(3)]
    await asyncio.sleep(0.02)
    for n in range(5):
        await bridge.publish(run_id, "values", f'{{"n": {n}}}')
    late = asyncio.create_task(_collect(bridge, run_id))
    await bridge.publish(run_id, END_EVENT, "null")
    await bridge.finish(run_id)
    results = await asyncio.gather(*early, late)
    for events in results:
        assert [e.data for e in events] == [f'{{"n": {n}}}' for n in range(5)] + ["null"]
        assert [e.event for e in events][-1] == END_EVENT
        assert len({e.id for e in events}) == 6
    assert await bridge.exists(run_id)


async def test_replay_after_an_event_id_and_heartbeats(bridge) -> None:
    run_id = uuid.uuid4().hex
    ids = [await bridge.publish(run_id, "updates", str(n)) for n in range(4)]
    stream = bridge.subscribe(run_id, last_event_id=ids[1], heartbeat=0.05)
    assert [(await stream.__anext__()).data for _ in range(2)] == ["2", "3"]
    assert await stream.__anext__() is None  # quiet run: a heartbeat tick
    await bridge.publish(run_id, END_EVENT, "null")
    await bridge.finish(run_id)
    rest = [e async for e in stream if e is not None]
    assert [e.event for e in rest] == [END_EVENT]


async def test_the_memory_bridge_keeps_a_run_within_its_byte_budget() -> None:
    """Big events (a long thread's whole state in each ``values`` event) are dropped oldest first
    once the run's events pass ``max_bytes``; the newest are replayed whole."""
    bridge = MemoryStreamBridge(max_events=10_000, max_bytes=1_000_000)
    run_id = uuid.uuid4().hex
    big = "x" * 100_000
    for n in range(50):
        await bridge.publish(run_id, "values", f'{{"n": {n}, "pad": "{big}"}}')
    await bridge.publish(run_id, END_EVENT, "null")
    await bridge.finish(run_id)
    kept = await _collect(bridge, run_id)
    assert 5 <= len(kept) <= 11 and kept[-1].event == END_EVENT
    assert [e.data.startswith(f'{{"n": {n},') for n, e in zip(range(50 - len(kept) + 1, 50), kept, strict=False)] == [
        True
    ] * (len(kept) - 1)
    await bridge.close()


async def test_events_ready_together_come_in_one_batch(bridge) -> None:
    """``event_batches``: the events published while a reader was away come as one list (one
    write for the SSE stream), in order, none twice; a bridge without batches gives lists of one."""
    run_id = uuid.uuid4().hex
    ids = [await bridge.publish(run_id, "messages", str(n)) for n in range(3)]
    batches = event_batches(bridge, run_id, last_event_id=ids[0], heartbeat=0.05)
    first = await batches.__anext__()
    together = isinstance(bridge, MemoryStreamBridge)  # the Redis bridge gives one event a list (no batches yet)
    assert first is not None and [e.data for e in first] == (["1", "2"] if together else ["1"])
    for n in range(3, 6):
        await bridge.publish(run_id, "messages", str(n))
    await bridge.publish(run_id, END_EVENT, "null")
    await bridge.finish(run_id)
    rest = [b async for b in batches if b is not None]
    seen = [e.data for b in [first, *rest] for e in b]
    assert seen == ["1", "2", "3", "4", "5", "null"]
    if together:
        assert [len(b) for b in rest] == [4]  # published together while the reader was away: one batch

    class OneByOne:  # a bridge with only the protocol's subscribe
        def subscribe(self, run_id, **kwargs):
            return bridge.subscribe(run_id, **kwargs)

    singles = [b async for b in event_batches(OneByOne(), run_id, heartbeat=0.05) if b is not None]  # type: ignore[arg-type]
    assert [len(b) for b in singles] == [1] * 7 and singles[0][0].data == "0"


async def test_a_redis_subscriber_waits_longer_than_the_socket_timeout(redis_url) -> None:
    """A run quiet for longer than the Redis client's socket timeout (as one waiting for a
    worker): its subscriber gets heartbeats, then the next event, not a TimeoutError."""
    bridge = RedisStreamBridge(redis_url, socket_timeout=0.3)
    run_id = uuid.uuid4().hex
    try:
        stream = bridge.subscribe(run_id, heartbeat=1.0)
        waiting = asyncio.create_task(stream.__anext__())
        await asyncio.sleep(1.5)  # past the socket timeout, and past one heartbeat
        assert await waiting is None
        await bridge.publish(run_id, "values", "1")
        await bridge.publish(run_id, END_EVENT, "null")
        assert [e.data async for e in stream if e is not None] == ["1", "null"]
    finally:
        await bridge.close()


async def _redis_clients(redis_url) -> int:
    from redis import asyncio as aioredis

    admin = aioredis.from_url(redis_url)
    try:
        return len(await admin.client_list())
    finally:
        await admin.aclose()


async def test_a_redis_bridge_follows_more_streams_than_its_connection_pool(redis_url) -> None:
    """150 clients following 150 quiet runs at once (a blocking read per stream needed a
    connection each: the 101st failed with "Too many connections"): every stream gets its events,
    and the process holds a handful of Redis connections, not one per stream."""
    bridge = RedisStreamBridge(redis_url)
    runs = [uuid.uuid4().hex for _ in range(150)]
    before = await _redis_clients(redis_url)
    try:
        followers = [asyncio.create_task(_collect(bridge, run_id)) for run_id in runs]
        await asyncio.sleep(0.5)  # every follower is waiting in its read
        held = await _redis_clients(redis_url) - before
        for run_id in runs:
            await bridge.publish(run_id, "values", f'"{run_id}"')
            await bridge.publish(run_id, END_EVENT, "null")
        results = await asyncio.wait_for(asyncio.gather(*followers), 30)
        assert [[e.data for e in events] for events in results] == [[f'"{run_id}"', "null"] for run_id in runs]
        assert held <= 5
    finally:
        await bridge.close()


async def test_a_redis_subscriber_that_joins_a_waiting_read_is_served_at_once(redis_url) -> None:
    """A subscriber added while the shared read blocks (here for up to 15 s) wakes it, so its
    run's events reach it at once, not when the read times out."""
    bridge = RedisStreamBridge(redis_url, socket_timeout=30.0)
    first, second = uuid.uuid4().hex, uuid.uuid4().hex
    try:
        waiting = asyncio.create_task(_collect(bridge, first))
        await asyncio.sleep(0.3)  # the read for ``first`` is blocked now
        await bridge.publish(second, "values", "1")
        await bridge.publish(second, END_EVENT, "null")
        events = await asyncio.wait_for(_collect(bridge, second), 5)
        assert [e.data for e in events] == ["1", "null"]
        await bridge.publish(first, END_EVENT, "null")
        assert [e.event for e in await asyncio.wait_for(waiting, 5)] == [END_EVENT]
    finally:
        await bridge.close()


async def test_a_slow_redis_subscriber_is_read_for_again_once_it_caught_up(redis_url) -> None:
    """A subscriber that takes nothing is left out of the shared read once ``max_pending`` events
    wait for it (its memory stays bounded while its run goes on); once it took them, it is read
    for again from where it was and gets every event in order, once each."""
    from redis import asyncio as aioredis

    from herdsman.runtime.streaming.redis_fanout import StreamFanout, Subscription

    writer = aioredis.from_url(redis_url, decode_responses=True)
    fanout = StreamFanout(
        aioredis.from_url(redis_url, decode_responses=True, single_connection_client=True),
        writer,
        block_ms=200,
        count=5,
        max_pending=10,
    )
    key = f"test:slow:{uuid.uuid4().hex}"
    try:
        for n in range(50):
            await writer.xadd(key, {"n": str(n)})
        sub = Subscription(key, "0-0")
        fanout.add(sub)
        await asyncio.sleep(1.0)  # reads of 5: two of them, then it is left out
        assert sub.paused and sub.pending == 10 and key not in fanout._subs
        got: list[str] = []
        while len(got) < 50:
            batch = await asyncio.wait_for(sub.queue.get(), 5)
            sub.take(batch)
            got += [fields["n"] for _, fields in batch]
            if sub.paused and sub.queue.empty():
                fanout.add(sub)
        assert got == [str(n) for n in range(50)] and sub.queue.empty()
    finally:
        await fanout.close()
        await writer.aclose()


@pytest.mark.parametrize(
    "hostile", ["18446744073709551616-0", "1-99999999999999999999999", "١٢-٣", "00000001-0", "-", "x-1"]
)
async def test_a_hostile_last_event_id_breaks_no_other_stream(redis_url, hostile: str) -> None:
    """Every stream of a process is read by one command, so a ``Last-Event-ID`` Redis refuses
    (a part past 64 bits) would fail every client's stream at once; it is read as no id (the
    stream from its start), and the other client's stream goes on."""
    bridge = RedisStreamBridge(redis_url)
    mine, theirs = uuid.uuid4().hex, uuid.uuid4().hex
    try:
        await bridge.publish(theirs, "values", "0")
        following = asyncio.create_task(_collect(bridge, mine))
        await asyncio.sleep(0.2)
        hostile_stream = asyncio.create_task(_collect(bridge, theirs, last_event_id=hostile))
        await asyncio.sleep(0.2)
        for run_id in (mine, theirs):
            await bridge.publish(run_id, "values", "1")
            await bridge.publish(run_id, END_EVENT, "null")
        assert [e.data for e in await asyncio.wait_for(following, 5)] == ["1", "null"]
        assert [e.data for e in await asyncio.wait_for(hostile_stream, 5)] == ["0", "1", "null"]  # all after it
    finally:
        await bridge.close()


class _CountingRedis:
    """A redis-py client whose ``xread`` replies are measured (values' length, as the fan-out counts)."""

    def __init__(self, client) -> None:
        self.client = client
        self.replies: list[int] = []

    async def xread(self, *args, **kwargs):
        reply = await self.client.xread(*args, **kwargs)
        self.replies.append(sum(len(v) for _, entries in reply or () for _, fields in entries for v in fields.values()))
        return reply

    def __getattr__(self, name):
        return getattr(self.client, name)


async def test_a_slow_redis_subscriber_of_big_events_holds_its_bound_at_the_default_read_count(redis_url) -> None:
    """Big events (each ``values`` event is the whole state) count by size: a subscriber that
    takes nothing is left out once ``max_pending_bytes`` wait for it, whatever their number.
    With the default read (500 entries per stream) a subscriber that takes nothing was handed
    all 40 entries of 30 KB in one read (1.2 MB for a 100 KB bound: a client that joins a big run
    and stops reading held the run's whole stream). It now holds its bound and one entry at most;
    once it takes them it gets every entry in order, and the fan-out, having seen entries that
    big, reads a few at a time (it read up to 500 again on each catch-up: quadratic traffic)."""
    from redis import asyncio as aioredis

    from herdsman.runtime.streaming.redis_fanout import StreamFanout, Subscription

    writer = aioredis.from_url(redis_url, decode_responses=True)
    reader = _CountingRedis(aioredis.from_url(redis_url, decode_responses=True, single_connection_client=True))
    fanout = StreamFanout(reader, writer, block_ms=200, max_pending_bytes=100_000)
    key = f"test:bound:{uuid.uuid4().hex}"
    entry = 30_002
    try:
        for n in range(40):
            await writer.xadd(key, {"data": f"{n:02d}" + "x" * 30_000})
        sub = Subscription(key, "0-0")
        fanout.add(sub)
        await asyncio.sleep(0.5)
        assert sub.paused and 100_000 <= sub.pending_bytes < 100_000 + entry
        got: list[str] = []
        while len(got) < 40:
            batch = await asyncio.wait_for(sub.queue.get(), 5)
            sub.take(batch)
            got += [fields["data"][:2] for _, fields in batch]
            assert sub.pending_bytes < 100_000 + entry
            if sub.paused and sub.queue.empty():
                fanout.add(sub)
        assert got == [f"{n:02d}" for n in range(40)] and sub.queue.empty()
        first, *rest = [size for size in reader.replies if size]
        assert sum(rest) <= 2 * 40 * entry and max(rest) <= 100_000
    finally:
        await fanout.close()
        await writer.aclose()


async def test_a_failed_shared_read_gives_each_redis_subscriber_its_own_clear_error() -> None:
    """When the shared read fails (Redis stopped), every subscriber fails with an error that
    names the setting to check, each its own: the one exception raised in every subscriber's
    task grew its traceback by each of them (200 streams: 400 lines, logged for each stream).
    A stream asked for while Redis is down fails the same way at once."""
    import traceback

    from herdsman.runtime.streaming.stream_bridge_redis import RedisBridgeError
    from tests.gateway.redis_service import redis_server

    async def follow(bridge) -> BaseException | None:
        try:
            await _collect(bridge, uuid.uuid4().hex)
        except Exception as exc:  # noqa: BLE001 - what the test looks at
            return exc
        return None

    with redis_server() as url:
        bridge = RedisStreamBridge(url)
        followers = [asyncio.create_task(follow(bridge)) for _ in range(50)]
        await asyncio.sleep(0.5)
    try:
        errors = await asyncio.wait_for(asyncio.gather(*followers), 10)
        assert all(isinstance(e, RedisBridgeError) and "gateway.redis_url" in str(e) for e in errors), errors[:2]
        assert len({id(e) for e in errors}) == 50
        lines = [len(traceback.format_exception(e)) for e in errors]
        assert max(lines) == min(lines)
        assert isinstance(await asyncio.wait_for(follow(bridge), 10), RedisBridgeError)
    finally:
        await bridge.close()


async def test_a_dropped_redis_read_connection_is_no_error_for_its_streams(redis_url) -> None:
    """One connection reads every stream of a process: when it drops (a proxy's idle timeout, a
    failover, here CLIENT KILL) with Redis still there, the read is sent again and no stream
    sees it (every stream of the gateway failed at once). Each gets its events, once, in order."""
    from redis import asyncio as aioredis

    bridge = RedisStreamBridge(redis_url)
    admin = aioredis.from_url(redis_url, decode_responses=True)
    runs = [uuid.uuid4().hex for _ in range(20)]
    try:
        for run_id in runs:
            await bridge.publish(run_id, "values", "0")
        followers = [asyncio.create_task(_collect(bridge, run_id)) for run_id in runs]
        await asyncio.sleep(0.5)
        readers = [c for c in await admin.client_list() if c["cmd"] == "xread"]
        assert len(readers) == 1
        await admin.client_kill_filter(_id=readers[0]["id"])
        for run_id in runs:
            await bridge.publish(run_id, "values", "1")
            await bridge.publish(run_id, END_EVENT, "null")
        results = await asyncio.wait_for(asyncio.gather(*followers), 10)
        assert [[e.data for e in events] for events in results] == [["0", "1", "null"]] * 20
    finally:
        await admin.aclose()
        await bridge.close()


async def test_a_redis_subscriber_paused_when_the_bridge_closes_ends_once_it_caught_up(redis_url) -> None:
    """A subscriber left out of the read (behind by ``max_pending``) when the bridge closes gets
    what was read for it, then the closed error: it re-added itself and started the read again
    on the closed client (redis-py reconnected it), so it went on reading after the gateway
    had closed Redis, on a connection nothing closed."""
    from herdsman.runtime.streaming.stream_bridge_redis import RedisBridgeError

    bridge = RedisStreamBridge(redis_url, max_pending=3)
    run_id = uuid.uuid4().hex
    for n in range(10):
        await bridge.publish(run_id, "values", str(n))
    stream = bridge.subscribe(run_id, heartbeat=0.2)
    got = [(await stream.__anext__()).data]
    await asyncio.sleep(0.3)  # read for it up to max_pending, then paused
    await bridge.close()
    with pytest.raises(RedisBridgeError, match="closed"):
        for _ in range(30):  # events and heartbeats
            event = await asyncio.wait_for(stream.__anext__(), 2)
            got += [event.data] if event is not None else []
    assert got == ["0", "1", "2"]


async def test_many_redis_subscribers_of_one_run_cost_one_pass_over_each_read(redis_url, monkeypatch) -> None:
    """The shared read hands each subscriber its part of a reply: 200 clients joining one run of
    500 events from its start made every subscriber parse every entry id of the read (100,000
    parses per read, 0.5 s of the event loop for 1,000 clients, which every other stream of the
    process waited for). Ids are parsed once per read; each still gets every event once, in order."""
    from redis import asyncio as aioredis

    from herdsman.runtime.streaming import redis_fanout

    parses = 0
    parse = redis_fanout.entry_order

    def counted(entry_id: str) -> tuple[int, int]:
        nonlocal parses
        parses += 1
        return parse(entry_id)

    writer = aioredis.from_url(redis_url, decode_responses=True)
    fanout = redis_fanout.StreamFanout(
        aioredis.from_url(redis_url, decode_responses=True, single_connection_client=True), writer, block_ms=200
    )
    key = f"test:many:{uuid.uuid4().hex}"
    try:
        async with writer.pipeline(transaction=False) as pipe:
            for n in range(500):
                pipe.xadd(key, {"n": str(n)})
            ids = await pipe.execute()
        monkeypatch.setattr(redis_fanout, "entry_order", counted)
        subs = [redis_fanout.Subscription(key, "0-0") for _ in range(200)]
        for sub in subs:
            fanout.add(sub)
        for sub in subs:
            got: list[str] = []
            while len(got) < 500:
                batch = await asyncio.wait_for(sub.queue.get(), 5)
                sub.take(batch)
                got += [entry_id for entry_id, _ in batch]
            assert got == ids
        assert parses < 5 * (500 + 200)
    finally:
        await fanout.close()
        await writer.aclose()


async def _next_event(follower, timeout: float = 15.0):
    """The follower's next event, heartbeats skipped."""
    async with asyncio.timeout(timeout):
        while (event := await anext(follower)) is None:
            pass
    return event


async def test_a_follower_inside_the_gateway_goes_on_after_redis_restarted() -> None:
    """No client reconnects for a thread's event log, a chat's follow-up or a thread stream:
    ``follow_run`` subscribes again once Redis is back (here restarted, empty), after the last
    event it saw, and sends heartbeats meanwhile. Nothing lost, nothing twice."""
    from tests.gateway.redis_service import redis_process

    with redis_process() as server:
        bridge = RedisStreamBridge(server.url, socket_timeout=1.0)
        run_id = uuid.uuid4().hex
        try:
            await bridge.publish(run_id, "values", "0")
            follower = follow_run(bridge, run_id, heartbeat=0.2)
            assert (await _next_event(follower)).data == "0"
            server.stop()
            async with asyncio.timeout(10):
                assert await anext(follower) is None  # a heartbeat while Redis is away
            server.start()
            for data in ("1", "2"):
                for _ in range(50):  # the publisher's pooled connection died with the server
                    try:
                        await bridge.publish(run_id, "values", data)
                        break
                    except Exception:  # noqa: BLE001 - published again once reconnected
                        await asyncio.sleep(0.1)
            await bridge.publish(run_id, END_EVENT, "null")
            rest = [await _next_event(follower) for _ in range(3)]
            assert [e.data for e in rest] == ["1", "2", "null"]
            with pytest.raises(StopAsyncIteration):
                await anext(follower)
        finally:
            await bridge.close()


async def test_a_follower_gives_up_when_redis_stays_away_or_the_bridge_closes() -> None:
    from herdsman.runtime.streaming.stream_bridge_redis import RedisBridgeError
    from tests.gateway.redis_service import redis_process

    with redis_process() as server:
        bridge = RedisStreamBridge(server.url, socket_timeout=1.0)
        server.stop()
        try:
            follower = follow_run(bridge, uuid.uuid4().hex, heartbeat=0.2, give_up_after=1.0)
            with pytest.raises(RedisBridgeError, match="gateway.redis_url"):
                async with asyncio.timeout(15):
                    async for _ in follower:
                        pass
        finally:
            await bridge.close()
        closed = follow_run(bridge, uuid.uuid4().hex, heartbeat=0.2)
        with pytest.raises(RedisBridgeError, match="closed"):
            async with asyncio.timeout(5):
                async for _ in closed:
                    pass


class _FlakyBridge:
    """A bridge whose subscriptions fail, in turn: at once, after ``quiet`` seconds of
    heartbeats, then never (it yields the run's end)."""

    closed = False

    def __init__(self, quiet: float) -> None:
        self.quiet, self.subscriptions = quiet, 0

    async def subscribe(self, run_id: str, *, last_event_id: str | None = None, heartbeat: float = 15.0):
        self.subscriptions += 1
        if self.subscriptions == 1:
            raise ConnectionError("Redis restarted")
        if self.subscriptions == 2:
            deadline = asyncio.get_running_loop().time() + self.quiet
            while asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(heartbeat)
                yield None
            raise ConnectionError("Redis restarted again")
        yield StreamEvent("9", END_EVENT, "null")


async def test_a_follower_counts_failures_again_after_the_bridge_worked_a_while(monkeypatch) -> None:
    """Red team (h-rt30): a failure, then a subscription that worked longer than ``give_up_after``
    on a quiet run, then another failure: the follower gave up at once (it counted from the first
    failure), ending a thread's event log or a chat's follow-up in the middle of the run."""
    import herdsman.runtime.streaming.stream_bridge as stream_bridge_module

    monkeypatch.setattr(stream_bridge_module, "RESUBSCRIBE_FIRST_SECONDS", 0.01)
    bridge = _FlakyBridge(quiet=1.5)
    follower = follow_run(bridge, "r", heartbeat=0.1, give_up_after=1.0)
    async with asyncio.timeout(10):
        events = [event async for event in follower if event is not None]
    assert [e.event for e in events] == [END_EVENT] and bridge.subscriptions == 3


async def test_a_follower_warns_once_per_outage(monkeypatch, caplog) -> None:
    """Red team (h-rt30): while Redis stayed away, every follower logged a warning at each try
    (every 5 s for 5 minutes, times every thread stream and chat follow-up open): one now."""
    import logging

    import herdsman.runtime.streaming.stream_bridge as stream_bridge_module

    class DownBridge:
        closed = False

        async def subscribe(self, run_id, *, last_event_id=None, heartbeat=15.0):
            raise ConnectionError("Redis is away")
            yield  # pragma: no cover

    monkeypatch.setattr(stream_bridge_module, "RESUBSCRIBE_FIRST_SECONDS", 0.01)
    monkeypatch.setattr(stream_bridge_module, "RESUBSCRIBE_MAX_SECONDS", 0.05)
    caplog.set_level(logging.WARNING)
    with pytest.raises(ConnectionError):
        async with asyncio.timeout(10):
            async for _ in follow_run(DownBridge(), "r", heartbeat=0.1, give_up_after=1.0):
                pass
    assert sum("stream_bridge_resubscribe" in r.getMessage() for r in caplog.records) == 1


async def test_the_fanout_warns_once_while_its_reads_keep_failing(caplog) -> None:
    """Red team (h-rt30): while Redis is away, every follower that subscribes again starts a
    read that fails, and each failure was a warning (one every few seconds per follower). One
    warning until a read works again."""
    import logging

    from herdsman.runtime.streaming.redis_fanout import StreamFanout, Subscription

    class DownRedis:
        async def xread(self, *args, **kwargs):
            raise ConnectionError("Redis is away")

    caplog.set_level(logging.WARNING)
    fanout = StreamFanout(DownRedis(), DownRedis(), block_ms=10)
    for n in range(5):
        sub = Subscription(f"s{n}", "0-0")
        fanout.add(sub)
        assert isinstance(await asyncio.wait_for(sub.queue.get(), 5), ConnectionError)
    assert sum("stream_fanout_failed" in r.getMessage() for r in caplog.records) == 1
