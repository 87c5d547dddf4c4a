"""A run picks the lead's model with ``configurable.model_name`` (the web UI's model picker)."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from herdsman.agents.lead import create_lead_agent, run_config
from tests.support import make_config

MODELS = [
    {
        "name": "fast",
        "use": "herdsman.models.scripted:ScriptedChatModel",
        "responses": ["answer from fast"],
        "on_exhausted": "repeat_last",
    },
    {
        "name": "smart",
        "use": "herdsman.models.scripted:ScriptedChatModel",
        "responses": ["answer from smart"],
        "on_exhausted": "repeat_last",
        "pricing": {"input_per_million": 1000000.0, "output_per_million": 0.0},
    },
]


@pytest.fixture
def agent_and_config(home: Path):
    config = make_config(home, models=MODELS, title={"enabled": False}, subagents={"enabled": False})
    return create_lead_agent(config, checkpointer=InMemorySaver()), config


async def test_the_run_uses_the_model_it_names_and_counts_its_usage(agent_and_config) -> None:
    agent, config = agent_and_config
    default = await agent.ainvoke({"messages": [HumanMessage("hi")]}, run_config(config, "t-default"))
    assert default["messages"][-1].text == "answer from fast"
    assert default["usage"]["lead"]["model"] == "fast"

    picked = await agent.ainvoke({"messages": [HumanMessage("hi")]}, run_config(config, "t-picked", model_name="smart"))
    assert picked["messages"][-1].text == "answer from smart"
    assert picked["usage"]["lead"]["model"] == "smart"
    assert picked["usage"]["lead"]["cost_usd"] > 0  # smart's pricing, not fast's (none)

    # The same thread can switch back: each run's pick holds for that run only.
    again = await agent.ainvoke({"messages": [HumanMessage("and now?")]}, run_config(config, "t-picked"))
    assert again["messages"][-1].text == "answer from fast"


async def test_an_unknown_model_name_fails_with_the_known_names(agent_and_config) -> None:
    agent, config = agent_and_config
    with pytest.raises(ValueError, match=r"model 'gpt-9' is not configured.*fast, smart"):
        await agent.ainvoke({"messages": [HumanMessage("hi")]}, run_config(config, "t-bad", model_name="gpt-9"))
