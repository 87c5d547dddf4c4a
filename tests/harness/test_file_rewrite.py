"""A file rewrite: when the completion check finds that a file the request names is not right yet
(not changed, or a script that misbehaves), the harness asks the model once, without the
conversation, for the file's whole new text and writes it in the model's name; read before write
lets it through (the page showed the file whole). Anything else is left to the model."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from herdsman.middleware.file_rewrite import MAX_TOKENS, REWRITE_KEY
from herdsman.models.scripted import ScriptedChatModel
from tests.support import marked, page_run, small_model_run
from tests.support import tool_call as call

WS = "/mnt/user-data/workspace"
BUGGY = "def mean(values):\n    return sum(values) / (len(values) - 1)\n"
TEST = "from stats import mean\n\nassert mean([2, 4, 6]) == 4\nassert mean([5]) == 5\nprint('ok')\n"
FIXED = "def mean(values):\n    return sum(values) / len(values)\n"
REQUEST = (
    "python3 test_stats.py fails in /mnt/user-data/workspace. Fix the bug in stats.py (not the test) so that it passes."
)
SHOWN = "Here is the fix:\n```python\ndef mean(values):\n    return sum(values) / len(values)\n```\nSave it and run the test."


FILES = {"stats.py": BUGGY, "test_stats.py": TEST}


async def run(home: Path, thread: str, message: str, model: ScriptedChatModel, mode: str = "auto") -> list:
    return await page_run(home, thread, message, model, FILES, "file_rewrites", mode, value_answers="off")


def rewrites(messages: list) -> list[AIMessage]:
    return marked(messages, REWRITE_KEY)


async def test_a_file_the_model_left_unfixed_is_written_whole_from_a_clean_page(home: Path) -> None:
    model = ScriptedChatModel(
        responses=[
            call("bash", command="python3 test_stats.py"),
            SHOWN,  # the fix shown, not made: the note says stats.py was not changed
            f"```python\n{FIXED}```",  # the clean page
            call("bash", command="python3 test_stats.py"),
            "Fixed: the test passes.",
        ]
    )
    messages = await run(home, "t-r1", REQUEST, model)
    assert (home / "threads" / "t-r1" / "user-data" / "workspace" / "stats.py").read_text() == FIXED
    [wrote] = rewrites(messages)
    assert wrote.tool_calls[0]["name"] == "write_file" and wrote.tool_calls[0]["args"]["path"] == f"{WS}/stats.py"
    result = next(m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == wrote.tool_calls[0]["id"])
    assert result.status != "error" and "Wrote" in result.text  # not refused: the page showed the file whole
    assert messages[-1].text == "Fixed: the test passes."
    page = model.calls[2]
    assert page.tools == [] and [type(m) for m in page.messages] == [SystemMessage, HumanMessage]
    assert page.kwargs["max_tokens"] == MAX_TOKENS
    text = page.messages[-1].text
    assert REQUEST in text and BUGGY in text  # the request and the file as it is
    assert "assert mean([2, 4, 6]) == 4" in text and "AssertionError" in text  # the test and how it failed


async def test_a_page_that_replies_with_the_file_unfenced_is_written_too(home: Path) -> None:
    model = ScriptedChatModel(
        responses=[
            call("bash", command="python3 test_stats.py"),
            SHOWN,
            FIXED,  # the clean page: the file itself, no fence
            call("bash", command="python3 test_stats.py"),
            "Fixed: the test passes.",
        ]
    )
    messages = await run(home, "t-r7", REQUEST, model)
    assert len(rewrites(messages)) == 1
    assert (home / "threads" / "t-r7" / "user-data" / "workspace" / "stats.py").read_text() == FIXED


def test_an_unfenced_reply_is_a_file_only_when_it_holds_statements() -> None:
    from herdsman.middleware.clean_page import statements_in

    assert statements_in(FIXED) and statements_in("import os\nprint(os.getcwd())")
    assert not statements_in("Done") and not statements_in("The test passes now.") and not statements_in("x + 1")


async def test_a_chinese_script_that_prints_nothing_is_rewritten(home: Path) -> None:
    request = f"创建命令行工具 {WS}/add.py：python3 add.py 2 3 4 输出这些数的和（这里是 9）。"
    program = "import sys\nprint(sum(int(a) for a in sys.argv[1:]))\n"
    model = ScriptedChatModel(
        responses=[
            call("write_file", path=f"{WS}/add.py", content="def add(a, b, c):\n    return a + b + c\n"),
            call("bash", command="python3 add.py 2 3 4"),
            "命令没有输出。",
            f"```\n{program}```",  # fenced without a language, as the 1.5B model does
            call("bash", command="python3 add.py 2 3 4"),
            "输出 9。",
        ]
    )
    messages = await run(home, "t-r2", request, model)
    assert len(rewrites(messages)) == 1 and messages[-1].text == "输出 9。"
    assert (home / "threads" / "t-r2" / "user-data" / "workspace" / "add.py").read_text() == program
    assert request in model.calls[3].messages[-1].text


async def test_a_page_that_changes_nothing_or_does_not_parse_leaves_the_model_to_do_it(home: Path) -> None:
    for thread, page in (("t-r3", f"```python\n{BUGGY}```"), ("t-r4", "```python\ndef mean(values:\n```")):
        model = ScriptedChatModel(
            responses=[
                call("bash", command="python3 test_stats.py"),
                SHOWN,
                page,
                call("write_file", path=f"{WS}/stats.py", content=FIXED),
                "Fixed.",
                call("bash", command="python3 test_stats.py"),
                "Fixed: the test passes.",
            ],
            on_exhausted="repeat_last",
        )
        messages = await run(home, thread, REQUEST, model)
        assert rewrites(messages) == []
        assert model.calls[3].tools  # the model itself was asked, with its tools


async def test_off_means_no_page(home: Path) -> None:
    model = ScriptedChatModel(
        responses=[call("bash", command="python3 test_stats.py"), SHOWN, call("read_file", path=f"{WS}/stats.py")]
        + [call("write_file", path=f"{WS}/stats.py", content=FIXED), "Fixed."],
        on_exhausted="repeat_last",
    )
    messages = await run(home, "t-r5", REQUEST, model, mode="off")
    assert rewrites(messages) == [] and all(call.tools for call in model.calls)


async def test_a_missing_script_is_written_from_a_page_not_made_by_a_program(home: Path) -> None:
    """A script the request asks for that does not exist is the file rewrite's, even with task
    programs on: a program that writes a program hard-codes the request's example."""
    request = f"创建命令行工具 {WS}/add.py：python3 add.py 2 3 4 输出这些数的和（这里是 9）。"
    program = "import sys\nprint(sum(int(a) for a in sys.argv[1:]))\n"
    model = ScriptedChatModel(
        responses=[
            call("bash", command="python3 add.py 2 3 4"),
            "文件不存在。",
            f"```\n{program}```",
            call("bash", command="python3 add.py 2 3 4"),
            "输出 9。",
        ]
    )
    lead = {"file_rewrites": "auto", "task_programs": "auto", "verify_rounds": 2}
    messages = await small_model_run(home, "t-r6", request, model, {}, lead)
    [wrote] = rewrites(messages)
    assert wrote.tool_calls[0]["name"] == "write_file"
    assert (home / "threads" / "t-r6" / "user-data" / "workspace" / "add.py").read_text() == program
    assert f"The file {WS}/add.py does not exist yet." in model.calls[2].messages[-1].text
    assert messages[-1].text == "输出 9。"


APP = WS
RENAMED = {  # textkit.py was utils.py: run.py imports a.py and b.py, and both still import utils
    "run.py": "import a\nimport b\n\nprint(a.shout('hi'), b.whisper('HI'))\n",
    "a.py": "import utils\n\n\ndef shout(text):\n    return utils.upper(text)\n",
    "b.py": "from utils import lower\n\n\ndef whisper(text):\n    return lower(text)\n",
    "textkit.py": "def upper(text):\n    return text.upper()\n\n\ndef lower(text):\n    return text.lower()\n",
}
A_FIXED = "import textkit\n\n\ndef shout(text):\n    return textkit.upper(text)\n"
B_FIXED = "from textkit import lower\n\n\ndef whisper(text):\n    return lower(text)\n"


async def test_each_file_a_traceback_blames_is_rewritten_and_the_command_run_again(home: Path) -> None:
    """A module renamed, imported by two files: the model blames a missing package; the harness
    rewrites the file each traceback names (a.py, then b.py) on a clean page and runs the failed
    command again in the same call, so the next error shows at once. A Chinese request: the
    finding reads Python's words only."""
    request = f"我把 {APP} 里的 utils.py 改名为 textkit.py 了，现在运行不了。请修改其他文件的 import，让 python3 run.py 能正常运行。"
    model = ScriptedChatModel(
        responses=[
            call("bash", command=f"cd {APP} && python3 run.py"),
            "需要用 pip 安装 utils。",  # a traceback through a.py, answered with a guess
            f"```python\n{A_FIXED}```",  # the clean page for a.py
            "还是失败了。",  # the rerun failed in b.py
            f"```python\n{B_FIXED}```",  # the clean page for b.py
            "好了，python3 run.py 现在可以运行。",
        ]
    )
    messages = await page_run(home, "t-r8", request, model, RENAMED, "file_rewrites", "auto", value_answers="off")
    app = home / "threads" / "t-r8" / "user-data" / "workspace"
    assert (app / "a.py").read_text() == A_FIXED and (app / "b.py").read_text() == B_FIXED
    made = rewrites(messages)
    assert [m.additional_kwargs[REWRITE_KEY] for m in made] == [f"{APP}/a.py", f"{APP}/b.py"]
    assert all(m.tool_calls[0]["name"] == "bash" for m in made)
    results = [
        next(r for r in messages if isinstance(r, ToolMessage) and r.tool_call_id == m.tool_calls[0]["id"])
        for m in made
    ]
    assert "No module named 'utils'" in results[0].text and f"{APP}/b.py" in results[0].text  # the next file, at once
    assert "HI hi" in results[1].text and "Traceback" not in results[1].text  # the command works again
    assert "a.py" in model.calls[2].messages[-1].text and "No module named 'utils'" in model.calls[2].messages[-1].text
    assert messages[-1].text == "好了，python3 run.py 现在可以运行。"


async def test_an_error_raised_in_a_test_or_by_a_missing_input_names_no_file_to_rewrite(home: Path) -> None:
    """An AssertionError in a test is the tested code's fault, and a missing input file is no
    fault of the script that opens it: neither makes a page for that file."""
    from herdsman.middleware.completion.raised import script_raised

    def result(text: str) -> ToolMessage:
        return ToolMessage(content=text, tool_call_id="c1", name="bash")

    run = [AIMessage(content="", tool_calls=[{"name": "bash", "args": {"command": "python3 t.py"}, "id": "c1"}])]
    frame = 'Traceback (most recent call last):\n  File "/mnt/user-data/workspace/{}", line 3, in <module>\n{}\n[exit code 1]'
    assert script_raised(run, result(frame.format("test_stats.py", "AssertionError"))) is None
    assert (
        script_raised(run, result(frame.format("wc.py", "FileNotFoundError: [Errno 2] No such file or directory: 'x'")))
        is None
    )
    lib = 'Traceback (most recent call last):\n  File "/usr/lib/python3.11/json/__init__.py", line 3\nValueError: bad\n'
    assert script_raised(run, result(lib)) is None  # nobody's file to fix
    found = script_raised(run, result(frame.format("wc.py", "NameError: name 'cnt' is not defined")))
    assert found is not None and found.rule == "script.raises"
    assert found.evidence == {
        "path": "/mnt/user-data/workspace/wc.py",
        "error": "NameError: name 'cnt' is not defined",
        "command": "python3 t.py",
    }
