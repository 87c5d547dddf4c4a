"""Red team: another user's key cannot roll back a user's run, the path that deletes checkpoints
(cancel with action=rollback by id, through POST /runs/cancel by ids or by status, or a run on her
thread with multitask_strategy rollback); her run goes on and her thread's history keeps every
checkpoint (official SDK client)."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from langgraph_sdk import get_client

from tests.gateway.gateway_support import HOLD, running_gateway, scripted_model, user_message
from tests.support import make_config


async def test_another_users_key_cannot_roll_back_a_run(home) -> None:
    model = scripted_model()
    with running_gateway(make_config(home, gateway={"api_keys": ["key-ana", "key-bo"]}), model=model) as gw:
        ana = get_client(url=gw.url, api_key="key-ana")
        bo = get_client(url=gw.url, api_key="key-bo")
        try:
            tid = (await ana.threads.create())["thread_id"]
            await ana.runs.wait(tid, "lead_agent", input=user_message("first"))
            before = {h["checkpoint"]["checkpoint_id"] for h in await ana.threads.get_history(tid, limit=100)}
            run = await ana.runs.create(tid, "lead_agent", input=user_message(f"second {HOLD}"))
            await asyncio.to_thread(model.wait_until_held)

            attempts = [
                bo.runs.cancel(tid, run["run_id"], action="rollback"),
                bo.runs.cancel_many(thread_id=tid, run_ids=[run["run_id"]], action="rollback"),
                bo.runs.create(tid, "lead_agent", input=user_message("mine now"), multitask_strategy="rollback"),
            ]
            for attempt in attempts:
                with pytest.raises(httpx.HTTPStatusError) as info:
                    await attempt
                assert info.value.response.status_code == 404
            await bo.runs.cancel_many(status="all", action="rollback")  # cancels bo's own runs: none

            assert (await ana.runs.get(tid, run["run_id"]))["status"] == "running"
            model.release()
            values = await ana.runs.join(tid, run["run_id"])
            assert [m["content"] for m in values["messages"]] == [
                "first",
                "echo: first",
                f"second {HOLD}",
                "echo: second",
            ]
            after = {h["checkpoint"]["checkpoint_id"] for h in await ana.threads.get_history(tid, limit=100)}
            assert before < after
        finally:
            model.release()
            await ana.aclose()
            await bo.aclose()
