"""Fair and bounded (#15): per-user run limits counted over every gateway on one database, and
backpressure (503 with Retry-After) when the run queue is full, through the official
``langgraph-sdk`` client against real gateways (two of them sharing one SQLite home).
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import InternalServerError, RateLimitError

from tests.gateway.gateway_support import HOLD, one_stream_each, running_gateway, scripted_model, user_message
from tests.support import make_config

FINAL = ("success", "error", "interrupted", "timeout")
SHARED = {"checkpointer": {"type": "sqlite"}}


async def settled(sdk, thread_id: str, run_id: str) -> dict:
    """The run once it ended."""
    while (run := await sdk.runs.get(thread_id, run_id))["status"] not in FINAL:
        await asyncio.sleep(0.05)
    return run


async def waiting_runs(url: str, key: str) -> float:
    """The ``herdsman_runs_waiting`` gauge of the gateway at ``url``."""
    async with httpx.AsyncClient(base_url=url, headers={"X-Api-Key": key}) as http:
        text = (await http.get("/metrics")).text
    return float(next(line.split()[1] for line in text.splitlines() if line.startswith("herdsman_runs_waiting ")))


async def test_a_user_s_run_limits_are_counted_over_both_gateways_and_other_users_are_not_held_up(home) -> None:
    limits = {
        "workers": 2,
        "lease_seconds": 3,
        "poll_seconds": 0.2,
        "max_running_per_user": 1,
        "max_queued_per_user": 1,
    }
    config = make_config(home, **SHARED, runs=limits, gateway={"api_keys": ["key-ana", "key-bo"]})
    first_model, second_model = scripted_model(), scripted_model()
    with running_gateway(config, model=first_model) as first, running_gateway(config, model=second_model) as second:
        ana_first = get_client(url=first.url, api_key="key-ana")
        ana_second = get_client(url=second.url, api_key="key-ana")
        bo_second = get_client(url=second.url, api_key="key-bo")
        try:
            threads = [(await ana_first.threads.create())["thread_id"] for _ in range(3)]
            running = await ana_first.runs.create(threads[0], "lead_agent", input=user_message(f"one {HOLD}"))
            await asyncio.to_thread(first_model.wait_until_held)

            # ana's second run, through the other gateway: it waits in the queue (her one place is taken)
            waiting = await ana_second.runs.create(threads[1], "lead_agent", input=user_message("two"))
            assert waiting["status"] == "pending"
            # a third is past both limits, whichever gateway is asked
            with pytest.raises(RateLimitError) as refused:
                await ana_first.runs.create(threads[2], "lead_agent", input=user_message("three"))
            detail = refused.value.response.json()["detail"]
            assert "runs.max_running_per_user: 1" in detail and "runs.max_queued_per_user: 1" in detail
            assert "cancel" in detail and "wait" in detail
            assert not (await ana_first.runs.list(threads[2])), "a refused run leaves no record"

            # bo has places of his own, and his run is not held up behind ana's
            bo_thread = (await bo_second.threads.create())["thread_id"]
            values = await bo_second.runs.wait(bo_thread, "lead_agent", input=user_message("bo here"))
            assert values["messages"][-1]["content"] == "echo: bo here"

            await asyncio.sleep(1.0)  # five polls of the workers: none starts ana's waiting run
            assert (await ana_second.runs.get(threads[1], waiting["run_id"]))["status"] == "pending"
            # the queue's depth, what a worker autoscaler follows, is the same from either gateway
            assert await waiting_runs(first.url, "key-bo") == await waiting_runs(second.url, "key-ana") == 1

            first_model.release()
            second_model.release()
            assert (await settled(ana_first, threads[0], running["run_id"]))["status"] == "success"
            assert (await settled(ana_second, threads[1], waiting["run_id"]))["status"] == "success"
            state = await ana_first.threads.get_state(threads[1])
            assert state["values"]["messages"][-1]["content"] == "echo: two"
            again = await ana_first.runs.wait(threads[2], "lead_agent", input=user_message("three"))
            assert again["messages"][-1]["content"] == "echo: three"
            assert await waiting_runs(first.url, "key-ana") == 0
        finally:
            first_model.release()
            second_model.release()
            for sdk in (ana_first, ana_second, bo_second):
                await sdk.aclose()


async def test_a_full_queue_answers_503_with_retry_after_and_keeps_waiting_runs_out_of_memory(home) -> None:
    config = make_config(
        home,
        **SHARED,
        gateway={"max_concurrent_runs": 1},
        runs={"workers": 1, "lease_seconds": 3, "poll_seconds": 0.2, "max_queued": 2},
    )
    model = scripted_model()
    with running_gateway(config, model=model) as served:
        sdk = get_client(url=served.url, api_key=None)
        manager = served.app.state.gateway.runs
        try:
            threads = [(await sdk.threads.create())["thread_id"] for _ in range(4)]
            first = await sdk.runs.create(threads[0], "lead_agent", input=user_message(f"one {HOLD}"))
            await asyncio.to_thread(model.wait_until_held)
            queued = [
                await sdk.runs.create(tid, "lead_agent", input=user_message(f"queued {n}"))
                for n, tid in enumerate(threads[1:3])
            ]
            assert [run["status"] for run in queued] == ["pending", "pending"]
            for tid in threads[1:3]:
                assert not manager.active_runs(tid), "a waiting run is a row of the queue, not a task of the gateway"

            with pytest.raises(InternalServerError) as full:
                await sdk.runs.create(threads[3], "lead_agent", input=user_message("one too many"))
            response = full.value.response
            assert response.status_code == 503 and int(response.headers["retry-after"]) > 0
            assert "runs.max_queued: 2" in response.json()["detail"]
            assert not (await sdk.runs.list(threads[3]))
            assert (await sdk.threads.get(threads[3]))["status"] == "idle", "the refused run left its thread usable"

            model.release()
            for run in (first, *queued):
                assert (await settled(sdk, run["thread_id"], run["run_id"]))["status"] == "success"
            values = await sdk.runs.wait(threads[3], "lead_agent", input=user_message("now there is room"))
            assert values["messages"][-1]["content"] == "echo: now there is room"
        finally:
            model.release()
            await sdk.aclose()


def test_run_limits_are_validated_with_their_yaml_path() -> None:
    import yaml

    from herdsman.config import parse_config
    from herdsman.config.loader import ConfigError

    for key, value in (("max_running_per_user", 0), ("max_queued_per_user", -1), ("max_queued", 0)):
        with pytest.raises(ConfigError) as info:
            parse_config(yaml.safe_dump({"runs": {key: value}}), env={})
        assert f"runs.{key}" in str(info.value)
    config = parse_config(yaml.safe_dump({"runs": {"max_running_per_user": 2, "max_queued_per_user": 0}}), env={})
    assert (config.runs.max_running_per_user, config.runs.max_queued_per_user, config.runs.max_queued) == (2, 0, None)


async def test_a_run_waiting_in_the_queue_is_ended_at_once_by_interrupt_or_rollback(home, monkeypatch) -> None:
    """A run no worker may start yet (its user is at max_running_per_user) is ended by the gateway
    that is asked to cancel it, instead of waiting for a worker to take it first."""
    import herdsman.runtime.runs.run_cancel as runs_module

    monkeypatch.setattr(runs_module, "REMOTE_CANCEL_WAIT", 1.0)  # waiting for a worker would end the wait unanswered
    config = make_config(
        home, **SHARED, runs={"workers": 2, "lease_seconds": 3, "poll_seconds": 0.2, "max_running_per_user": 1}
    )
    model = scripted_model()
    with running_gateway(config, model=model) as served:
        sdk = get_client(url=served.url, api_key=None)
        try:
            busy, other = [(await sdk.threads.create())["thread_id"] for _ in range(2)]
            running = await sdk.runs.create(busy, "lead_agent", input=user_message(f"one {HOLD}"))
            await asyncio.to_thread(model.wait_until_held)
            waiting = await sdk.runs.create(other, "lead_agent", input=user_message("waits"))
            assert waiting["status"] == "pending"

            instead = await sdk.runs.create(
                other, "lead_agent", input=user_message("instead"), multitask_strategy="rollback"
            )
            assert [r["run_id"] for r in await sdk.runs.list(other)] == [instead["run_id"]], (
                "the waiting run was forgotten"
            )
            stopped = await sdk.runs.create(
                other, "lead_agent", input=user_message("last"), multitask_strategy="interrupt"
            )
            assert (await sdk.runs.get(other, instead["run_id"]))["status"] == "interrupted"

            model.release()
            assert (await settled(sdk, busy, running["run_id"]))["status"] == "success"
            assert (await settled(sdk, other, stopped["run_id"]))["status"] == "success"
            messages = (await sdk.threads.get_state(other))["values"]["messages"]
            # the rolled-back run left nothing; the interrupted one kept its input, unanswered (#32)
            assert [m["content"] for m in messages] == ["instead", "last", "echo: last"]
        finally:
            model.release()
            await sdk.aclose()


async def test_a_user_s_open_streams_are_capped_and_a_refused_stream_creates_no_run(home) -> None:
    """gateway.max_streams_per_user: past it a new run stream (or a join) is refused with 429
    naming the setting, before any run is created; another user's streams are not counted, and
    once the user's stream ended she may open another."""
    async with one_stream_each(home) as (_, model, ana, bo):
        tid, other = [(await ana.threads.create())["thread_id"] for _ in range(2)]
        stream = ana.runs.stream(tid, "lead_agent", input=user_message(f"one {HOLD}"))
        first = await anext(stream)
        assert first.event == "metadata"
        await asyncio.to_thread(model.wait_until_held)

        with pytest.raises(RateLimitError) as refused:
            async for _ in ana.runs.stream(other, "lead_agent", input=user_message("two")):
                pass
        detail = refused.value.response.json()["detail"]
        assert "gateway.max_streams_per_user: 1" in detail and "join" in detail
        assert await ana.runs.list(other) == [], "a refused stream creates no run"
        with pytest.raises(RateLimitError):
            async for _ in ana.runs.join_stream(tid, first.data["run_id"]):
                pass

        bo_thread = (await bo.threads.create())["thread_id"]
        parts = [
            p
            async for p in bo.runs.stream(bo_thread, "lead_agent", input=user_message("bo here"), stream_mode="values")
        ]
        assert parts[-1].data["messages"][-1]["content"] == "echo: bo here"

        model.release()
        assert [p async for p in stream][-1].event != "error"
        again = [p.event async for p in ana.runs.stream(other, "lead_agent", input=user_message("two"))]
        assert again[0] == "metadata" and "error" not in again


async def test_runs_past_the_user_s_limit_start_on_the_memory_checkpointer_too(home) -> None:
    """With the default limits and the memory checkpointer (no durable queue), the local user's
    runs past ``runs.max_running_per_user`` once waited for ever: no worker started them."""
    config = make_config(home, runs={"max_running_per_user": 2})
    with running_gateway(config) as served:
        sdk = get_client(url=served.url, api_key=None)
        try:
            threads = [(await sdk.threads.create())["thread_id"] for _ in range(5)]
            runs = [
                await sdk.runs.create(t, "lead_agent", input=user_message(f"hi {i}")) for i, t in enumerate(threads)
            ]
            ended = await asyncio.wait_for(
                asyncio.gather(*(settled(sdk, r["thread_id"], r["run_id"]) for r in runs)), 60
            )
        finally:
            await sdk.aclose()
    assert [run["status"] for run in ended] == ["success"] * 5
