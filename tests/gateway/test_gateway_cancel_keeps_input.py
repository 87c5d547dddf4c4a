"""No input is lost by a cancel (#32), through the official langgraph-sdk client.

A run cancelled at any moment after it was created (0, 10, 50 or 200 ms: waiting in the queue,
before its graph began, during its first step, at its model call) leaves the user's message in
the thread, once; ``runs.join`` answers with the thread's values. For each multitask strategy a
run sent to a busy thread and then cancelled keeps its input too (``reject`` refuses it: nothing
to keep). A rollback undoes the run, its input included, as LangGraph's server does (the run and
its checkpoints are deleted); ``runs.join`` of the rolled-back run answers 200 with the thread's
values (``{}`` for a thread the rollback left empty), not 404.

The runs are held at their model call (``[hold]``), so every cancel finds its run in progress.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import ConflictError

from tests.gateway.gateway_support import HOLD, running_gateway, scripted_model, user_message
from tests.support import make_config

DELAYS_MS = (0, 10, 50, 200)
RUNS_PER_DELAY = 20


def humans(values: dict[str, Any]) -> list[str]:
    """The contents of the human messages in a thread's values."""
    return [m["content"] for m in (values or {}).get("messages", []) if m["type"] == "human"]


async def cancel_after(
    sdk: Any, delay_ms: int, text: str, *, action: str = "interrupt", **create: Any
) -> tuple[str, str, dict[str, Any]]:
    """On a new thread: create a run with ``text`` (and ``create``'s arguments), cancel it
    ``delay_ms`` after, join it; its thread id, run id and what the join answered."""
    tid = (await sdk.threads.create())["thread_id"]
    run = await sdk.runs.create(tid, "lead_agent", input=user_message(text), **create)
    await asyncio.sleep(delay_ms / 1000)
    await sdk.runs.cancel(tid, run["run_id"], action=action)
    return tid, run["run_id"], await sdk.runs.join(tid, run["run_id"])


async def test_a_run_cancelled_at_any_moment_keeps_the_input(home) -> None:
    """80 runs on the default checkpointer (SQLite, file history on, workers claiming the runs
    past the per-user limit), 20 cancelled at each delay, all at once per delay."""
    model = scripted_model()
    with running_gateway(make_config(home, checkpointer={"type": "sqlite"}), model=model) as served:
        sdk = get_client(url=served.url, api_key=None)
        try:
            lost = []
            for delay in DELAYS_MS:
                texts = [f"keep {delay} {i} {HOLD}" for i in range(RUNS_PER_DELAY)]
                results = await asyncio.gather(*(cancel_after(sdk, delay, text) for text in texts))
                for text, (tid, run_id, joined) in zip(texts, results, strict=False):
                    state = await sdk.threads.get_state(tid)
                    run = await sdk.runs.get(tid, run_id)
                    thread = await sdk.threads.get(tid)
                    if (
                        humans(state["values"]) != [text]
                        or joined != state["values"]
                        or run["status"] != "interrupted"
                        or thread["status"] != "interrupted"
                    ):
                        lost.append(
                            (delay, humans(state["values"]), run["status"], thread["status"], joined == state["values"])
                        )
            assert lost == [], f"{len(lost)} of {len(DELAYS_MS) * RUNS_PER_DELAY} cancelled runs: {lost[:5]}"
            model.release()
            # the thread takes the next message after the kept one
            values = await sdk.runs.wait(tid, "lead_agent", input=user_message("next"))
            assert humans(values) == [texts[-1], "next"] and values["messages"][-1]["content"] == "echo: next"
        finally:
            model.release()
            await sdk.aclose()


@pytest.mark.parametrize("delay", DELAYS_MS)
async def test_a_run_streaming_events_keeps_its_input_too(client, delay) -> None:
    """``stream_mode: events`` runs the graph through ``astream_events``: a stop closes that too."""
    texts = [f"events {delay} {i} {HOLD}" for i in range(4)]
    results = await asyncio.gather(
        *(cancel_after(client, delay, text, stream_mode=["events", "messages-tuple"]) for text in texts)
    )
    for text, (tid, _, joined) in zip(texts, results, strict=False):
        assert humans((await client.threads.get_state(tid))["values"]) == [text] == humans(joined)


@pytest.mark.parametrize("delay", DELAYS_MS)
async def test_a_rolled_back_run_leaves_nothing_and_its_join_answers_the_thread_values(client, model, delay) -> None:
    """As LangGraph's server: a rollback deletes the run and its checkpoints, so its input goes
    too; on an empty thread the join answers ``{}``, on a thread with an earlier turn its values."""
    tid, run_id, joined = await cancel_after(client, delay, f"undo me {HOLD}", action="rollback")
    assert joined == {}
    assert humans((await client.threads.get_state(tid))["values"]) == []
    assert await client.runs.list(tid) == []
    assert await client.runs.join(tid, run_id) == {}  # again, after the run is gone: not 404

    model.release()
    tid = (await client.threads.create())["thread_id"]
    await client.runs.wait(tid, "lead_agent", input=user_message("earlier"))
    model._gate.clear()
    run = await client.runs.create(tid, "lead_agent", input=user_message(f"undo me {HOLD}"))
    await asyncio.sleep(delay / 1000)
    await client.runs.cancel(tid, run["run_id"], action="rollback")
    joined = await client.runs.join(tid, run["run_id"])
    assert humans(joined) == ["earlier"] and joined == (await client.threads.get_state(tid))["values"]
    assert [r["status"] for r in await client.runs.list(tid)] == ["success"]
    model.release()


async def _busy_thread(client: Any) -> tuple[str, str]:
    """A thread whose first run is held at its model call: its id and the run's."""
    tid = (await client.threads.create())["thread_id"]
    first = await client.runs.create(tid, "lead_agent", input=user_message(f"first {HOLD}"))
    return tid, first["run_id"]


@pytest.mark.parametrize("delay", DELAYS_MS)
@pytest.mark.parametrize("strategy", ["interrupt", "rollback", "enqueue"])
async def test_a_run_sent_to_a_busy_thread_and_cancelled_keeps_its_input(client, strategy, delay) -> None:
    """``interrupt``: the first run stops, both inputs stay; ``rollback``: the first run is undone
    (its input with it), the second's stays; ``enqueue``: the second run, cancelled while it waits,
    adds its input after the first run's, once that one ends (here: stopped too)."""
    tid, first = await _busy_thread(client)
    second = await client.runs.create(
        tid, "lead_agent", input=user_message(f"second {HOLD}"), multitask_strategy=strategy
    )
    await asyncio.sleep(delay / 1000)
    await client.runs.cancel(tid, second["run_id"])
    if strategy == "enqueue":
        await client.runs.cancel(tid, first)
    joined = await client.runs.join(tid, second["run_id"])
    state = await client.threads.get_state(tid)
    expected = ["second [hold]"] if strategy == "rollback" else ["first [hold]", "second [hold]"]
    assert humans(state["values"]) == expected and joined == state["values"]
    assert (await client.runs.get(tid, second["run_id"]))["status"] == "interrupted"
    assert (await client.threads.get(tid))["status"] == "interrupted"


async def test_a_run_rejected_by_a_busy_thread_leaves_the_first_runs_input(client) -> None:
    tid, first = await _busy_thread(client)
    with pytest.raises(ConflictError):
        await client.runs.create(tid, "lead_agent", input=user_message("second"), multitask_strategy="reject")
    await client.runs.cancel(tid, first)
    assert humans(await client.runs.join(tid, first)) == ["first [hold]"]


async def test_runs_a_worker_process_executes_keep_their_input_when_cancelled_through_the_gateway(
    tmp_path, redis_url
) -> None:
    """A gateway that only accepts runs (``runs.workers: 0``) and a ``herdsman worker`` process on
    one SQLite home: runs cancelled through the gateway at each delay keep their input, whether
    the gateway ends them (no worker had claimed them yet) or the worker stops them."""
    from tests.gateway.test_gateway_recovery import gateway_process, settled, worker_process

    model = [
        {
            "name": "steps",
            "use": "tests.gateway.recovery_model:StepsModel",
            "hold_at": 0,
            "calls_file": str(tmp_path / "calls.log"),
            "hold_file": str(tmp_path / "hold"),
        }
    ]
    shared = {"gateway": {"stream_bridge": "redis", "redis_url": redis_url}, "models": model}
    (tmp_path / "hold").touch()  # every run waits at its model call
    with (
        gateway_process(
            tmp_path, "gateway", **shared, runs={"workers": 0, "lease_seconds": 1, "poll_seconds": 0.2}
        ) as gateway,
        worker_process(tmp_path, "worker", **shared),
    ):
        sdk = get_client(url=gateway.url, api_key=None)
        try:
            for delay in DELAYS_MS:
                texts = [f"keep {delay} {i}" for i in range(3)]
                results = await asyncio.gather(*(cancel_after(sdk, delay, text) for text in texts))
                for text, (tid, run_id, joined) in zip(texts, results, strict=False):
                    assert (await settled(sdk, tid, run_id))["status"] == "interrupted"
                    assert humans((await sdk.threads.get_state(tid))["values"]) == [text] == humans(joined), (
                        delay,
                        text,
                    )
        finally:
            (tmp_path / "hold").unlink(missing_ok=True)
            await sdk.aclose()
