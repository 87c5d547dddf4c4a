"""The temporary thread of a stateless run takes no other run (official SDK client).

Red-team finding (#15): the thread a stateless run makes is deleted when that run ends, with its
checkpoints, files and record. A second run created on it meanwhile (its id is in the run, in the
stream's Content-Location) ran after that deletion, on a thread that no longer existed: its
checkpoints and its folder stayed on disk for good, reachable by no route, and neither prune nor
DELETE could remove them (one run more each time, without bound). Whatever the multitask
strategy, such a run is now refused with 409 saying to create a thread, and nothing is left.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.gateway.gateway_support import HOLD, user_message


@pytest.mark.parametrize("strategy", ["enqueue", "interrupt", "rollback"])
async def test_a_stateless_runs_thread_takes_no_other_run_and_leaves_nothing(
    client, model, gateway, home, strategy
) -> None:
    stateless = await client.runs.create(None, "lead_agent", input=user_message(f"hold on {HOLD}"))
    await asyncio.to_thread(model.wait_until_held)
    tid = stateless["thread_id"]
    with pytest.raises(httpx.HTTPStatusError) as info:
        await client.runs.create(tid, "lead_agent", input=user_message("second"), multitask_strategy=strategy)
    assert info.value.response.status_code == 409
    detail = info.value.response.json()["detail"]
    assert f"stateless run {stateless['run_id']}" in detail and "POST /threads" in detail, detail
    model.release()
    await client.runs.join(tid, stateless["run_id"])
    with pytest.raises(httpx.HTTPStatusError) as gone:
        await client.threads.get(tid)
    assert gone.value.response.status_code == 404
    saver = gateway.app.state.gateway.graph.checkpointer
    assert [t async for t in saver.alist({"configurable": {"thread_id": tid}})] == []
    assert not (home / "threads" / tid).exists()
    # a stateless run kept with on_completion=keep is an ordinary thread once it ended: it takes runs
    kept = await client.runs.wait(None, "lead_agent", input=user_message("keep me"), on_completion="keep")
    thread = (await client.threads.search(limit=10))[0]["thread_id"]
    assert kept["messages"][-1]["content"] == "echo: keep me"
    values = await client.runs.wait(thread, "lead_agent", input=user_message("more"))
    assert values["messages"][-1]["content"] == "echo: more"
