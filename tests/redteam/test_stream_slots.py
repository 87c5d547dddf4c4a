"""Red team: ``gateway.max_streams_per_user`` cannot be turned against its user. A stream refused
after its slot was claimed (input the graph cannot read, another user's thread, a busy thread
with reject) and a stream its client drops half-way each give the slot back, so a user at the
cap is never locked out for good (official SDK client)."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from langgraph_sdk.errors import RateLimitError

from tests.gateway.gateway_support import HOLD, one_stream_each, user_message


async def _stream_ends(client, tid: str, text: str) -> list[str]:
    """The events of a streamed run on ``tid``, retried while the server still counts a stream
    that was just dropped (it learns of the disconnect a moment later)."""
    for _ in range(200):
        try:
            return [p.event async for p in client.runs.stream(tid, "lead_agent", input=user_message(text))]
        except RateLimitError:
            await asyncio.sleep(0.05)
    raise AssertionError("the user's slot never came back")


async def test_refused_and_dropped_streams_give_their_slot_back(home) -> None:
    async with one_stream_each(home) as (url, model, ana, bo):
        tid = (await ana.threads.create())["thread_id"]
        his = (await bo.threads.create())["thread_id"]
        busy = (await ana.threads.create())["thread_id"]
        await ana.runs.create(busy, "lead_agent", input=user_message(f"busy {HOLD}"))
        await asyncio.to_thread(model.wait_until_held)
        for _ in range(3):  # each refused after the slot was claimed
            for thread, kwargs, status in [
                (tid, {"input": {"messages": 5}}, 422),
                (his, {"input": user_message("not mine")}, 404),
                (busy, {"input": user_message("reject"), "multitask_strategy": "reject"}, 409),
            ]:
                with pytest.raises(httpx.HTTPStatusError) as info:
                    async for _ in ana.runs.stream(thread, "lead_agent", **kwargs):
                        pass
                assert info.value.response.status_code == status
        model.release()
        assert (await _stream_ends(ana, tid, "after refusals"))[-1] != "error"

        # a stream dropped by its client while the run is held
        async with httpx.AsyncClient(base_url=url, headers={"x-api-key": "key-ana"}, timeout=30) as http:
            body = {"assistant_id": "lead_agent", "input": user_message(f"dropped {HOLD}"), "stream_mode": ["values"]}
            async with http.stream("POST", f"/threads/{tid}/runs/stream", json=body) as response:
                assert response.status_code == 200
                async for line in response.aiter_lines():
                    if line.startswith("event: metadata"):
                        break
                await asyncio.to_thread(model.wait_until_held)
        model.release()
        events = await _stream_ends(ana, busy, "after a drop")
        assert events[0] == "metadata" and "error" not in events
