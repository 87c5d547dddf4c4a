"""``GET /api/model-steps``: how long a model step takes here, from the replies of the caller's threads."""

from __future__ import annotations

import httpx
import pytest

from herdsman.runtime.tracing.step_times import step_samples
from tests.gateway.gateway_support import HeldModel, reply, running_gateway, user_message
from tests.support import make_config


@pytest.fixture
def model() -> HeldModel:
    """The scripted agent, each call taking a little while."""
    return HeldModel(respond=reply, stream_chunk_chars=4, latency=0.05)


async def test_each_reply_says_how_long_its_model_call_took_and_the_estimate_is_their_median(client, gateway) -> None:
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        before = (await http.get("/api/model-steps")).json()
        assert before["samples"] == 0 and before["seconds"] is None
        timed = []
        for text in ("write a.txt one", "hello there"):
            thread = await client.threads.create()
            await client.runs.wait(thread["thread_id"], "lead_agent", input=user_message(text))
            state = await client.threads.get_state(thread["thread_id"])
            timed += step_samples(state["values"]["messages"])
        assert len(timed) == 3  # the call, the answer after it, and the greeting's answer
        assert all(s.model == before["model"] and s.seconds >= 0.05 for s in timed)  # at least the model's latency
        got = (await http.get("/api/model-steps")).json()
        assert got["samples"] == 3 and got["seconds"] == round(sorted(s.seconds for s in timed)[1], 2)
        assert got["output_tokens_per_second"] is None  # the scripted model does not say its pace
        other = (await http.get("/api/model-steps", params={"model": "another"})).json()
        assert other["samples"] == 0 and other["model"] == "another"


async def test_a_user_sees_only_the_steps_of_their_own_threads(home, model) -> None:
    from langgraph_sdk import get_client

    config = make_config(home, gateway={"api_keys": ["key-ana", "key-bo"]})
    with running_gateway(config, model=model) as served:
        ana = get_client(url=served.url, api_key="key-ana")
        thread = await ana.threads.create()
        await ana.runs.wait(thread["thread_id"], "lead_agent", input=user_message("hello"))
        await ana.aclose()
        async with httpx.AsyncClient(base_url=served.url) as http:
            mine = (await http.get("/api/model-steps", headers={"Authorization": "Bearer key-ana"})).json()
            theirs = (await http.get("/api/model-steps", headers={"Authorization": "Bearer key-bo"})).json()
            anonymous = await http.get("/api/model-steps")
    assert mine["samples"] == 1 and theirs["samples"] == 0 and anonymous.status_code == 401
