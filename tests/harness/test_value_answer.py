"""Answers that are values: a question's final answer becomes the value it names that a tool
result printed (the model chooses in one forced call when it names several); anything else (no
question, a file to write, an explanation, a value no tool printed, a yes or no) is left as it was."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage

from herdsman.client import HerdsmanClient
from herdsman.middleware.value_answer import NOT_ONE_VALUE, VALUE_KEY, VALUE_TOOL, candidates
from herdsman.models.scripted import ScriptedChatModel
from tests.support import make_config

ON = {
    "local_model": {"profile": "small"},
    "context": {"hide_unavailable_tools": False},
    "lead": {"value_answers": "auto", "verify_rounds": 0},
}
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
    model = ScriptedChatModel(
        responses=[
            call("bash", command=f"wc -l < {WS}/matrix.txt"),
            "Looking at the output, the file matrix.txt has 3 lines in total, as the command shows.",
        ]
    )
    answer = await run(home, "t-v1", "How many lines does /mnt/user-data/workspace/matrix.txt have?", model)
    assert answer.text == "3"
    assert answer.additional_kwargs[VALUE_KEY]["answer"].startswith("Looking at the output")  # nothing lost
    assert len(model.calls) == 2  # one value named: no extra call


async def test_a_name_a_program_printed_alone_on_its_line_is_a_value_too(home: Path) -> None:
    """A word (no digit, no path) counts when a tool printed it alone on a line; the same word
    inside a sentence a tool printed does not."""
    program = "python3 -c \"print('Saturn')\""
    model = ScriptedChatModel(responses=[call("bash", command=program), "The planet farthest from the sun is Saturn."])
    answer = await run(home, "t-v8", "Which planet is farthest from the sun? Reply with the name only.", model)
    assert answer.text == "Saturn"
    said = ScriptedChatModel(
        responses=[call("bash", command="echo 'Saturn has rings'"), "The planet with rings is Saturn."]
    )
    answer = await run(home, "t-v9", "Which planet has rings?", said)
    assert answer.text == "The planet with rings is Saturn."


async def test_an_answer_naming_several_printed_values_lets_the_model_choose_among_them(home: Path) -> None:
    model = ScriptedChatModel(
        responses=[
            call("bash", command=f"ls -S {WS} && wc -c < {WS}/matrix.txt"),
            "The largest file is matrix.txt with 18 bytes.",
            call(VALUE_TOOL, value="matrix.txt"),
        ]
    )
    answer = await run(home, "t-v7", "Which file in the workspace is the largest?", model)
    assert answer.text == "matrix.txt"
    forced = model.calls[-1]
    assert forced.kwargs["tool_choice"] == VALUE_TOOL and forced.tools == [VALUE_TOOL]
    assert (
        "largest file is matrix.txt with 18 bytes" in forced.messages[-1].text
    )  # it sees its answer, and the results:
    assert "[bash result]\nmatrix.txt" in forced.messages[-1].text


async def test_a_chinese_question_too(home: Path) -> None:
    model = ScriptedChatModel(
        responses=[call("bash", command=f"wc -l < {WS}/matrix.txt"), "文件 matrix.txt 一共有 3 行。"]
    )
    answer = await run(home, "t-v2", "/mnt/user-data/workspace/matrix.txt 有多少行？", model)
    assert answer.text == "3"


async def test_an_explanation_a_yes_and_a_value_no_tool_printed_are_kept(home: Path) -> None:
    explained = ScriptedChatModel(
        responses=[
            call("read_file", path=f"{WS}/matrix.txt"),
            "It is a 3 by 3 matrix of the digits 1 to 9, row by row.",
            call(VALUE_TOOL, value=NOT_ONE_VALUE),
        ]
    )
    answer = await run(home, "t-v3", "What does matrix.txt hold?", explained)
    assert answer.text.startswith("It is a 3 by 3 matrix") and VALUE_KEY not in answer.additional_kwargs
    made_up = ScriptedChatModel(responses=[call("bash", command=f"wc -l < {WS}/matrix.txt"), "It has 42 lines."])
    assert (await run(home, "t-v4", "How many lines does matrix.txt have?", made_up)).text == "It has 42 lines."
    yes = ScriptedChatModel(responses=[call("ls", path=WS), "Yes."])
    assert (
        await run(home, "t-v8", "Is there a file called matrix.txt in the workspace? Answer yes or no.", yes)
    ).text == "Yes."
    assert len(made_up.calls) == 2 and len(yes.calls) == 2


async def test_no_question_or_a_file_to_write_costs_no_extra_call(home: Path) -> None:
    told = ScriptedChatModel(responses=[call("bash", command=f"wc -l < {WS}/matrix.txt"), "It has 3 lines."])
    assert (await run(home, "t-v5", "Count the lines of matrix.txt.", told)).text == "It has 3 lines."
    to_file = ScriptedChatModel(
        responses=[
            call("bash", command=f"wc -l < {WS}/matrix.txt > /mnt/user-data/outputs/n.txt"),
            "Saved.",
        ]
    )
    assert (
        await run(home, "t-v6", "How many lines? Save the number to /mnt/user-data/outputs/n.txt", to_file)
    ).text == "Saved."
    assert len(told.calls) == 2 and len(to_file.calls) == 2


def test_candidates_are_the_printed_tokens_most_recent_first() -> None:
    from langchain_core.messages import ToolMessage

    results = [
        ToolMessage("     1\talpha beta\n     2\tgamma", tool_call_id="a", name="read_file"),
        ToolMessage(
            "/mnt/user-data/workspace/a.txt  (18 bytes)\n4.0K\t/mnt/user-data/workspace", tool_call_id="b", name="ls"
        ),
    ]
    found = candidates(results)
    assert found[:3] == ["/mnt/user-data/workspace/a.txt", "18", "bytes"]
    assert {"4.0K", "alpha", "gamma"} <= set(found) and "1" not in found  # read_file's gutter is no value


async def test_the_questions_own_path_is_no_value_even_before_its_question_mark(home: Path) -> None:
    model = ScriptedChatModel(
        responses=[
            call("bash", command=f"wc -l {WS}/matrix.txt"),
            f"The file {WS}/matrix.txt has 3 lines.",
        ]
    )
    answer = await run(home, "t-v9", f"How many lines does {WS}/matrix.txt have?", model)
    assert answer.text == "3"
