"""Subgraph streaming: a tool that runs a LangGraph subgraph streams under its namespace
(``<mode>|tools:<id>``) when ``stream_subgraphs`` is on, and stays silent when it is off."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

import pytest
from langchain_core.tools import tool
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph_sdk import get_client

from tests.gateway.gateway_support import RunningGateway, running_gateway, user_message


class _Research(TypedDict):
    topic: str
    notes: str


def _research(state: _Research) -> dict:
    get_stream_writer()({"progress": f"researching {state['topic']}"})
    return {"notes": f"notes on {state['topic']}"}


_builder = StateGraph(_Research)
_builder.add_node("research", _research)
_builder.add_edge(START, "research")
_builder.add_edge("research", END)
RESEARCHER = _builder.compile()


@tool
async def research(topic: str) -> str:
    """Research a topic with a sub-graph."""
    result = await RESEARCHER.ainvoke({"topic": topic, "notes": ""})
    return result["notes"]


@pytest.fixture
def subgraph_gateway(config, model) -> Iterator[RunningGateway]:
    with running_gateway(config, model=model, extra_tools=[research]) as served:
        yield served


def _reply_with_research(messages):
    last = messages[-1]
    if last.type == "human":
        return {"tool_calls": [{"name": "research", "args": {"topic": "otters"}}]}
    return f"summary: {last.text}"


async def test_subgraph_events_are_named_by_namespace(subgraph_gateway, model) -> None:
    model.respond = _reply_with_research
    sdk = get_client(url=subgraph_gateway.url, api_key=None)
    try:
        tid = (await sdk.threads.create())["thread_id"]
        parts = [
            p
            async for p in sdk.runs.stream(
                tid,
                "lead_agent",
                input=user_message("go"),
                stream_mode=["values", "updates", "custom"],
                stream_subgraphs=True,
            )
        ]
        nested = [p for p in parts if "|" in p.event]
        assert nested, "subgraph events are streamed"
        modes = {p.event.split("|")[0] for p in nested}
        assert {"values", "updates", "custom"} <= modes
        namespaces = {p.event.split("|", 1)[1] for p in nested}
        assert all(ns.startswith("tools:") for ns in namespaces)
        custom = [p.data for p in nested if p.event.startswith("custom|")]
        assert custom == [{"progress": "researching otters"}]
        assert "end" not in {p.event for p in parts}
        assert [p.data for p in parts if p.event == "values"][-1]["messages"][-1][
            "content"
        ] == "summary: notes on otters"

        quiet = [
            p
            async for p in sdk.runs.stream(
                tid, "lead_agent", input=user_message("again"), stream_mode=["values", "custom"]
            )
        ]
        assert not [p for p in quiet if "|" in p.event]
    finally:
        await sdk.aclose()
