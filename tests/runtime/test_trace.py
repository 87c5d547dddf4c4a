"""The trace of a thread: model calls, tool calls, bash runs and files changed, per run, in order."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, TypedDict

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt

from herdsman.models.scripted import ScriptedChatModel
from herdsman.runtime.tracing.trace import (
    MAX_PREVIEW_CHARS,
    CheckpointMessages,
    build_trace,
    read_checkpoints,
    read_trace,
)
from herdsman.sandbox import LocalSandboxProvider, make_sandbox_tools
from tests.support import make_config

USAGE = {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150}


def _ai(mid: str, text: str = "", calls: list[dict] | None = None, **usage: int) -> AIMessage:
    return AIMessage(
        text, id=mid, tool_calls=calls or [], usage_metadata={**USAGE, **usage}, response_metadata={"model_name": "m-1"}
    )


def test_steps_come_in_order_with_usage_tool_args_and_bash_details() -> None:
    human = HumanMessage("run it", id="h1")
    asks = _ai("a1", "running", [{"name": "bash", "args": {"command": "ls nope"}, "id": "c1"}])
    result = ToolMessage(
        "ls: nope: No such file\n[exit code 2]",
        tool_call_id="c1",
        name="bash",
        id="t1",
        artifact={
            "command": "ls nope", "exit_code": 2, "stdout": "", "stderr": "ls: nope: No such file\n",
            "timed_out": False,
            "files_changed": [{"path": "/mnt/user-data/outputs/r.txt", "action": "created"}],
            "files_changed_incomplete": False,
        },
    )  # fmt: skip
    answer = _ai("a2", "done", output_tokens=5, total_tokens=125)
    checkpoints = [
        CheckpointMessages([human], run_id="r1"),
        CheckpointMessages([human, asks], run_id="r1"),
        CheckpointMessages([human, asks, result], run_id="r1"),
        CheckpointMessages([human, asks, result, answer], run_id="r1"),
    ]
    trace = build_trace("th", checkpoints)
    assert [(s.index, s.kind) for s in trace.steps] == [(1, "input"), (2, "model"), (3, "tool"), (4, "model")]
    model = trace.steps[1]
    assert model.model == "m-1" and model.text == "running"
    assert model.usage is not None and (model.usage.input_tokens, model.usage.output_tokens) == (120, 30)
    assert [(c.name, c.args) for c in model.tool_calls] == [("bash", {"command": "ls nope"})]
    tool = trace.steps[2]
    assert (tool.tool, tool.args, tool.status) == ("bash", {"command": "ls nope"}, "success")
    assert tool.bash is not None
    assert (tool.bash.command, tool.bash.exit_code, tool.bash.stdout) == ("ls nope", 2, "")
    assert tool.bash.stderr == "ls: nope: No such file\n"
    assert [(f.path, f.action) for f in tool.files_changed] == [("/mnt/user-data/outputs/r.txt", "created")]
    assert len(trace.runs) == 1
    assert trace.runs[0].model_calls == 2 and trace.runs[0].tool_calls == 1
    assert (trace.usage.input_tokens, trace.usage.output_tokens, trace.usage.total_tokens) == (240, 35, 275)


def test_runs_are_told_apart_and_one_run_can_be_asked_for() -> None:
    first = [HumanMessage("one", id="h1"), _ai("a1", "first")]
    second = [HumanMessage("two", id="h2"), _ai("a2", "second")]
    checkpoints = [
        CheckpointMessages(first[:1], run_id="r1"),
        CheckpointMessages(first, run_id="r1"),
        CheckpointMessages(first + second[:1], run_id="r2"),
        CheckpointMessages(first + second, run_id="r2"),
    ]
    trace = build_trace("th", checkpoints)
    assert [(r.run_id, r.first_step, r.step_count) for r in trace.runs] == [("r1", 1, 2), ("r2", 3, 2)]
    only = build_trace("th", checkpoints, run_id="r2")
    assert [(s.index, s.text) for s in only.steps] == [(1, "two"), (2, "second")]
    assert only.run_id == "r2" and only.usage.total_tokens == 150


def test_tool_errors_and_huge_results_are_cut_with_a_note() -> None:
    asks = _ai("a1", "", [{"name": "read_file", "args": {"path": "x"}, "id": "c1"}])
    failed = ToolMessage("x does not exist", tool_call_id="c1", name="read_file", status="error", id="t1")
    huge = _ai("a2", "y" * (MAX_PREVIEW_CHARS + 500))
    trace = build_trace("th", [CheckpointMessages([asks, failed, huge], run_id="r1")])
    assert trace.steps[1].status == "error" and trace.steps[1].bash is None
    assert trace.steps[2].text.endswith("[500 more characters not shown]")


async def test_read_trace_from_a_real_agent_run(home: Path) -> None:
    config = make_config(home, sandbox={"isolation": "none", "allow_unisolated_bash": True})
    provider = LocalSandboxProvider(config)
    model = ScriptedChatModel(responses=[
        {"tool_calls": [{"name": "bash", "args": {"command": "echo hi > ../outputs/hi.txt; echo ok; echo warn >&2"}}]},
        {"tool_calls": [{"name": "write_file", "args": {"path": "notes.md", "content": "n"}}]},
        "all done",
    ])  # fmt: skip
    agent = create_agent(model, tools=make_sandbox_tools(provider, config.sandbox), checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "trace-1"}, "metadata": {"run_id": "run-a"}}
    await agent.ainvoke({"messages": [HumanMessage("go")]}, cfg)

    trace = await read_trace(agent, "trace-1")
    assert [s.kind for s in trace.steps] == ["input", "model", "tool", "model", "tool", "model"]
    assert {s.run_id for s in trace.steps} == {"run-a"}
    bash = trace.steps[2]
    assert bash.bash is not None
    assert (bash.bash.exit_code, bash.bash.stdout, bash.bash.stderr) == (0, "ok\n", "warn\n")
    assert [(f.path, f.action) for f in bash.files_changed] == [("/mnt/user-data/outputs/hi.txt", "created")]
    assert [(f.path, f.action) for f in trace.steps[4].files_changed] == [
        ("/mnt/user-data/workspace/notes.md", "created")
    ]
    assert trace.steps[-1].text == "all done"
    assert all(s.usage and s.usage.total_tokens > 0 for s in trace.steps if s.kind == "model")
    provider.close()


# -- reading run by run gives the same trace as reading every checkpoint -------------------------


class _Chat(TypedDict):
    messages: Annotated[list, add_messages]


def _work(state: _Chat) -> dict:
    return {"messages": [AIMessage(f"working on: {state['messages'][-1].text}")]}


def _answer(state: _Chat) -> dict:
    asked = [m for m in state["messages"] if m.type == "human"][-1].text
    if asked == "ask":
        return {"messages": [AIMessage(f"told: {interrupt('which one?')}")]}
    if asked == "squash":  # a summary: drops what came before, this run's first step too
        gone = [RemoveMessage(id=m.id) for m in state["messages"][:-1]]
        return {"messages": [*gone, AIMessage("summary of it all")]}
    return {"messages": [AIMessage(f"done: {asked}")]}


def _chat_graph(saver=None):
    builder = StateGraph(_Chat)
    builder.add_node("work", _work)
    builder.add_node("answer", _answer)
    builder.add_edge(START, "work")
    builder.add_edge("work", "answer")
    builder.add_edge("answer", END)
    return builder.compile(checkpointer=saver or InMemorySaver())


async def _every_checkpoint(graph, thread_id: str) -> list[CheckpointMessages]:
    """The plain reading: the whole history, oldest first."""
    history = [s async for s in graph.aget_state_history({"configurable": {"thread_id": thread_id}})]
    return [
        CheckpointMessages(list(s.values.get("messages") or []), (s.metadata or {}).get("run_id"))
        for s in reversed(history)
    ]


def _steps(trace) -> list[tuple[str, str | None, str | None]]:
    return [(s.kind, s.text, s.run_id) for s in trace.steps]


@pytest.fixture(params=["memory", "sqlite"])
async def saver(request, tmp_path: Path):
    """Each kind of checkpointer filters and orders checkpoints itself: both are checked."""
    if request.param == "memory":
        yield InMemorySaver()
        return
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "checkpoints.sqlite")) as sqlite:
        yield sqlite


async def test_reading_run_by_run_matches_reading_every_checkpoint(saver) -> None:
    graph = _chat_graph(saver)

    def cfg(run_id: str, **configurable: str) -> dict:
        return {"configurable": {"thread_id": "t", **configurable}, "metadata": {"run_id": run_id}}

    await graph.ainvoke({"messages": [HumanMessage("hello")]}, cfg("r1"))
    first_end = (await graph.aget_state(cfg("r1"))).config["configurable"]["checkpoint_id"]
    await graph.ainvoke({"messages": [HumanMessage("ask")]}, cfg("r2"))  # stops at the interrupt
    await graph.ainvoke(Command(resume="the blue one"), cfg("r3"))  # a resumed run: no input checkpoint
    await graph.ainvoke({"messages": [HumanMessage("more")]}, cfg("r4"))
    await graph.ainvoke({"messages": [HumanMessage("squash")]}, cfg("r5"))
    await graph.ainvoke({"messages": [HumanMessage("branch")]}, cfg("r6", checkpoint_id=first_end))  # a fork

    fast = build_trace("t", await read_checkpoints(graph.checkpointer, "t"))
    plain = build_trace("t", await _every_checkpoint(graph, "t"))
    assert _steps(fast) == _steps(plain)
    texts = {(text, run) for _, text, run in _steps(fast)}
    assert {("working on: ask", "r2"), ("told: the blue one", "r3")} <= texts  # the resumed run's own step
    assert {("working on: squash", "r5"), ("summary of it all", "r5")} <= texts  # removed later in its run
    assert {("working on: more", "r4"), ("done: branch", "r6")} <= texts
    assert [r.run_id for r in fast.runs] == ["r1", "r2", "r3", "r4", "r5", "r6"]
    only = build_trace("t", await read_checkpoints(graph.checkpointer, "t"), run_id="r3")
    assert [s.text for s in only.steps] == ["told: the blue one"]


async def test_a_thread_without_checkpoints_has_an_empty_trace() -> None:
    graph = _chat_graph()
    assert (await read_trace(graph, "nobody")).steps == []


async def test_plain_runs_are_read_as_one_pair_of_checkpoints_each() -> None:
    graph = _chat_graph()
    for n in range(5):
        await graph.ainvoke(
            {"messages": [HumanMessage(f"turn {n}")]},
            {"configurable": {"thread_id": "long"}, "metadata": {"run_id": f"r{n}"}},
        )
    history = [s async for s in graph.aget_state_history({"configurable": {"thread_id": "long"}})]
    read = await read_checkpoints(graph.checkpointer, "long")
    assert len(history) == 20 and len(read) == 10  # each run: its input checkpoint and its last one
    assert _steps(build_trace("long", read)) == _steps(build_trace("long", await _every_checkpoint(graph, "long")))
