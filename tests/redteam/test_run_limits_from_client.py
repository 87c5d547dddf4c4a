"""A run's own sub-agent limits (``config.configurable.max_concurrent_subagents`` and
``token_budget``) may lower what config.yaml's ``subagents:`` allows, never raise it: another
user's key must not buy itself more concurrent sub-agents or a larger token budget than the
operator set, and a value the scope cannot use is refused with 422 naming the key before the run
exists, instead of failing the run (official SDK client)."""

from __future__ import annotations

import httpx
import pytest
from langgraph_sdk import get_client

from tests.gateway.gateway_support import running_gateway, scripted_model, user_message
from tests.support import make_config


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("max_concurrent_subagents", 1000, "subagents.max_concurrent (3)"),
        ("max_concurrent_subagents", 0, "a positive integer"),
        ("max_concurrent_subagents", "many", "a positive integer"),
        ("token_budget", 10**9, "subagents.token_budget (5000)"),
        ("token_budget", -5, "a positive integer"),
        ("token_budget", True, "a positive integer"),
    ],
)
async def test_a_run_cannot_raise_or_break_its_subagent_limits(home, key, value, said) -> None:
    model = scripted_model()
    with running_gateway(make_config(home, subagents={"token_budget": 5000}), model=model) as gw:
        try:
            client = get_client(url=gw.url, api_key=None)
            tid = (await client.threads.create())["thread_id"]
            with pytest.raises(httpx.HTTPStatusError) as info:
                await client.runs.create(
                    tid, "lead_agent", input=user_message("x"), config={"configurable": {key: value}}
                )
            assert info.value.response.status_code == 422
            detail = info.value.response.json()["detail"]
            assert f"config.configurable.{key}" in detail and said in detail, detail
            assert await client.runs.list(tid) == []  # nothing was created
            # lower limits are the run's to choose
            lower = {"max_concurrent_subagents": 1, "token_budget": 4000}
            values = await client.runs.wait(
                tid, "lead_agent", input=user_message("fine"), config={"configurable": lower}
            )
            assert values["messages"][-1]["content"] == "echo: fine"
            # nor through an assistant, whose config (or context) becomes its runs' configurable
            for settings in ({"config": {"configurable": {key: value}}}, {"context": {key: value}}):
                with pytest.raises(httpx.HTTPStatusError) as refused:
                    await client.assistants.create("lead_agent", **settings)
                assert refused.value.response.status_code == 422 and key in refused.value.response.json()["detail"]
            await client.aclose()
        finally:
            model.release()
