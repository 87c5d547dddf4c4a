"""The same tool call again and again: a warning to the model, then a clean stop."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from herdsman.client import HerdsmanClient, ToolCall
from herdsman.middleware.loop_detection import repeat_streak
from herdsman.models.scripted import ScriptedChatModel
from tests.support import make_config


def ls_call(path: str = "/mnt/user-data/workspace") -> dict:
    return {"tool_calls": [{"name": "ls", "args": {"path": path}}]}


def test_repeat_streak_counts_identical_calls_in_a_row() -> None:
    def ai(i: int, path: str) -> list:
        cid = f"c{i}"
        return [AIMessage("", tool_calls=[{"name": "ls", "args": {"path": path}, "id": cid}]), ToolMessage("r", tool_call_id=cid)]

    history = [HumanMessage("go"), *ai(1, "a"), *ai(2, "b"), *ai(3, "b"), *ai(4, "b")]
    signature, count = repeat_streak(history)
    assert count == 3 and '"b"' in signature
    assert repeat_streak([*history, AIMessage("answer")])[1] == 0
    assert repeat_streak([*ai(1, "b"), HumanMessage("new turn"), *ai(2, "b")])[1] == 1


async def test_loop_is_warned_then_stopped_cleanly(home: Path) -> None:
    config = make_config(home, context={"loop_warn_after": 2, "loop_stop_after": 4})
    model = ScriptedChatModel(responses=[ls_call()] * 10)
    async with HerdsmanClient(config, model=model) as client:
        events = [e async for e in client.stream("find the file", thread_id="t-loop")]
        history = await client.messages("t-loop")

    calls = [e for e in events if isinstance(e, ToolCall)]
    assert len(calls) == 3  # the 4th identical call was not run
    assert len(model.calls) == 4
    assert not any("[harness]" in m.text for m in model.calls[1].messages)
    assert "same tool call (ls" in model.calls[2].messages[-1].text  # warned after 2
    assert "same tool call" in model.calls[3].messages[-1].text
    answer = events[-1].answer
    assert answer.startswith("I stopped because I kept making the same tool call (ls")
    # no dangling tool call: every call has its result, and the last message is a plain answer
    answered = {m.tool_call_id for m in history if isinstance(m, ToolMessage)}
    asked = {c["id"] for m in history if isinstance(m, AIMessage) for c in m.tool_calls}
    assert asked == answered
    assert isinstance(history[-1], AIMessage) and not history[-1].tool_calls
    # the harness notes were never saved in the thread
    assert not any("[harness]" in m.text for m in history)


async def test_thread_goes_on_after_a_stop(home: Path) -> None:
    config = make_config(home, context={"loop_warn_after": 2, "loop_stop_after": 3})
    model = ScriptedChatModel(responses=[ls_call(), ls_call(), ls_call(), "fresh answer"])
    async with HerdsmanClient(config, model=model) as client:
        first = await client.run("loop", thread_id="t-again")
        second = await client.run("try something else", thread_id="t-again")
    assert first.answer.startswith("I stopped")
    assert second.answer == "fresh answer"


async def test_changing_arguments_is_not_a_loop(home: Path) -> None:
    config = make_config(home, context={"loop_warn_after": 2, "loop_stop_after": 3})
    model = ScriptedChatModel(responses=[ls_call(f"/mnt/user-data/workspace/{i}") for i in range(5)] + ["done"])
    async with HerdsmanClient(config, model=model) as client:
        result = await client.run("walk", thread_id="t-walk")
    assert result.answer == "done"
    assert not any("[harness]" in m.text for c in model.calls for m in c.messages)
