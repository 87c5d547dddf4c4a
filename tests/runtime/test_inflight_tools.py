"""Tool calls in flight when a run stopped: a command is answered as interrupted, calls safe to
repeat run again, calls that had finished keep their results (``runtime/runs/inflight_tools.py``).

The agent is LangChain's ``create_agent`` with the scripted model and tools that count their
executions; the run is stopped (its task cancelled, as a process dies) while tools are in flight,
then settled and resumed on the same checkpointer, as a worker taking the run over does.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import BaseMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from herdsman.models.scripted import ScriptedChatModel
from herdsman.runtime.runs.inflight_tools import is_repeatable, settle_inflight_tool_calls


def make_agent(calls: list[dict[str, Any]], hold: set[str]) -> tuple[Any, Counter, asyncio.Event]:
    """An agent that first makes ``calls`` at once, then answers with every tool result it saw;
    a call whose id is in ``hold`` blocks its first execution (it is in flight when stopped)."""
    ran: Counter = Counter()
    blocked = asyncio.Event()

    async def execute(call_id: str) -> str:
        ran[call_id] += 1
        if call_id in hold and ran[call_id] == 1:
            blocked.set()
            await asyncio.sleep(3600)
        return f"result of {call_id}"

    @tool
    async def bash(command: str) -> str:
        """Run a command."""
        return await execute(command)

    @tool
    async def read_file(path: str) -> str:
        """Read a file."""
        return await execute(path)

    def reply(messages: list[BaseMessage]) -> Any:
        if not any(m.type == "tool" for m in messages):
            return {"tool_calls": calls}
        return "saw: " + " | ".join(str(m.content) for m in messages if m.type == "tool")

    model = ScriptedChatModel(respond=reply)
    return create_agent(model, tools=[bash, read_file], checkpointer=InMemorySaver()), ran, blocked


def call(name: str, call_id: str) -> dict[str, Any]:
    """A tool call whose argument is its own id (what the counting tools count)."""
    return {"name": name, "args": {"command" if name == "bash" else "path": call_id}, "id": call_id}


async def stopped_mid_tools(agent: Any, blocked: asyncio.Event, config: dict[str, Any]) -> None:
    """Start a run and stop it once a held tool call is executing."""
    task = asyncio.create_task(
        agent.ainvoke({"messages": [{"role": "user", "content": "go"}]}, config, durability="sync")
    )
    await asyncio.wait_for(blocked.wait(), 30)
    await asyncio.sleep(0.1)  # the calls not held finish, and their results are saved
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_a_command_in_flight_is_reported_while_a_read_in_flight_runs_again() -> None:
    """A bash call and a read in flight, a read finished: after settling and resuming, bash ran
    once and the model read that it was interrupted; the held read ran again; the finished read
    ran once; each call has exactly one result, and the run's checkpoint metadata is kept."""
    calls = [call("read_file", "done"), call("bash", "cmd"), call("read_file", "slow")]
    agent, ran, blocked = make_agent(calls, hold={"cmd", "slow"})
    config = {"configurable": {"thread_id": "t", "run_id": "r1"}}
    await stopped_mid_tools(agent, blocked, config)

    assert await settle_inflight_tool_calls(agent, config) == ["cmd"]
    head = await agent.checkpointer.aget_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": ""}})
    assert head.metadata.get("run_id") == "r1", "a worker that dies now still resumes the same run"
    final = await agent.ainvoke(None, config)

    assert ran == Counter({"done": 1, "cmd": 1, "slow": 2})
    tools = {m.tool_call_id: m for m in final["messages"] if m.type == "tool"}
    assert sorted(tools) == ["cmd", "done", "slow"], "one result per call"
    assert tools["cmd"].status == "error" and "interrupted" in tools["cmd"].content
    assert "did NOT run it again" in tools["cmd"].content
    assert tools["slow"].content == "result of slow" and tools["done"].content == "result of done"
    assert final["messages"][-1].content.startswith("saw: ")
    assert "interrupted" in final["messages"][-1].content, "the model saw the notice"


async def test_when_only_commands_were_in_flight_the_agent_goes_on_to_the_model() -> None:
    """Only a bash call was unanswered: it is reported, nothing runs again, the model answers."""
    agent, ran, blocked = make_agent([call("bash", "cmd")], hold={"cmd"})
    config = {"configurable": {"thread_id": "t"}}
    await stopped_mid_tools(agent, blocked, config)
    assert await settle_inflight_tool_calls(agent, config) == ["cmd"]
    final = await agent.ainvoke(None, config)
    assert ran == Counter({"cmd": 1})
    assert [m.type for m in final["messages"]] == ["human", "ai", "tool", "ai"]
    assert "interrupted" in final["messages"][-1].content


async def test_reads_in_flight_alone_are_left_to_run_again() -> None:
    """Nothing unsafe in flight: the checkpoint is not touched and LangGraph re-runs the read."""
    agent, ran, blocked = make_agent([call("read_file", "slow")], hold={"slow"})
    config = {"configurable": {"thread_id": "t"}}
    await stopped_mid_tools(agent, blocked, config)
    before = (await agent.aget_state(config)).config
    assert await settle_inflight_tool_calls(agent, config) == []
    assert (await agent.aget_state(config)).config == before
    final = await agent.ainvoke(None, config)
    assert ran == Counter({"slow": 2})
    assert final["messages"][-1].content == "saw: result of slow"


async def test_a_thread_not_in_a_tools_step_is_left_alone() -> None:
    """A finished run (nothing pending): nothing to settle."""
    agent, _, _ = make_agent([call("read_file", "x")], hold=set())
    config = {"configurable": {"thread_id": "t"}}
    await agent.ainvoke({"messages": [{"role": "user", "content": "go"}]}, config)
    assert await settle_inflight_tool_calls(agent, config) == []


def test_what_is_safe_to_repeat() -> None:
    """Reads and whole-file writes repeat safely; commands, appends, edits and unknown tools do not."""
    assert is_repeatable({"name": "read_file", "args": {}})
    assert is_repeatable({"name": "ask_clarification", "args": {"question": "which?"}})
    assert is_repeatable({"name": "write_file", "args": {"path": "a", "content": "x"}})
    assert not is_repeatable({"name": "write_file", "args": {"path": "a", "content": "x", "append": True}})
    for name in ("bash", "str_replace", "task", "some_mcp_tool"):
        assert not is_repeatable({"name": name, "args": {}})
