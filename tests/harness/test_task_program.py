"""A task program: when the completion check finds that a file the request asks for is missing,
the harness asks the model once, without the conversation, for a program that does the request
(given the request, how the named files begin and what is missing), runs it as a bash call in the
jail, and the model answers from what it printed. Anything else is left to the model."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from herdsman.middleware.task_program import MAX_TOKENS, TASK_KEY
from herdsman.models.scripted import ScriptedChatModel
from tests.support import marked, page_run, small_model_run
from tests.support import tool_call as call

WS = "/mnt/user-data/workspace"
OUT = "/mnt/user-data/outputs"
TICKS = "tick 1\ntick 2\ntick 3\n"
PROGRAM = (
    "```python\nimport os\n"
    f"os.makedirs('{OUT}', exist_ok=True)\n"
    f"line = open('{WS}/ticks.txt').readline()\n"
    f"open('{OUT}/first.txt', 'w').write(line)\n"
    "print('wrote first.txt')\n```"
)


FILES = {"ticks.txt": TICKS}


async def run(home: Path, thread: str, message: str, model: ScriptedChatModel, mode: str = "auto") -> list:
    return await page_run(home, thread, message, model, FILES, "task_programs", mode)


def programs(messages: list) -> list[AIMessage]:
    return marked(messages, TASK_KEY)


def first(home: Path, thread: str) -> Path:
    return home / "threads" / thread / "user-data" / "outputs" / "first.txt"


async def test_a_missing_file_is_made_by_a_program_written_on_a_clean_page(home: Path) -> None:
    request = f"Copy the first line of {WS}/ticks.txt to {OUT}/first.txt."
    model = ScriptedChatModel(responses=[call("ls", path=WS), "The folder holds ticks.txt.", PROGRAM, "Copied."])
    messages = await run(home, "t-t1", request, model)
    assert first(home, "t-t1").read_text() == "tick 1\n"  # the program ran in the thread's jail
    [ran] = programs(messages)
    result = next(m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == ran.tool_calls[0]["id"])
    assert result.text.strip() == "wrote first.txt" and messages[-1].text == "Copied."
    page = model.calls[2]
    assert page.tools == [] and [type(m) for m in page.messages] == [SystemMessage, HumanMessage]
    assert page.kwargs["max_tokens"] == MAX_TOKENS
    text = page.messages[-1].text
    assert request in text and f"{WS}/ticks.txt begins:\ntick 1" in text and f"{OUT}/first.txt" in text


async def test_a_file_short_of_the_rows_asked_for_is_made_by_a_program(home: Path) -> None:
    """From the dev split: the model typed 49 of 50 rows, then printed ``n,{n**2}`` for each n and
    never saved it; the note's command repeated that program. The page shows what is wrong
    without the command, and the program it gets writes the file whole."""
    request = f"Create {OUT}/squares.csv with the header n,square and one row for each n from 1 to 50."
    typed = "n,square\n" + "\n".join(f"{n},{n * n}" for n in range(1, 50))
    wrong = "python3 - <<'EOF'\nfor n in range(1, 51):\n    print(f'n,{n**2}')\nEOF"
    program = (
        f"```python\nwith open('{OUT}/squares.csv', 'w') as f:\n    f.write('n,square\\n')\n"
        "    for n in range(1, 51):\n        f.write(f'{n},{n*n}\\n')\nprint('wrote 50 rows')\n```"
    )
    model = ScriptedChatModel(
        responses=[
            call("bash", command=wrong),
            call("write_file", path=f"{OUT}/squares.csv", content=typed),
            "Created squares.csv.",
            program,
            "Created squares.csv with 50 rows.",
        ]
    )
    messages = await run(home, "t-rows", request, model)
    assert len(programs(messages)) == 1
    rows = (home / "threads" / "t-rows" / "user-data" / "outputs" / "squares.csv").read_text().splitlines()
    assert rows[0] == "n,square" and rows[1:] == [f"{n},{n * n}" for n in range(1, 51)]
    page = next(c for c in model.calls if c.tools == [])
    assert "one row for each n from 1 to 50" in page.messages[-1].text
    assert "print(f'n," not in page.messages[-1].text  # the model's wrong program is not on the page


async def test_a_chinese_request_gets_its_program_too(home: Path) -> None:
    request = f"把 {WS}/ticks.txt 的第一行复制到 {OUT}/first.txt。"
    model = ScriptedChatModel(responses=[call("ls", path=WS), "好的。", PROGRAM, "已复制。"])
    messages = await run(home, "t-t2", request, model)
    assert len(programs(messages)) == 1 and first(home, "t-t2").read_text() == "tick 1\n"


async def test_off_or_a_reply_without_a_program_leaves_the_model_to_do_it(home: Path) -> None:
    request = f"Copy the first line of {WS}/ticks.txt to {OUT}/first.txt."
    for thread, mode, page in (("t-t3", "off", []), ("t-t4", "auto", ["I would read the file first."])):
        model = ScriptedChatModel(
            responses=[
                call("ls", path=WS),
                "Done.",
                *page,
                call("write_file", path=f"{OUT}/first.txt", content="tick 1\n"),
                "Copied.",
            ]
        )
        messages = await run(home, thread, request, model, mode)
        assert programs(messages) == [] and first(home, thread).read_text() == "tick 1\n"
        assert model.calls[-2].tools  # the model itself made the file


async def test_a_program_waits_for_approval_when_bash_needs_it(home: Path) -> None:
    """The page's call is the model's next step, so the approval gate sees it like any bash call:
    nothing runs until a person approves."""
    request = f"Copy the first line of {WS}/ticks.txt to {OUT}/first.txt."
    model = ScriptedChatModel(responses=[call("ls", path=WS), "Done.", PROGRAM, "Copied."])
    lead = {"task_programs": "auto", "verify_rounds": 2}
    messages = await small_model_run(
        home, "t-t5", request, model, {"ticks.txt": TICKS}, lead, tools={"require_approval": ["bash"]}
    )
    [waiting] = programs(messages)
    assert messages[-1] is waiting or messages[-1].id == waiting.id  # the run stopped at the call, for approval
    assert not first(home, "t-t5").exists()  # nothing ran


async def test_a_program_that_failed_gets_one_more_page_with_its_error(home: Path) -> None:
    request = f"Copy the first line of {WS}/ticks.txt to {OUT}/first.txt."
    broken = PROGRAM.replace("ticks.txt'", "tick.txt'")  # a file name mistyped
    model = ScriptedChatModel(responses=[call("ls", path=WS), "Done.", broken, "Done.", PROGRAM, "Copied."])
    messages = await run(home, "t-t6", request, model)
    assert first(home, "t-t6").read_text() == "tick 1\n" and messages[-1].text == "Copied."
    assert len(programs(messages)) == 2
    retry = model.calls[4]
    assert retry.tools == [] and [type(m) for m in retry.messages] == [
        SystemMessage,
        HumanMessage,
        AIMessage,
        HumanMessage,
    ]
    assert "/tick.txt" in retry.messages[2].text  # the program that failed, then why
    assert "FileNotFoundError" in retry.messages[3].text and "fixed program" in retry.messages[3].text


async def test_a_second_failure_gets_no_third_page(home: Path) -> None:
    request = f"Copy the first line of {WS}/ticks.txt to {OUT}/first.txt."
    broken = PROGRAM.replace("ticks.txt'", "tick.txt'")
    model = ScriptedChatModel(
        responses=[call("ls", path=WS), "Done.", broken, "Done.", broken, "Done.", "I could not copy it."],
        on_exhausted="repeat_last",
    )
    messages = await run(home, "t-t7", request, model)
    assert len(programs(messages)) == 2 and not first(home, "t-t7").exists()
    assert all(c.tools for c in model.calls[5:])  # after two programs, only the model itself
