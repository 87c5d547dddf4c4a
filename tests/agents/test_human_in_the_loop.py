"""Human in the loop: clarifying questions and tool approvals pause the run; resume goes on."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from herdsman.agents.lead import create_lead_agent, run_config
from herdsman.models.scripted import ScriptedChatModel
from tests.support import make_config


def call(name: str, **args: object) -> dict:
    return {"tool_calls": [{"name": name, "args": args}]}


async def test_clarifying_question_with_choices(config) -> None:
    model = ScriptedChatModel(
        responses=[call("ask_clarification", question="Which colour?", choices=["red", "blue"]), "Blue it is."]
    )
    agent = create_lead_agent(config, model=model, checkpointer=InMemorySaver())
    cfg = run_config(config, "ask")
    first = await agent.ainvoke({"messages": [HumanMessage("paint it")]}, cfg)
    interrupts = first["__interrupt__"]
    assert interrupts[0].value == {"type": "clarification", "question": "Which colour?", "choices": ["red", "blue"]}
    state = await agent.aget_state(cfg)
    assert state.next == ("tools",)  # paused, waiting for the answer
    done = await agent.ainvoke(Command(resume="blue"), cfg)
    answer = next(m for m in done["messages"] if isinstance(m, ToolMessage))
    assert answer.content == "The user answered: blue"
    assert done["messages"][-1].text == "Blue it is."
    assert "The user answered: blue" in model.calls[1].messages[-1].text


def approval_agent(home: Path, responses: list) -> tuple:
    config = make_config(home, tools={"require_approval": ["write_file"]})
    model = ScriptedChatModel(responses=responses)
    agent = create_lead_agent(config, model=model, checkpointer=InMemorySaver())
    return agent, config, model


async def test_approval_reject_edit_approve(home: Path) -> None:
    write = call("write_file", path="/mnt/user-data/outputs/a.txt", content="draft")
    agent, config, model = approval_agent(home, [write, "rejected, ok", write, "edited", write, "approved"])
    out = home / "threads" / "appr" / "user-data" / "outputs" / "a.txt"
    cfg = run_config(config, "appr")

    paused = await agent.ainvoke({"messages": [HumanMessage("write it")]}, cfg)
    request = paused["__interrupt__"][0].value
    assert request["action_requests"][0]["name"] == "write_file"
    assert request["action_requests"][0]["args"]["content"] == "draft"
    assert not out.exists()  # nothing ran before the decision
    done = await agent.ainvoke(Command(resume={"decisions": [{"type": "reject", "message": "not now"}]}), cfg)
    assert not out.exists()
    assert "not now" in next(m for m in reversed(done["messages"]) if isinstance(m, ToolMessage)).text

    await agent.ainvoke({"messages": [HumanMessage("again")]}, cfg)
    edited = {"name": "write_file", "args": {"path": "/mnt/user-data/outputs/a.txt", "content": "final"}}
    await agent.ainvoke(Command(resume={"decisions": [{"type": "edit", "edited_action": edited}]}), cfg)
    assert out.read_text() == "final"

    await agent.ainvoke({"messages": [HumanMessage("once more")]}, cfg)
    await agent.ainvoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg)
    assert out.read_text() == "draft"


async def test_tools_without_approval_run_straight_away(home: Path) -> None:
    agent, config, model = approval_agent(home, [call("ls", path="/mnt/user-data/workspace"), "listed"])
    result = await agent.ainvoke({"messages": [HumanMessage("list")]}, run_config(config, "free"))
    assert "__interrupt__" not in result and result["messages"][-1].text == "listed"
