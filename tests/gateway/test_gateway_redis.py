"""Two gateway processes sharing runs through Redis: a run started on one is joined from the other."""

from __future__ import annotations

import asyncio

import pytest
from langgraph_sdk import get_client

from herdsman.runtime.streaming.stream_bridge_redis import RedisBridgeError
from herdsman_gateway.app import create_app
from tests.gateway.gateway_support import HOLD, HOLD_AFTER_TOOL, running_gateway, scripted_model, user_message
from tests.services import free_port
from tests.support import make_config


@pytest.fixture
async def two_gateways(home, redis_url):
    """Two gateways sharing runs through Redis (sqlite checkpoints): the first one's model, and
    an SDK client for each."""
    config = make_config(
        home, checkpointer={"type": "sqlite"}, gateway={"stream_bridge": "redis", "redis_url": redis_url}
    )
    model_a = scripted_model()
    with running_gateway(config, model=model_a) as first, running_gateway(config) as second:
        a = get_client(url=first.url, api_key=None)
        b = get_client(url=second.url, api_key=None)
        try:
            yield model_a, a, b
        finally:
            await a.aclose()
            await b.aclose()


async def test_run_started_on_one_gateway_is_joined_from_another(two_gateways) -> None:
    model_a, a, b = two_gateways
    tid = (await a.threads.create())["thread_id"]
    run = await a.runs.create(
        tid,
        "lead_agent",
        input=user_message(f"steps 2 {HOLD}"),
        stream_mode=["values", "updates"],
        stream_resumable=True,
    )
    await asyncio.to_thread(model_a.wait_until_held)
    assert (await b.runs.get(tid, run["run_id"]))["status"] == "running"
    joined = b.runs.join_stream(tid, run["run_id"])
    head = [await joined.__anext__(), await joined.__anext__()]  # metadata, first values
    await joined.aclose()
    model_a.release()
    tail = [p async for p in b.runs.join_stream(tid, run["run_id"], last_event_id=head[-1].id)]
    events = head + tail
    assert events[0].event == "metadata" and events[0].data["run_id"] == run["run_id"]
    assert "end" not in {p.event for p in events}
    ids = [p.id for p in events]
    assert len(set(ids)) == len(ids), "no event twice"
    # The same events, in the same order, as the gateway that ran it sends.
    from_a = [p async for p in a.runs.join_stream(tid, run["run_id"])]
    assert [(p.id, p.event, p.data) for p in from_a] == [(p.id, p.event, p.data) for p in events]
    state = await b.threads.get_state(tid)
    assert len([m for m in state["values"]["messages"] if m["type"] == "tool"]) == 2


async def test_unreachable_redis_is_a_clear_startup_error(home) -> None:
    config = make_config(home, gateway={"stream_bridge": "redis", "redis_url": f"redis://127.0.0.1:{free_port()}/0"})
    app = create_app(config, model=scripted_model())
    with pytest.raises(RedisBridgeError) as info:
        async with app.router.lifespan_context(app):
            pass
    assert "gateway.redis_url" in str(info.value)


async def test_a_run_is_cancelled_through_the_other_gateway(two_gateways) -> None:
    model_a, a, b = two_gateways
    tid = (await a.threads.create())["thread_id"]
    run = await a.runs.create(tid, "lead_agent", input=user_message(f"stop me {HOLD}"))
    await asyncio.to_thread(model_a.wait_until_held)
    cancelled = await b.runs.cancel(tid, run["run_id"], wait=True)
    assert cancelled["status"] == "interrupted"
    assert (await a.runs.get(tid, run["run_id"]))["status"] == "interrupted"
    events = [p async for p in b.runs.join_stream(tid, run["run_id"])]
    assert events[0].event == "metadata" and "end" not in {p.event for p in events}  # and the stream ended


async def test_clients_whose_shared_redis_read_drops_resume_where_they_were(two_gateways, redis_url) -> None:
    """Every stream of a gateway is read by one Redis connection: when it drops (a proxy, a
    failover), the read is sent again (were it not, every client's stream on that gateway would
    fail at once, and the SDK reconnect with ``Last-Event-ID``): each client gets exactly the rest
    of the run, as the executing gateway sends it, no event lost or twice."""
    from redis import asyncio as aioredis

    model_a, a, b = two_gateways
    tid = (await a.threads.create())["thread_id"]
    run = await a.runs.create(
        tid,
        "lead_agent",
        input=user_message(f"steps 2 {HOLD_AFTER_TOOL}"),
        stream_mode=["values", "updates"],
        stream_resumable=True,
    )
    await asyncio.to_thread(model_a.wait_until_held)
    followers = [b.runs.join_stream(tid, run["run_id"]) for _ in range(3)]
    heads = [[await f.__anext__() for _ in range(2)] for f in followers]
    admin = aioredis.from_url(redis_url, decode_responses=True)
    try:
        readers = [c for c in await admin.client_list() if c["cmd"] == "xread"]
        assert readers, "no shared read to drop"
        for client in readers:
            await admin.client_kill_filter(_id=client["id"])
    finally:
        await admin.aclose()
    model_a.release()
    tails = [await asyncio.wait_for(_rest(f), 30) for f in followers]
    full = [(p.id, p.event, p.data) for p in [p async for p in a.runs.join_stream(tid, run["run_id"])]]
    assert len(full) > 4
    for head, tail in zip(heads, tails, strict=False):
        assert [(p.id, p.event, p.data) for p in head + tail] == full


async def _rest(stream) -> list:
    return [p async for p in stream]


async def test_a_thread_reads_busy_once_its_run_was_queued_before_its_record_says_so(home, redis_url) -> None:
    """A gateway that only accepts runs sends a queued run's ``metadata`` event once its queue
    row is in, and writes the thread's record after: a client that reads the thread on that
    event (here with the record write held back) must see ``busy``, as LangGraph's server answers."""
    import threading

    config = make_config(
        home,
        checkpointer={"type": "sqlite"},
        runs={"workers": 0},
        gateway={"stream_bridge": "redis", "redis_url": redis_url},
    )
    with running_gateway(config) as served:
        records = served.app.state.gateway.runs.threads
        update, written = records.update, threading.Event()

        async def held_update(thread_id, **kwargs):
            while kwargs.get("status") == "busy" and not written.is_set():
                await asyncio.sleep(0.01)
            return await update(thread_id, **kwargs)

        records.update = held_update
        sdk = get_client(url=served.url, api_key=None)
        try:
            tid = (await sdk.threads.create())["thread_id"]
            async for part in sdk.runs.stream(tid, "lead_agent", input=user_message("queued")):
                assert part.event == "metadata"
                assert (await sdk.threads.get(tid))["status"] == "busy"
                break
        finally:
            written.set()
            await sdk.aclose()
