"""``multitask_strategy`` and the "thread is busy" checks hold when the run on the thread is
executed by another process (#15): two gateways on one SQLite home (auth on), the run held by the
first, everything else asked of the second, through the official ``langgraph-sdk`` client.

No stream bridge links the two gateways here (memory bridge): a cancel reaches the process
holding the run through its queue row, read at its next lease renewal.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import ConflictError, NotFoundError

from tests.gateway.gateway_support import HOLD, HeldModel, running_gateway, scripted_model, user_message
from tests.support import make_config

FINAL = ("success", "error", "interrupted", "timeout")


@dataclass
class HeldElsewhere:
    """A thread whose run the first gateway executes (held in a model call), and clients of both."""

    first: Any  # ana's client of the gateway executing the run
    second: Any  # ana's client of the other gateway
    intruder: Any  # bo's client of the other gateway
    thread_id: str
    run: dict[str, Any]
    model: HeldModel


async def settled(sdk: Any, thread_id: str, run_id: str) -> dict[str, Any]:
    """The run once it ended."""
    while (run := await sdk.runs.get(thread_id, run_id))["status"] not in FINAL:
        await asyncio.sleep(0.05)
    return run


@asynccontextmanager
async def held_elsewhere(home) -> AsyncIterator[HeldElsewhere]:
    """Two gateways on one home; ana's thread says "first" (a run that ended), then a second run
    of it is held in the first gateway."""
    config = make_config(
        home,
        checkpointer={"type": "sqlite"},
        gateway={"api_keys": ["key-ana", "key-bo"]},
        runs={"workers": 2, "lease_seconds": 1.5, "poll_seconds": 0.2},
    )
    first_model, second_model = scripted_model(), scripted_model()
    with running_gateway(config, model=first_model) as one, running_gateway(config, model=second_model) as two:
        clients = [
            get_client(url=one.url, api_key="key-ana"),
            get_client(url=two.url, api_key="key-ana"),
            get_client(url=two.url, api_key="key-bo"),
        ]
        try:
            tid = (await clients[0].threads.create())["thread_id"]
            await clients[0].runs.wait(tid, "lead_agent", input=user_message("first"))
            run = await clients[0].runs.create(tid, "lead_agent", input=user_message(f"second {HOLD}"))
            await asyncio.to_thread(first_model.wait_until_held)
            assert one.app.state.gateway.runs.active_runs(tid) and not two.app.state.gateway.runs.active_runs(tid)
            yield HeldElsewhere(*clients, tid, run, first_model)
        finally:
            first_model.release()
            second_model.release()
            for sdk in clients:
                await sdk.aclose()


def texts(state: dict[str, Any]) -> list[str]:
    """The contents of the thread's messages."""
    return [m["content"] for m in state["values"]["messages"]]


async def test_reject_is_refused_by_the_other_gateway_and_another_user_cannot_touch_the_thread(home) -> None:
    async with held_elsewhere(home) as held:
        with pytest.raises(ConflictError) as refused:
            await held.second.runs.create(
                held.thread_id, "lead_agent", input=user_message("no"), multitask_strategy="reject"
            )
        assert held.run["run_id"] in refused.value.response.json()["detail"]
        with pytest.raises(NotFoundError):  # bo neither interrupts nor sees ana's run
            await held.intruder.runs.create(
                held.thread_id, "lead_agent", input=user_message("mine now"), multitask_strategy="interrupt"
            )
        assert (await held.second.runs.get(held.thread_id, held.run["run_id"]))["status"] in ("pending", "running")


async def test_interrupt_sent_to_the_other_gateway_stops_the_run_where_it_executes_then_starts(home) -> None:
    async with held_elsewhere(home) as held:
        values = await held.second.runs.wait(
            held.thread_id, "lead_agent", input=user_message("instead"), multitask_strategy="interrupt"
        )
        assert values["messages"][-1]["content"] == "echo: instead"
        stopped = await held.second.runs.get(held.thread_id, held.run["run_id"])
        assert stopped["status"] == "interrupted"
        assert texts(await held.second.threads.get_state(held.thread_id))[-3:] == [
            f"second {HOLD}",
            "instead",
            "echo: instead",
        ]


async def test_rollback_sent_to_the_other_gateway_undoes_the_run_and_forgets_it(home) -> None:
    async with held_elsewhere(home) as held:
        values = await held.second.runs.wait(
            held.thread_id, "lead_agent", input=user_message("instead"), multitask_strategy="rollback"
        )
        assert [m["content"] for m in values["messages"]] == ["first", "echo: first", "instead", "echo: instead"]
        with pytest.raises(NotFoundError):
            await held.first.runs.get(held.thread_id, held.run["run_id"])
        assert len(await held.second.runs.list(held.thread_id)) == 2  # "first" and "instead"


async def test_enqueue_sent_to_the_other_gateway_waits_its_turn(home) -> None:
    async with held_elsewhere(home) as held:
        queued = await held.second.runs.create(held.thread_id, "lead_agent", input=user_message("after"))
        assert queued["status"] == "pending"
        held.model.release()
        assert (await settled(held.second, held.thread_id, queued["run_id"]))["status"] == "success"
        assert (await held.second.runs.get(held.thread_id, held.run["run_id"]))["status"] == "success"
        assert texts(await held.second.threads.get_state(held.thread_id)) == [
            "first",
            "echo: first",
            f"second {HOLD}",
            "echo: second",
            "after",
            "echo: after",
        ]


async def test_copy_prune_and_state_updates_wait_for_a_run_held_by_another_gateway(home) -> None:
    async with held_elsewhere(home) as held:
        tid = held.thread_id
        attempts = {
            "copy": held.second.threads.copy(tid),
            "prune": held.second.threads.prune([tid], strategy="keep_latest"),
            "state": held.second.threads.update_state(tid, {"messages": [{"role": "user", "content": "sneaked in"}]}),
        }
        for name, attempt in attempts.items():
            with pytest.raises(ConflictError) as refused:
                await attempt
            assert held.run["run_id"] in refused.value.response.json()["detail"], name
        held.model.release()
        await settled(held.second, tid, held.run["run_id"])
        while (await held.second.threads.get(tid))["status"] == "busy":  # the thread is settled just after its run
            await asyncio.sleep(0.05)
        copied = await held.second.threads.copy(tid)
        assert texts(await held.second.threads.get_state(copied["thread_id"]))[-1] == "echo: second"


async def test_deleting_the_thread_on_the_other_gateway_stops_the_run_first(home) -> None:
    async with held_elsewhere(home) as held:
        await held.second.threads.delete(held.thread_id)
        for sdk in (held.first, held.second):
            with pytest.raises(NotFoundError):
                await sdk.threads.get(held.thread_id)
        held.model.release()
        await asyncio.sleep(0.5)  # a run that had gone on would have written its thread back by now
        with pytest.raises(NotFoundError):
            await held.first.runs.get(held.thread_id, held.run["run_id"])
