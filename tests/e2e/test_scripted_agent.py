"""End to end with the scripted model: a multi-step task in the sandbox, streaming, errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from herdsman.client import HerdsmanClient, RunFinished, TextDelta, ToolCall, ToolResult
from herdsman.models.scripted import ScriptedChatModel
from tests.support import make_config

SCRIPT = "/mnt/user-data/workspace/primes.py"
PRIMES = (
    "ps=[n for n in range(2,30) if all(n%d for d in range(2,n))]\n"
    "open('/mnt/user-data/outputs/primes.txt','w').write(' '.join(map(str,ps)))\n"
    "print('found', len(ps))\n"
)


def call(name: str, **args: object) -> dict:
    return {"tool_calls": [{"name": name, "args": args}]}


@pytest.mark.bwrap
async def test_multi_step_task_writes_runs_and_reads_files(config, home: Path) -> None:
    model = ScriptedChatModel(
        responses=[
            {"content": "I'll write the script first.", **call("write_file", path=SCRIPT, content=PRIMES)},
            call("bash", command="python3 primes.py"),
            call("read_file", path="/mnt/user-data/outputs/primes.txt"),
            "The primes below 30 are 2 3 5 7 11 13 17 19 23 29, saved in outputs/primes.txt.",
        ]
    )
    events = []
    async with HerdsmanClient(config, model=model) as client:
        async for event in client.stream("List the primes below 30 into a file", thread_id="t-primes"):
            events.append(event)
        history = await client.messages("t-primes")

    calls = [e.name for e in events if isinstance(e, ToolCall)]
    assert calls == ["write_file", "bash", "read_file"]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert not any(r.is_error for r in results), results
    assert "found 10" in results[1].content
    assert "2 3 5 7 11 13 17 19 23 29" in results[2].content
    assert "".join(e.text for e in events if isinstance(e, TextDelta)).startswith("I'll write the script first.")
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.outputs == ["/mnt/user-data/outputs/primes.txt"]
    assert finished.title == "List the primes below 30 into a file"
    assert finished.answer.startswith("The primes below 30")
    # the files are really there, in the thread's folder
    data = home / "threads" / "t-primes" / "user-data"
    assert (data / "outputs" / "primes.txt").read_text() == "2 3 5 7 11 13 17 19 23 29"
    assert (data / "workspace" / "primes.py").read_text() == PRIMES
    # the model saw each tool result before its next step
    assert "found 10" in model.calls[2].messages[-1].text
    assert sum(isinstance(m, ToolMessage) for m in history) == 3
    # no host path ever reached the model
    seen = "\n".join(m.text for c in model.calls for m in c.messages)
    assert str(home) not in seen


async def test_tool_call_with_wrong_arguments_is_reported_and_run_goes_on(config) -> None:
    model = ScriptedChatModel(
        responses=[
            call("read_file", wrong_arg="x"),
            call("no_such_tool", a=1),
            "Sorry, I used the tools wrongly.",
        ]
    )
    async with HerdsmanClient(config, model=model) as client:
        events = [e async for e in client.stream("read something", thread_id="t-bad")]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert results[0].is_error and "path" in results[0].content
    assert results[1].is_error and "no_such_tool" in results[1].content
    assert events[-1].answer == "Sorry, I used the tools wrongly."


def garbage_reply() -> AIMessage:
    return AIMessage(
        content="",
        invalid_tool_calls=[
            {"name": "bash", "args": "{not json", "id": "x", "error": "bad JSON", "type": "invalid_tool_call"}
        ],
    )


async def test_garbage_tool_call_is_re_asked_then_given_up(config) -> None:
    """Unparsable tool calls (invoke path): the model is told why and asked again, then the run ends cleanly."""
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from herdsman.agents.lead import create_lead_agent, run_config

    model = ScriptedChatModel(responses=[garbage_reply(), garbage_reply(), garbage_reply(), "unused"])
    agent = create_lead_agent(config, model=model, checkpointer=InMemorySaver())
    cfg = run_config(config, "t-garbage")
    state = await agent.ainvoke({"messages": [HumanMessage("do it")]}, cfg)
    answer = state["messages"][-1].text
    assert "could not be used" in answer and "bash" in answer
    assert "could not be parsed" in model.calls[1].messages[-1].text
    assert len(model.calls) == 3
    # the thread is still usable
    state = await agent.ainvoke({"messages": [HumanMessage("again")]}, cfg)
    assert state["messages"][-1].text == "unused"


async def test_garbage_tool_call_when_streaming_becomes_a_tool_error(config) -> None:
    """Streamed, broken JSON arguments parse as empty ones: the tool reports the missing argument."""
    model = ScriptedChatModel(responses=[garbage_reply(), "I will stop here."])
    async with HerdsmanClient(config, model=model) as client:
        events = [e async for e in client.stream("do it", thread_id="t-garbage-stream")]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert len(results) == 1 and results[0].is_error and "command" in results[0].content
    assert events[-1].answer == "I will stop here."


async def test_model_that_raises_gives_clear_error_and_thread_stays_usable(home: Path) -> None:
    config = make_config(home, lead={"model_retries": 1, "retry_initial_delay": 0})
    model = ScriptedChatModel(
        responses=[{"error": "connection refused"}, {"error": "connection refused"}, "back again"]
    )
    async with HerdsmanClient(config, model=model) as client:
        first = await client.run("hello", thread_id="t-err")
        assert "model call failed" in first.answer and "connection refused" in first.answer
        assert "base_url" in first.answer
        second = await client.run("hello again", thread_id="t-err")
        assert second.answer == "back again"


async def test_a_failed_model_call_is_told_in_the_requests_language_and_fails_the_run(home: Path) -> None:
    """A request in Chinese whose model cannot be called: the harness's reply is in Chinese, marked
    as the run's failure (not sent back by the completion check), and the run has a problem."""
    from herdsman.agents.model_failure import failed_reason

    config = make_config(home, lead={"model_retries": 1, "retry_initial_delay": 0})
    model = ScriptedChatModel(responses=[{"error": "connection refused"}], on_exhausted="repeat_last")
    async with HerdsmanClient(config, model=model) as client:
        done = await client.run("请把销售数据画成柱状图", thread_id="t-err-zh")
        last = (await client.messages("t-err-zh"))[-1]
    assert (
        done.answer.startswith("错误：模型调用失败")
        and "connection refused" in done.answer
        and "base_url" in done.answer
    )
    assert failed_reason(last) == "model_call"
    assert len(model.calls) == 2, "one call and its retry; the check sent nothing back"
    assert done.language == "zh" and any("运行失败" in p for p in done.problems), done.problems


async def test_huge_tool_output_is_bounded(config) -> None:
    model = ScriptedChatModel(
        responses=[
            call("write_file", path="big.txt", content="x" * 10_000_000),
            call("read_file", path="big.txt"),
            "ok",
        ]
    )
    async with HerdsmanClient(config, model=model) as client:
        events = [e async for e in client.stream("big", thread_id="t-big")]
    read = [e for e in events if isinstance(e, ToolResult)][1]
    assert len(read.content) < config.sandbox.max_output_chars * 2
    assert "cut" in read.content
