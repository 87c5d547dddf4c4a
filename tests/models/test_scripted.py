"""The scripted chat model: replays, tool calls in streaming, recording, files, latency."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool

from herdsman.models.scripted import ScriptedChatModel, ScriptedModelError, ScriptExhaustedError


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def test_plays_responses_in_order_and_records_calls() -> None:
    model = ScriptedChatModel(
        responses=[{"content": "adding", "tool_calls": [{"name": "add", "args": {"a": 1, "b": 2}, "id": "c1"}]}, "3"]
    )
    bound = model.bind_tools([add])
    first = bound.invoke([HumanMessage("1+2?")])
    assert first.tool_calls == [{"name": "add", "args": {"a": 1, "b": 2}, "id": "c1", "type": "tool_call"}]
    assert bound.invoke([HumanMessage("again")]).content == "3"
    assert [c.messages[0].content for c in model.calls] == ["1+2?", "again"]
    assert model.calls[0].tools == ["add"]


def test_streaming_keeps_tool_calls() -> None:
    model = ScriptedChatModel(
        responses=[
            {"content": "a fairly long preamble text", "tool_calls": [{"name": "add", "args": {"a": 5, "b": 6}}]}
        ],
        stream_chunk_chars=4,
    )
    chunks = list(model.bind_tools([add]).stream("go"))
    assert len(chunks) > 3
    merged = chunks[0]
    for c in chunks[1:]:
        merged = merged + c
    assert merged.content == "a fairly long preamble text"
    assert merged.tool_calls[0]["name"] == "add" and merged.tool_calls[0]["args"] == {"a": 5, "b": 6}
    assert merged.usage_metadata and merged.usage_metadata["output_tokens"] > 0


async def test_async_stream_keeps_tool_calls() -> None:
    model = ScriptedChatModel(responses=[{"tool_calls": [{"name": "add", "args": {"a": 1, "b": 1}}]}])
    merged = None
    async for chunk in model.astream("go"):
        merged = chunk if merged is None else merged + chunk
    assert merged is not None and merged.tool_calls[0]["args"] == {"a": 1, "b": 1}


def test_exhausted_script_says_what_to_do() -> None:
    model = ScriptedChatModel(responses=["only one"])
    model.invoke("a")
    with pytest.raises(ScriptExhaustedError, match="called 2 times but its script has 1 responses"):
        model.invoke("b")
    repeat = ScriptedChatModel(responses=["same"], on_exhausted="repeat_last")
    assert [repeat.invoke("x").content for _ in range(3)] == ["same"] * 3


def test_error_entry_raises() -> None:
    with pytest.raises(ScriptedModelError, match="boom"):
        ScriptedChatModel(responses=[{"error": "boom"}]).invoke("x")


def test_respond_function_sees_messages() -> None:
    model = ScriptedChatModel(respond=lambda msgs: f"you said {msgs[-1].content}")
    assert model.invoke("hello").content == "you said hello"


def test_script_file_yaml_and_json(tmp_path: Path) -> None:
    yml = tmp_path / "s.yaml"
    yml.write_text("- tool_calls: [{name: add, args: {a: 1, b: 2}}]\n- done\n")
    model = ScriptedChatModel(script=str(yml))
    assert model.invoke("x").tool_calls[0]["args"] == {"a": 1, "b": 2}
    assert model.invoke("y").content == "done"
    js = tmp_path / "s.json"
    js.write_text('{"responses": ["from json"]}')
    assert ScriptedChatModel(script=str(js)).invoke("x").content == "from json"


def test_bad_entry_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown keys"):
        ScriptedChatModel(responses=[{"contnet": "typo"}]).invoke("x")


async def test_latency_overlaps_in_async_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Async calls wait without blocking the loop: all five are waiting at once."""
    real_sleep = asyncio.sleep
    waiting = 0
    peak = 0

    async def counting_sleep(delay: float) -> None:
        nonlocal waiting, peak
        waiting += 1
        peak = max(peak, waiting)
        await real_sleep(delay)
        waiting -= 1

    monkeypatch.setattr(asyncio, "sleep", counting_sleep)
    model = ScriptedChatModel(respond=lambda m: "ok", latency=0.05)
    results = await asyncio.gather(*(model.ainvoke("x") for _ in range(5)))
    assert [r.content for r in results] == ["ok"] * 5
    assert peak == 5
    assert len(model.calls) == 5


def test_each_reply_has_its_own_id() -> None:
    model = ScriptedChatModel(responses=["a", "a"])
    assert model.invoke("x").id != model.invoke("y").id


def test_usable_from_config_factory() -> None:
    from herdsman.config import parse_config
    from herdsman.models.factory import create_chat_model

    config = parse_config(
        "models:\n  - {name: s, use: 'herdsman.models.scripted:ScriptedChatModel', responses: [hi], latency: 0}\n",
        env={},
    )
    model = create_chat_model(config)
    assert isinstance(model, ScriptedChatModel)
    assert isinstance(model.invoke("x"), AIMessage) and model.calls


def _graph_of(model: ScriptedChatModel):
    """A one-node LangGraph graph calling ``model``: a call inside a run, with its thread in the config."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, MessagesState, StateGraph

    async def call(state: MessagesState) -> dict:
        return {"messages": [await model.ainvoke(state["messages"])]}

    return (
        StateGraph(MessagesState)
        .add_node("call", call)
        .add_edge(START, "call")
        .add_edge("call", END)
        .compile(checkpointer=InMemorySaver())
    )


async def _answers(graph, thread: str, turns: int, run_id: str | None = None) -> list[str]:
    said = []
    for _ in range(turns):
        configurable = {"thread_id": thread, **({"run_id": run_id} if run_id else {})}
        out = await graph.ainvoke({"messages": [HumanMessage("go")]}, {"configurable": configurable})
        said.append(out["messages"][-1].text)
    return said


async def test_each_thread_follows_the_script_from_its_start() -> None:
    model = ScriptedChatModel(responses=["one", "two", "three"])
    graph = _graph_of(model)
    results = await asyncio.gather(*(_answers(graph, f"t{n}", 3) for n in range(8)))
    assert results == [["one", "two", "three"]] * 8
    with pytest.raises(ScriptExhaustedError, match="cycle"):
        await _answers(graph, "t0", 1)


async def test_follow_run_and_shared_cursors() -> None:
    per_run = _graph_of(ScriptedChatModel(responses=["a", "b"], follow="run"))
    assert await _answers(per_run, "t", 1, run_id="r1") == ["a"]
    assert await _answers(per_run, "t", 1, run_id="r2") == ["a"]
    shared = _graph_of(ScriptedChatModel(responses=["a", "b"], follow="shared"))
    assert await _answers(shared, "t1", 1) + await _answers(shared, "t2", 1) == ["a", "b"]


async def test_cycle_serves_any_number_of_turns_and_the_record_is_bounded() -> None:
    model = ScriptedChatModel(responses=["ping", "pong"], on_exhausted="cycle", keep_calls=3)
    assert await _answers(_graph_of(model), "t", 5) == ["ping", "pong", "ping", "pong", "ping"]
    assert len(model.calls) == 3
    assert len(model.calls[-1].messages) == 9  # the newest call is kept: 5 questions and 4 answers
    assert model.invoke("outside a run").text == "ping"  # no thread: the shared cursor, from the top


def test_stream_call_args_streams_each_calls_arguments_in_pieces_that_merge_to_the_call() -> None:
    from langchain_core.messages import HumanMessage

    reply = {
        "content": "running it",
        "tool_calls": [
            {"name": "bash", "args": {"command": "echo one two three"}},
            {"name": "ls", "args": {"path": "/mnt/user-data"}},
        ],
    }
    model = ScriptedChatModel(responses=[reply, reply], stream_chunk_chars=5, stream_call_args=True)
    chunks = list(model.stream([HumanMessage("go")]))
    pieces = [c for c in chunks if c.tool_call_chunks]
    assert len(pieces) > 4 and all(len(c.tool_call_chunks) == 1 for c in pieces)  # one call's piece at a time
    merged = chunks[0]
    for c in chunks[1:]:
        merged = merged + c
    assert merged.content == "running it"
    assert [(c["name"], c["args"]) for c in merged.tool_calls] == [
        ("bash", {"command": "echo one two three"}),
        ("ls", {"path": "/mnt/user-data"}),
    ]
    whole = list(ScriptedChatModel(responses=[reply], stream_chunk_chars=5).stream([HumanMessage("go")]))
    assert [len(c.tool_call_chunks) for c in whole if c.tool_call_chunks] == [2]  # the default: calls whole, at the end
