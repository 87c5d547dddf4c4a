"""Stream bridges (memory and a real Redis): fan-out, replay after an event id, end of stream."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from herdsman.runtime.stream_bridge import END_EVENT, MemoryStreamBridge
from herdsman.runtime.stream_bridge_redis import RedisStreamBridge


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


async def test_a_redis_subscriber_waits_longer_than_the_clients_read_timeout(redis_url) -> None:
    """A run quiet for longer than redis-py's default read timeout (5 s since redis-py 8, below
    the 15 s heartbeat) still reaches its subscriber: the blocking read waits, and does not fail
    the stream with 'Timeout reading from ...'."""
    bridge = RedisStreamBridge(redis_url)
    run_id = uuid.uuid4().hex
    try:
        stream = bridge.subscribe(run_id, heartbeat=8.0)
        first = asyncio.create_task(stream.__anext__())
        await asyncio.sleep(6.0)  # a model call that takes a while: no event meanwhile
        assert not first.done(), "the subscriber gave up before the heartbeat"
        await bridge.publish(run_id, "values", "late")
        assert (await asyncio.wait_for(first, 30)).data == "late"
        await stream.aclose()
    finally:
        await bridge.close()
