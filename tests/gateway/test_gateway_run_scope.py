"""The run scope through the gateway: each run has its own (found through the run the gateway
executes), so stopping a sub-agent on one thread never touches another thread's, and two runs of
one thread never share a sub-agent cap."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from langgraph_sdk import get_client
from pydantic import PrivateAttr

from tests.gateway.gateway_support import HOLD, HOLD_MID, HeldModel, reply, running_gateway, user_message
from tests.support import make_config

SAME_ID = "call_same"  # both threads' task calls carry this id


def same_task_ids(messages: list[Any]) -> Any:
    """The scripted agent, with the same id for every task call (in every thread)."""
    out = reply(messages)
    if isinstance(out, dict):
        for call in out.get("tool_calls", []):
            if call["name"] == "task":
                call["id"] = SAME_ID
    return out


class TrackingModel(HeldModel):
    """:class:`HeldModel` that remembers which sub-agent prompts reached the hold in their answer."""

    _held: set[str] = PrivateAttr(default_factory=set)

    async def _hold(self, messages: list[Any], marker: str = HOLD) -> None:
        last = messages[-1]
        if (
            marker == HOLD_MID
            and last.type == "human"
            and HOLD_MID in last.text
            and not last.text.startswith("delegate")
        ):
            self._held.add(last.text)
        await super()._hold(messages, marker)

    async def until_held(self, count: int) -> None:
        """Wait until ``count`` sub-agents are held mid-answer."""
        for _ in range(1000):
            if len(self._held) >= count:
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"sub-agents held: {sorted(self._held)}")


def task_result(values: dict[str, Any]) -> dict[str, Any]:
    return next(m for m in values["messages"] if m["type"] == "tool")


async def test_stopping_one_threads_subagent_leaves_the_other_threads_alone(home) -> None:
    model = TrackingModel(respond=same_task_ids, stream_chunk_chars=4)
    with running_gateway(make_config(home), model=model) as gw:
        try:
            client = get_client(url=gw.url, api_key=None)
            async with httpx.AsyncClient(base_url=gw.url, timeout=30) as http:
                a, b = [(await client.threads.create())["thread_id"] for _ in range(2)]
                run_a = await client.runs.create(a, "lead_agent", input=user_message(f"delegate job alpha {HOLD_MID}"))
                run_b = await client.runs.create(b, "lead_agent", input=user_message(f"delegate job beta {HOLD_MID}"))
                await model.until_held(2)  # both sub-agents, both called call_same, are running
                stopped = await http.post(f"/api/threads/{a}/tasks/{SAME_ID}/cancel")
                assert stopped.status_code == 200, stopped.text
                values_a = await client.runs.join(a, run_a["run_id"])
                assert "stopped by the user" in task_result(values_a)["content"]
                assert (await client.runs.get(b, run_b["run_id"]))["status"] == "running"
                again = await http.post(f"/api/threads/{a}/tasks/{SAME_ID}/cancel")  # a's run is over
                assert (
                    again.status_code == 404
                    and f"no sub-agent {SAME_ID} is running on thread {a}" in again.json()["detail"]
                )
                model.release()
                values_b = await client.runs.join(b, run_b["run_id"])
            result_b = task_result(values_b)
            assert "completed" in result_b["content"] and "job beta" in result_b["content"]
            assert "cancelled" not in result_b["content"]
            assert (await client.runs.get(b, run_b["run_id"]))["status"] == "success"
            await client.aclose()
        finally:
            model.release()


async def test_two_runs_of_one_thread_never_share_a_scope(home) -> None:
    """One sub-agent per run (subagents.max_per_run: 1): the second run of the thread may start
    its own, which a scope kept from the first run would refuse."""
    config = make_config(home, subagents={"max_per_run": 1})
    with running_gateway(config, model=HeldModel(respond=reply, stream_chunk_chars=4)) as gw:
        client = get_client(url=gw.url, api_key=None)
        tid = (await client.threads.create())["thread_id"]
        for job in ("first", "second"):
            values = await client.runs.wait(tid, "lead_agent", input=user_message(f"delegate the {job} job"))
            result = [m for m in values["messages"] if m["type"] == "tool"][-1]
            assert "completed" in result["content"] and job in result["content"], result["content"]
            assert "max_per_run" not in result["content"]
        await client.aclose()


async def test_another_user_cannot_stop_a_users_subagent(home) -> None:
    """With auth on, Bo's key gets 404 for Ana's running sub-agent, through her thread or his own
    (whose task call has the same id), and her sub-agent finishes its work."""
    model = TrackingModel(respond=same_task_ids, stream_chunk_chars=4)
    config = make_config(home, gateway={"api_keys": ["key-ana", "key-bo"]})
    with running_gateway(config, model=model) as gw:
        try:
            ana = get_client(url=gw.url, api_key="key-ana")
            bo = get_client(url=gw.url, api_key="key-bo")
            mine = (await ana.threads.create())["thread_id"]
            his = (await bo.threads.create())["thread_id"]
            run = await ana.runs.create(mine, "lead_agent", input=user_message(f"delegate ana's job {HOLD_MID}"))
            his_run = await bo.runs.create(his, "lead_agent", input=user_message(f"delegate bo's job {HOLD_MID}"))
            await model.until_held(2)
            async with httpx.AsyncClient(base_url=gw.url, timeout=30, headers={"x-api-key": "key-bo"}) as http:
                through_hers = await http.post(f"/api/threads/{mine}/tasks/{SAME_ID}/cancel")
                assert through_hers.status_code == 404 and "ana" not in through_hers.text
                own = await http.post(f"/api/threads/{his}/tasks/{SAME_ID}/cancel")  # stops his own only
                assert own.status_code == 200, own.text
            assert "stopped by the user" in task_result(await bo.runs.join(his, his_run["run_id"]))["content"]
            model.release()
            result = task_result(await ana.runs.join(mine, run["run_id"]))
            assert "completed" in result["content"] and "cancelled" not in result["content"]
            await ana.aclose()
            await bo.aclose()
        finally:
            model.release()
