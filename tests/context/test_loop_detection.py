"""The same tool call again and again: a warning to the model, then a clean stop."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from herdsman.client import HerdsmanClient, ToolCall
from herdsman.middleware.context.loop_detection import repeat_streak
from herdsman.models.scripted import ScriptedChatModel
from tests.support import make_config


def ls_call(path: str = "/mnt/user-data/workspace") -> dict:
    return {"tool_calls": [{"name": "ls", "args": {"path": path}}]}


def test_repeat_streak_counts_identical_calls_in_a_row() -> None:
    def ai(i: int, path: str) -> list:
        cid = f"c{i}"
        return [
            AIMessage("", tool_calls=[{"name": "ls", "args": {"path": path}, "id": cid}]),
            ToolMessage("r", tool_call_id=cid),
        ]

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


async def test_a_call_that_just_failed_is_not_run_again_unchanged(home: Path) -> None:
    """From the benchmark: a chart command failed naming the right column; told to fix the cause,
    the model sent the same command again. The repeat is not run (the command appends a line each
    time it runs); a changed call runs, and so does the same call after another call in between
    (the usual run, edit, run again)."""
    from herdsman.client import ToolResult

    command = "echo ran >> runs.txt; exit 3"

    def bash(n: int, cmd: str = command) -> dict:
        return {"tool_calls": [{"name": "bash", "args": {"command": cmd}, "id": f"b{n}"}]}

    model = ScriptedChatModel(
        responses=[
            bash(1),
            bash(2),
            bash(3, "echo other"),
            bash(4),
            "done",
        ]
    )
    async with HerdsmanClient(make_config(home), model=model) as client:
        events = [e async for e in client.stream("run the job", thread_id="t-repeat")]
    results = [e for e in events if isinstance(e, ToolResult)]
    runs = home / "threads" / "t-repeat" / "user-data" / "workspace" / "runs.txt"
    assert runs.read_text().splitlines() == ["ran", "ran"]  # the 1st and the 4th, not the 2nd
    assert results[1].content.startswith("Not run again: this exact bash call just failed with:")
    assert "exit code 3" in results[1].content and "Change what the error points at" in results[1].content
    assert results[2].content.strip() == "other"


def test_a_repeat_after_an_answer_and_a_harness_note_is_still_a_repeat() -> None:
    from herdsman.middleware.context.loop_detection import repeated_failure

    call = {"name": "bash", "args": {"command": "python3 chart.py --y total"}, "id": "c1"}
    again = {**call, "id": "c2"}
    failed = ToolMessage("error: no column 'total'\n[exit code 1]", tool_call_id="c1", name="bash")
    history = [
        HumanMessage("chart"),
        AIMessage("", tool_calls=[call]),
        failed,
        AIMessage("There is no column total."),
        HumanMessage("[harness check] Not done yet", name="harness"),
        AIMessage("", tool_calls=[again]),
    ]
    assert repeated_failure(history, again) is failed
    ok = ToolMessage("saved", tool_call_id="c1", name="bash")
    assert repeated_failure([*history[:2], ok, *history[3:]], again) is None  # it worked: run it again
    web = {"name": "web_fetch", "args": {"url": "https://example.org"}, "id": "w"}
    assert (
        repeated_failure(
            [
                AIMessage("", tool_calls=[web]),
                ToolMessage("timeout", tool_call_id="w", status="error"),
                AIMessage("", tool_calls=[{**web, "id": "w2"}]),
            ],
            {**web, "id": "w2"},
        )
        is None
    )
    user = [
        HumanMessage("chart"),
        AIMessage("", tool_calls=[call]),
        failed,
        HumanMessage("I added the column, try again"),
        AIMessage("", tool_calls=[again]),
    ]
    assert repeated_failure(user, again) is None  # the user spoke since: run it


async def test_a_refused_repeat_repeated_again_names_the_first_failure_once(home: Path) -> None:
    from herdsman.client import ToolResult

    def bash(n: int) -> dict:
        return {"tool_calls": [{"name": "bash", "args": {"command": "echo no column total; exit 1"}, "id": f"b{n}"}]}

    model = ScriptedChatModel(responses=[bash(1), bash(2), bash(3), "done"])
    async with HerdsmanClient(make_config(home), model=model) as client:
        events = [e async for e in client.stream("chart it", thread_id="t-repeat3")]
    third = [e for e in events if isinstance(e, ToolResult)][2].content
    assert (
        third.count("Not run again") == 1 and third.count("call just failed with") == 1 and "no column total" in third
    ), third


def test_calls_that_differ_only_in_spaces_or_a_comment_are_the_same_call() -> None:
    def ai(i: int, command: str) -> list:
        cid = f"c{i}"
        return [
            AIMessage("", tool_calls=[{"name": "bash", "args": {"command": command}, "id": cid}]),
            ToolMessage("r", tool_call_id=cid),
        ]

    same = [
        "python3 plot.py  --out chart.png",
        "python3 plot.py --out chart.png   # try again",
        "# draw it\npython3 plot.py --out chart.png\n\n",
    ]
    assert repeat_streak([HumanMessage("go"), *[m for i, c in enumerate(same) for m in ai(i, c)]])[1] == 3
    changed = [*same[:2], "python3 plot.py --out chart.svg", "python3 plot.py --out 'chart .png'"]
    assert repeat_streak([HumanMessage("go"), *[m for i, c in enumerate(changed) for m in ai(i, c)]])[1] == 1
    script = "for x in xs:\n    print(x)  # each\n"
    assert repeat_streak([HumanMessage("go"), *ai(1, script), *ai(2, "for x in xs:\n    print(x)\n")])[1] == 2
    assert (
        repeat_streak([HumanMessage("go"), *ai(1, script), *ai(2, "for x in xs:\nprint(x)\n")])[1] == 1
    )  # indentation counts


async def test_a_failed_call_sent_again_with_another_comment_is_not_run_again(home: Path) -> None:
    from herdsman.client import ToolResult

    def bash(n: int, cmd: str) -> dict:
        return {"tool_calls": [{"name": "bash", "args": {"command": cmd}, "id": f"b{n}"}]}

    model = ScriptedChatModel(
        responses=[
            bash(1, "echo ran >> runs.txt; exit 3"),
            bash(2, "echo ran >>  runs.txt;  exit 3   # fixed now"),
            bash(3, "echo ran >> runs.txt; exit 0"),
            "done",
        ]
    )
    async with HerdsmanClient(make_config(home), model=model) as client:
        events = [e async for e in client.stream("run the job", thread_id="t-near")]
    results = [e for e in events if isinstance(e, ToolResult)]
    runs = home / "threads" / "t-near" / "user-data" / "workspace" / "runs.txt"
    assert runs.read_text().splitlines() == ["ran", "ran"]  # the 1st and the 3rd: the 2nd differed only trivially
    assert results[1].content.startswith("Not run again: this exact bash call just failed with:")
