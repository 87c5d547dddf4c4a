"""Summarization (LangChain's SummarizationMiddleware) never separates a tool call from its result."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from herdsman.client import HerdsmanClient
from herdsman.models.scripted import ScriptedChatModel
from tests.support import make_config

STEPS = 12


def pairs_problems(messages: list[BaseMessage]) -> list[str]:
    """Tool results without their call before them, and calls without their result."""
    problems: list[str] = []
    asked: set[str] = set()
    for m in messages:
        if isinstance(m, AIMessage):
            asked |= {c["id"] for c in m.tool_calls}
        elif isinstance(m, ToolMessage) and m.tool_call_id not in asked:
            problems.append(f"result {m.tool_call_id} without its call")
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    problems += [f"call {c} without its result" for c in asked - answered]
    return problems


def lead_and_summarizer() -> ScriptedChatModel:
    """Calls two tools per step for STEPS steps, then answers; writes summaries when asked."""
    step = itertools.count(1)

    def respond(messages: list[BaseMessage]):
        if messages[0].type != "system":  # the summarization request
            return "SUMMARY-OF-EARLIER-STEPS"
        n = next(step)
        if n > STEPS:
            return "finished"
        return {
            "tool_calls": [
                {"name": "ls", "args": {"path": f"/mnt/user-data/workspace/a{n}"}, "id": f"a{n}"},
                {"name": "glob", "args": {"pattern": f"*{n}"}, "id": f"g{n}"},
            ]
        }

    return ScriptedChatModel(respond=respond)


@pytest.mark.parametrize("keep", [2, 3, 4, 5])
async def test_summarization_keeps_each_tool_call_with_its_result(home: Path, keep: int) -> None:
    config = make_config(
        home,
        summarization={"enabled": True, "trigger_messages": 8, "keep_messages": keep},
        context={"loop_warn_after": None, "loop_stop_after": None},
    )
    model = lead_and_summarizer()
    async with HerdsmanClient(config, model=model) as client:
        result = await client.run("walk the tree", thread_id=f"t-sum-{keep}")
    assert result.answer == "finished"
    lead_calls = [c for c in model.calls if c.messages[0].type == "system"]
    assert len(lead_calls) == STEPS + 1
    assert any("SUMMARY-OF-EARLIER-STEPS" in m.text for c in lead_calls for m in c.messages), "never summarized"
    for n, recorded in enumerate(lead_calls):
        assert pairs_problems(recorded.messages) == [], f"model call {n}"
    # the summarized requests stayed small
    assert max(len(c.messages) for c in lead_calls[-3:]) < 8 + 4
