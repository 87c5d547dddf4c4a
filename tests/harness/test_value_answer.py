"""Answers that are values: a question's final answer becomes the value a tool result printed,
chosen by the model in one forced call among the values its tool results showed; anything else
(no question, a file to write, an explanation, a value no tool printed) is left as it was."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage

from herdsman.client import HerdsmanClient
from herdsman.middleware.value_answer import NOT_ONE_VALUE, VALUE_KEY, VALUE_TOOL, candidates
from herdsman.models.scripted import ScriptedChatModel
from tests.support import make_config

ON = {"local_model": {"profile": "small"}, "context": {"hide_unavailable_tools": False},
      "lead": {"value_answers": "auto", "verify_rounds": 0}}
WS = "/mnt/user-data/workspace"


def call(name: str, **args: object) -> dict:
    return {"tool_calls": [{"name": name, "args": args}]}


async def run(home: Path, thread: str, message: str, model: ScriptedChatModel) -> AIMessage:
    ws = home / "threads" / thread / "user-data" / "workspace"
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "matrix.txt").write_text("1 2 3\n4 5 6\n7 8 9\n")
    async with HerdsmanClient(make_config(home, **ON), model=model) as client:
        [e async for e in client.stream(message, thread_id=thread)]
        state = await client.agent.aget_state({"configurable": {"thread_id": thread}})
    return state.values["messages"][-1]


async def test_a_question_is_answered_with_the_value_a_tool_printed(home: Path) -> None:
    model = ScriptedChatModel(responses=[
        call("bash", command=f"wc -l < {WS}/matrix.txt"),
        "Looking at the output, the file matrix.txt has 3 lines in total, as the command shows.",
        call(VALUE_TOOL, value="3"),
    ])
    answer = await run(home, "t-v1", "How many lines does /mnt/user-data/workspace/matrix.txt have?", model)
    assert answer.text == "3"
    assert answer.additional_kwargs[VALUE_KEY]["answer"].startswith("Looking at the output")  # nothing lost
    forced = model.calls[-1]
    assert forced.kwargs["tool_choice"] == VALUE_TOOL and forced.tools == [VALUE_TOOL]
    assert "matrix.txt has 3 lines" in forced.messages[-1].text  # it sees its answer, and the tool result:
    assert "[bash result]\n3" in forced.messages[-1].text


async def test_a_chinese_question_too(home: Path) -> None:
    model = ScriptedChatModel(responses=[
        call("bash", command=f"wc -l < {WS}/matrix.txt"),
        "文件 matrix.txt 一共有 3 行。",
        call(VALUE_TOOL, value="3"),
    ])
    answer = await run(home, "t-v2", "/mnt/user-data/workspace/matrix.txt 有多少行？", model)
    assert answer.text == "3"


async def test_an_explanation_and_a_value_no_tool_printed_are_kept(home: Path) -> None:
    explained = ScriptedChatModel(responses=[
        call("read_file", path=f"{WS}/matrix.txt"),
        "It is a 3 by 3 matrix of the digits 1 to 9, row by row.",
        call(VALUE_TOOL, value=NOT_ONE_VALUE),
    ])
    answer = await run(home, "t-v3", "What does matrix.txt hold?", explained)
    assert answer.text.startswith("It is a 3 by 3 matrix") and VALUE_KEY not in answer.additional_kwargs
    made_up = ScriptedChatModel(responses=[
        call("bash", command=f"wc -l < {WS}/matrix.txt"),
        "It has 3 lines.",
        call(VALUE_TOOL, value="42"),  # an API model may ignore the enum: not a value a tool printed
    ])
    assert (await run(home, "t-v4", "How many lines does matrix.txt have?", made_up)).text == "It has 3 lines."


async def test_no_question_or_a_file_to_write_costs_no_extra_call(home: Path) -> None:
    told = ScriptedChatModel(responses=[call("bash", command=f"wc -l < {WS}/matrix.txt"), "It has 3 lines."])
    assert (await run(home, "t-v5", "Count the lines of matrix.txt.", told)).text == "It has 3 lines."
    to_file = ScriptedChatModel(responses=[
        call("bash", command=f"wc -l < {WS}/matrix.txt > /mnt/user-data/outputs/n.txt"), "Saved.",
    ])
    assert (await run(home, "t-v6", "How many lines? Save the number to /mnt/user-data/outputs/n.txt", to_file)).text == "Saved."
    assert len(told.calls) == 2 and len(to_file.calls) == 2


def test_candidates_are_the_printed_tokens_most_recent_first() -> None:
    from langchain_core.messages import ToolMessage

    results = [
        ToolMessage("     1\talpha beta\n     2\tgamma", tool_call_id="a", name="read_file"),
        ToolMessage("/mnt/user-data/workspace/a.txt  (18 bytes)\n4.0K\t/mnt/user-data/workspace", tool_call_id="b", name="ls"),
    ]
    found = candidates(results)
    assert found[:3] == ["/mnt/user-data/workspace/a.txt", "18", "bytes"]
    assert {"4.0K", "alpha", "gamma"} <= set(found) and "1" not in found  # read_file's gutter is no value
