"""The completion check: when the model stops short, the harness says what is missing and the
agent continues (at most lead.verify_rounds times); finished work and plain answers pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from herdsman.client import HerdsmanClient
from herdsman.middleware.completion.findings import EDIT, Finding
from herdsman.middleware.completion.findings_text import render
from herdsman.models.scripted import ScriptedChatModel
from herdsman.turns.turn import named_files
from tests.support import make_config

CHECKED = {"lead": {"model_retries": 0, "verify_rounds": 2, "intent_rules": "on"}}


def call(name: str, n: int, **args: object) -> dict:
    return {"tool_calls": [{"name": name, "args": args, "id": f"call-{n}"}]}


def user_data(home: Path, thread: str) -> Path:
    return home / "threads" / thread / "user-data"


async def run(home: Path, thread: str, message: str, responses: list, **sections) -> tuple[ScriptedChatModel, dict]:
    config = make_config(home, **{**CHECKED, **sections})
    model = ScriptedChatModel(responses=responses)
    async with HerdsmanClient(config, model=model) as client:
        [e async for e in client.stream(message, thread_id=thread)]
        state = await client.agent.aget_state({"configurable": {"thread_id": thread}})
    return model, state.values


def harness_notes(model: ScriptedChatModel, call_index: int) -> list[str]:
    return [m.text for m in model.calls[call_index].messages if isinstance(m, HumanMessage) and m.name == "harness"]


async def test_printed_instead_of_saved_is_sent_back_and_then_saved(home: Path) -> None:
    content = json.dumps({"north": 10, "south": 5})
    model, state = await run(
        home,
        "t-cc1",
        "North sold 10, south 5. Save the totals as JSON to /mnt/user-data/outputs/totals.json",
        [
            f"Here is the JSON: {content}",  # stops without saving
            call("write_file", 1, path="/mnt/user-data/outputs/totals.json", content=content),
            "Saved /mnt/user-data/outputs/totals.json",
        ],
    )
    assert json.loads((user_data(home, "t-cc1") / "outputs" / "totals.json").read_text()) == {"north": 10, "south": 5}
    [note] = harness_notes(model, 1)
    assert note.startswith("[harness check] Not done yet") and "/mnt/user-data/outputs/totals.json" in note
    assert "does not exist yet" in note
    assert len(model.calls) == 3 and state["completion_checks"] == 1


@pytest.mark.parametrize(
    ("thread", "file", "request_text", "replies", "expected"),
    [
        pytest.param(
            "t-cc2",
            "notes.txt",
            "How many lines are in notes.txt?",
            [
                "I'm sorry, but I can't assist with that request.",
                call("bash", 1, command="wc -l notes.txt"),
                "3 lines.",
            ],
            ["You refused", "without using any tool"],
            id="refusal-without-looking",
        ),
        pytest.param(  # from the benchmark: asked how many TODOs, it listed the folder and showed a grep command
            "t-cc29",
            "notes.txt",
            "How many TODO comments are in the .py files?",
            [
                "I'll run this:\n```bash\ngrep -r TODO .\n```",
                call("bash", 2, command="grep -c TODO notes.txt || true"),
                "0 TODOs.",
            ],
            ["The question asks for a number, and your answer has none", "Run those commands with bash"],
            id="count-without-number",
        ),
        pytest.param(  # from the benchmark: asked to copy a file, the model called a "copy" tool as text
            "t-cc17",
            "report.md",
            "Copy report.md from the workspace to /mnt/user-data/outputs/report.md.",
            [
                '```json\n{"name": "copy", "arguments": {"source": "report.md", "destination": "/mnt/user-data/outputs/report.md"}}\n```',
                call("bash", 1, command="cp /mnt/user-data/workspace/report.md /mnt/user-data/outputs/report.md"),
                "Copied to /mnt/user-data/outputs/report.md.",
            ],
            ["There is no tool named copy", "bash runs any shell command"],
            id="unknown-tool",
        ),
    ],
)
async def test_what_a_reply_misses_is_named_and_the_next_round_passes(
    home: Path, thread: str, file: str, request_text: str, replies: list, expected: list[str]
) -> None:
    ws = user_data(home, thread) / "workspace"
    ws.mkdir(parents=True)
    (ws / file).write_text("a\nb\nc\n")
    model, _ = await run(home, thread, request_text, replies)
    [note] = harness_notes(model, 1)
    assert all(part in note for part in expected), note
    assert len(model.calls) == 3


@pytest.mark.parametrize(
    ("request_text", "bad", "fix", "good", "expected"),
    [
        pytest.param(
            "Draw a bar chart of profit per month.",
            "The bar chart is saved in /mnt/user-data/outputs/profit.png.",
            "printf 'png' > /mnt/user-data/outputs/profit.png",
            "The bar chart is saved in /mnt/user-data/outputs/profit.png.",  # the same answer passes once the file exists
            "mentions /mnt/user-data/outputs/profit.png, but there is no such file",
            id="claimed-file",
        ),
        pytest.param(  # from a transcript
            "Tell me the total amount and the number of rows of sales.csv",
            "The total amount is $<total_amount> and the number of rows is <number_of_rows>.",
            "echo 12.5",
            "The total amount is 12.5 and the number of rows is 3.",
            "placeholders (<total_amount>, <number_of_rows>)",
            id="placeholders",
        ),
    ],
)
async def test_an_answer_that_misses_is_sent_back_then_passes(
    home: Path, request_text: str, bad: str, fix: str, good: str, expected: str
) -> None:
    (user_data(home, "t-cc3") / "workspace").mkdir(parents=True)
    model, _ = await run(
        home, "t-cc3", request_text, [call("bash", 1, command="echo 3"), bad, call("bash", 2, command=fix), good]
    )
    [note] = harness_notes(model, 2)
    assert expected in note
    assert len(model.calls) == 4


async def test_rounds_are_bounded_and_the_run_ends(home: Path) -> None:
    model, state = await run(
        home,
        "t-cc4",
        "Write hello to greeting.txt",
        [
            "I cannot do that.",
            "I'm sorry, but I can't.",
            "Still no.",
        ],
    )
    assert len(model.calls) == 3 and state["completion_checks"] == 2
    assert state["messages"][-1].text == "Still no."


async def test_done_work_and_plain_answers_pass_untouched(home: Path) -> None:
    ws = user_data(home, "t-cc5") / "workspace"
    ws.mkdir(parents=True)
    (ws / "temp.log").write_text("x\n")
    model, _ = await run(
        home,
        "t-cc5",
        "Delete temp.log and save a note to done.md",
        [
            call("bash", 1, command="rm temp.log && echo ok > done.md"),
            "Deleted temp.log; wrote done.md.",
        ],
    )
    assert len(model.calls) == 2
    model, _ = await run(home, "t-cc6", "What is 2 + 2?", ["4"])
    assert len(model.calls) == 1
    model, _ = await run(home, "t-cc7", "Is there a file called foo.txt?", [call("ls", 1), "No, there is none."])
    assert len(model.calls) == 2


async def test_tool_call_written_as_text_and_a_failed_last_call(home: Path) -> None:
    model, _ = await run(
        home,
        "t-cc8",
        "Run the tests",
        [
            call("bash", 1, command="exit 3"),  # bash reports the exit code; not an error status
            call("read_file", 2, path="missing.py"),  # an error result
            'I will run: {"name": "bash", "arguments": {"command": "pytest"}}',
            "Done.",
        ],
    )
    [note] = harness_notes(model, 3)
    assert "tool call written as text" in note and "(read_file) failed" in note


async def test_verifier_model_judges_when_the_rules_pass(home: Path) -> None:
    scripted = "herdsman.models.scripted:ScriptedChatModel"
    models = [
        {"name": "main", "use": scripted, "responses": ["unused"]},
        {
            "name": "judge",
            "use": scripted,
            "responses": [
                {
                    "tool_calls": [
                        {
                            "name": "Verdict",
                            "args": {
                                "done": False,
                                "findings": [{"rule": "not_sent", "detail": "the summary was not sent to the user."}],
                            },
                        }
                    ]
                },
                {"tool_calls": [{"name": "Verdict", "args": {"done": True, "findings": []}}]},
            ],
        },
    ]
    model, state = await run(
        home,
        "t-cc9",
        "Summarize our plan in one line.",
        ["Plan.", "The plan: ship on Friday."],
        models=models,
        lead={"model_retries": 0, "verify_rounds": 2, "verifier_model": "judge", "model": "main"},
    )
    [note] = harness_notes(model, 1)
    assert note.startswith("[harness review]") and "the summary was not sent to the user" in note
    [message] = [m for m in state["messages"] if isinstance(m, HumanMessage) and m.name == "harness"]
    assert [f["rule"] for f in message.additional_kwargs["herdsman_findings"]] == ["verifier.not_sent"]
    assert "force_tools" not in message.additional_kwargs  # the judge's note leaves the next call free
    assert len(model.calls) == 2 and state["messages"][-1].text == "The plan: ship on Friday."


def test_the_file_to_change_is_the_one_named_after_the_verb() -> None:
    """From the benchmark: 'python3 test_stats.py fails ... Fix the bug in stats.py (not the
    test)': the note named both files, and the model edited the test."""
    from herdsman.middleware.completion.rules import change_targets

    request = "python3 test_stats.py fails in /mnt/user-data/workspace. Fix the bug in stats.py (not the test) so that it passes."
    assert change_targets(request, ["test_stats.py", "stats.py"]) == ["stats.py"]
    assert change_targets("In app.ini set port to 9090", ["app.ini"]) == ["app.ini"]  # none after the verb: all
    assert change_targets("Fix a.py and b.py", ["a.py", "b.py"]) == ["a.py", "b.py"]
    fix = "python3 /mnt/user-data/workspace/server.py fails with a KeyError. Fix server.py so it prints the port from config.json."
    assert change_targets(fix, ["server.py", "config.json"]) == ["server.py"]  # config.json is read from
    assert change_targets(fix, ["/mnt/user-data/workspace/server.py", "config.json"]) == [
        "/mnt/user-data/workspace/server.py"
    ]
    assert change_targets("Update a.txt using /mnt/user-data/workspace/b.txt", ["a.txt", "b.txt"]) == ["a.txt"]


def test_named_files_skip_examples() -> None:
    """From the benchmark: 'write its path relative to pkg (like a/b.py) to outputs/where.txt'
    made the check demand a file a/b.py."""
    assert named_files("Write its path relative to pkg (like a/b.py) to /mnt/user-data/outputs/where.txt.") == [
        "/mnt/user-data/outputs/where.txt"
    ]
    assert named_files("Name it e.g. notes.md, or such as: todo.txt; then fix app.py") == ["app.py"]


def test_named_files_ignore_urls_and_keep_paths() -> None:
    assert named_files("Fetch https://x.org/a.csv, save it as out/data.csv and /mnt/user-data/outputs/r.md") == [
        "out/data.csv",
        "/mnt/user-data/outputs/r.md",
    ]


async def test_a_number_no_tool_showed_is_sent_back(home: Path) -> None:
    """From a transcript: asked how many orders failed, the model ran a command and answered 111,
    a number no tool printed; it is sent back to compute it, and the printed value passes."""
    ws = user_data(home, "t-cc11") / "workspace"
    ws.mkdir(parents=True)
    (ws / "orders.json").write_text('[{"status": "failed"}, {"status": "ok"}, {"status": "failed"}]')
    count = "python3 -c \"import json; print(sum(o['status'] == 'failed' for o in json.load(open('orders.json'))))\""
    model, _ = await run(
        home,
        "t-cc11",
        "How many orders in orders.json have the status failed?",
        [
            call("bash", 1, command="head -c 100 orders.json"),
            "111 orders have the status failed.",
            call("bash", 2, command=count),
            "2 orders have the status failed.",
        ],
    )
    [note] = harness_notes(model, 2)
    assert "states 111, which no tool result shows" in note
    assert len(model.calls) == 4
    # read_file's line numbers are not the file's: counting by eye, the model answered a line number
    other = user_data(home, "t-cc12") / "workspace"
    other.mkdir(parents=True)
    (other / "list.json").write_text("\n".join(['{"status": "failed"}'] * 3))
    model, _ = await run(
        home,
        "t-cc12",
        "How many orders in list.json have the status failed?",
        [
            call("read_file", 1, path="list.json"),
            "2 orders have the status failed.",
            call("bash", 2, command="grep -c failed list.json"),
            "3 orders have the status failed.",
        ],
    )
    assert "states 2, which no tool result shows" in harness_notes(model, 2)[0]
    # from the benchmark: glob listed 7 files and said so; the model answered 1: the note quotes the count
    src = user_data(home, "t-cc13") / "workspace" / "src"
    (src / "sub").mkdir(parents=True)
    for name in ("a.py", "b.py", "sub/c.py"):
        (src / name).write_text("x = 1\n")
    model, _ = await run(
        home,
        "t-cc13",
        "How many .py files are in /mnt/user-data/workspace/src?",
        [
            call("glob", 1, pattern="**/*.py", path="/mnt/user-data/workspace/src"),
            "1",
            "3",
        ],
    )
    assert (
        "states 1, which no tool result shows. Your glob call said [3 matches]: if that counts what the request "
        "asks about, the number is 3; use it"
    ) in harness_notes(model, 2)[0]


async def test_after_reading_a_file_to_fix_the_next_call_must_edit_it(home: Path) -> None:
    """From a transcript: the model read greet.py, then wrote a tutorial; told the file is
    unchanged, its next call is forced to be str_replace (and a missing file, write_file)."""
    ws = user_data(home, "t-cc13") / "workspace"
    ws.mkdir(parents=True)
    (ws / "greet.py").write_text("print(nme)\n")
    model, _ = await run(
        home,
        "t-cc13",
        "Fix greet.py",
        [
            call("read_file", 1, path="greet.py"),
            "To fix the script, follow these steps: ...",
            call("str_replace", 2, path="greet.py", old="nme", new="'Ann'"),
            call("bash", 3, command="python3 greet.py"),
            "Fixed.",
        ],
    )
    assert model.calls[2].kwargs.get("tool_choice") == "str_replace"
    assert (ws / "greet.py").read_text() == "print('Ann')\n"
    model, _ = await run(
        home,
        "t-cc14",
        "Save hi to /mnt/user-data/outputs/hi.txt",
        [
            call("bash", 1, command="echo hi"),
            "hi",
            call("write_file", 2, path="/mnt/user-data/outputs/hi.txt", content="hi"),
            "Saved.",
        ],
    )
    assert model.calls[2].kwargs.get("tool_choice") == "write_file"


async def test_a_text_file_the_model_failed_to_write_another_way_forces_write_file(home: Path) -> None:
    """From the benchmark: asked for todo.txt, the model ran a python3 -c that died on a quoting
    error. It knows the content, not the mechanics: the next call is forced to write_file. A
    missing file the model never tried to write, beside another problem, leaves the choice open."""
    failing = "python3 -c \"open('/mnt/user-data/workspace/todo.txt', 'w').write('buy milk\n')\""
    model, _ = await run(
        home,
        "t-cc15",
        "Create /mnt/user-data/workspace/todo.txt with the line: buy milk",
        [
            call("bash", 1, command=failing),
            "Done, created /mnt/user-data/workspace/todo.txt.",
            call("write_file", 2, path="/mnt/user-data/workspace/todo.txt", content="buy milk\n"),
            "Created /mnt/user-data/workspace/todo.txt.",
        ],
    )
    [note] = harness_notes(model, 2)
    assert "SyntaxError" in note and "python3 - <<'EOF'" in note  # the way out of python3 -c quoting
    assert model.calls[2].kwargs.get("tool_choice") == "write_file"
    assert (user_data(home, "t-cc15") / "workspace" / "todo.txt").read_text() == "buy milk\n"
    model, _ = await run(
        home,
        "t-cc16",
        "Count the users and save the count to /mnt/user-data/outputs/n.txt",
        [
            call("bash", 1, command="exit 3"),
            "Done.",
            call("bash", 2, command="python3 -c 'print(1)' > /mnt/user-data/outputs/n.txt"),
            "Saved.",
        ],
    )
    assert model.calls[2].kwargs.get("tool_choice") == "any"


async def test_code_shown_instead_of_written_is_read_then_written(home: Path) -> None:
    """From the benchmark (fix greet.py): the model answered with the corrected script in a
    fence ("here is the corrected greet.py"), and after a forced read wrote the same prose again.
    The note says to write that code, and the next two calls are forced: read_file, then
    write_file. Code for a computation that nothing ran is sent to bash."""
    ws = user_data(home, "t-cc18") / "workspace"
    ws.mkdir(parents=True)
    (ws / "greet.py").write_text("print(nme)\n")
    model, _ = await run(
        home,
        "t-cc18",
        "greet.py crashes. Fix it so that python3 greet.py prints Ann",
        [
            "Here is the corrected greet.py:\n```python\nprint('Ann')\n```\nSave it and run it.",
            call("read_file", 1, path="greet.py"),
            call("write_file", 2, path="greet.py", content="print('Ann')\n"),
            "Fixed greet.py.",
            call("bash", 3, command="python3 greet.py"),
            "Fixed greet.py: it prints Ann.",
        ],
    )
    [note] = harness_notes(model, 1)
    assert "Your reply shows the new code, but greet.py is unchanged: write that code into it with write_file" in note
    # changed but not run: the act-observe loop asks for the run the request names
    assert (
        "You changed greet.py but have not run it since. Run it now (python3 greet.py)" in harness_notes(model, 4)[-1]
    )
    assert [c.kwargs.get("tool_choice") for c in model.calls] == [None, "read_file", "write_file", None, "bash", None]
    assert (ws / "greet.py").read_text() == "print('Ann')\n"
    model, _ = await run(
        home,
        "t-cc19",
        "Save the number of users to /mnt/user-data/outputs/users.txt",
        [
            "Run this:\n```python\nopen('/mnt/user-data/outputs/users.txt', 'w').write('3')\n```",
            call("bash", 1, command="python3 -c 'print(3)' > /mnt/user-data/outputs/users.txt"),
            "Saved /mnt/user-data/outputs/users.txt.",
        ],
    )
    [note] = harness_notes(model, 1)
    assert "Your reply shows code that nothing ran" in note and "python3 - <<'EOF'" in note
    assert model.calls[1].kwargs.get("tool_choice") == "bash"
    # from the benchmark: a shell command shown for a Python fix is not the file's new text
    from herdsman.middleware.completion.check import code_problem

    unchanged = [Finding("file.change_not_made", {"paths": ["wc.py"]}, ("read_file", "str_replace"), EDIT)]
    assert code_problem(unchanged, [("bash", "python3 wc.py FILE")]) is None
    rewrite = code_problem(unchanged, [("python", "print(1)")])
    assert rewrite.rule == "code.shown_not_written" and rewrite.next_tools == ("read_file", "write_file")
    assert render(rewrite).startswith("Your reply shows the new code, but wc.py is unchanged")


async def test_a_number_written_to_a_file_that_no_tool_showed_is_sent_back(home: Path) -> None:
    """From the benchmark: glob listed 7 paths (and said so), the model wrote 0 to count.txt."""
    ws = user_data(home, "t-cc21") / "workspace"
    (ws / "src").mkdir(parents=True)
    for name in ("a.py", "b.py"):
        (ws / "src" / name).write_text("")
    model, _ = await run(
        home,
        "t-cc21",
        "How many .py files are in src? Write just the number to /mnt/user-data/outputs/count.txt.",
        [
            call("glob", 1, pattern="**/*.py", path="src"),
            call("write_file", 2, path="/mnt/user-data/outputs/count.txt", content="0"),
            "Done.",
            call("write_file", 3, path="/mnt/user-data/outputs/count.txt", content="2"),
            "Wrote 2 to /mnt/user-data/outputs/count.txt.",
        ],
    )
    [note] = harness_notes(model, 3)
    assert "You wrote 0 to /mnt/user-data/outputs/count.txt, but no tool result shows that" in note
    assert (user_data(home, "t-cc21") / "outputs" / "count.txt").read_text() == "2"
    assert len(model.calls) == 5  # 2 is in the glob's count line: the answer passes


@pytest.mark.parametrize(
    ("thread", "files", "request_text", "first", "fixed", "expected", "absent"),
    [
        pytest.param(  # the failed run of the script: not read yet, so read it, then edit it
            "t-cc10",
            {"greet.py": "print(nme)\n"},
            "Fix greet.py so it prints the name",
            call("bash", 1, command="python3 greet.py"),  # exits 1
            ("greet.py", "print(nme)", "name = 'Ann'\nprint(name)", "python3 greet.py"),
            ["asks to change greet.py, but it was not changed", "(bash) failed", "exit code 1"],
            None,
            id="failed-run",
        ),
        pytest.param(  # from the benchmark: the model read the test; the file to fix (stats.py) it never read
            "t-cc22",
            {
                "stats.py": "def mean(v):\n    return sum(v)\n",
                "test_stats.py": "from stats import mean\nassert mean([2, 4]) == 3\n",
            },
            "python3 test_stats.py fails. Fix the bug in stats.py (not the test).",
            call("read_file", 1, path="test_stats.py"),
            ("stats.py", "sum(v)", "sum(v) / len(v)", "python3 test_stats.py"),
            ["asks to change stats.py, but"],
            "test_stats.py",
            id="read-the-test",
        ),
    ],
)
async def test_the_file_to_fix_is_read_then_edited(
    home: Path,
    thread: str,
    files: dict,
    request_text: str,
    first: dict,
    fixed: tuple,
    expected: list[str],
    absent: str | None,
) -> None:
    """Told the file to fix is unchanged, the model must read it (read before write refuses an
    unread file's edit), then edit it; after the edit and a clean run, the answer passes."""
    ws = user_data(home, thread) / "workspace"
    ws.mkdir(parents=True)
    for name, text in files.items():
        (ws / name).write_text(text)
    path, old, new, command = fixed
    model, _ = await run(
        home,
        thread,
        request_text,
        [
            first,
            "The script is at /mnt/user-data/workspace.",
            call("read_file", 2, path=path),
            call("str_replace", 3, path=path, old=old, new=new),
            call("bash", 4, command=command),
            "Fixed it.",
        ],
    )
    [note] = harness_notes(model, 2)
    assert all(part in note for part in expected), note
    assert absent is None or absent not in note
    assert [c.kwargs.get("tool_choice") for c in model.calls[2:]] == ["read_file", "str_replace", None, None]
    assert (ws / path).read_text() == files[path].replace(old, new)
    assert len(model.calls) == 6


@pytest.mark.parametrize(
    ("thread", "request_text", "command", "reply", "path", "expected", "absent"),
    [
        pytest.param(  # from the benchmark: asked to write primes.py, the model ran 'touch primes.py' and stopped
            "t-cc20",
            "Write a Python script /mnt/user-data/workspace/primes.py that prints 2",
            "touch /mnt/user-data/workspace/primes.py",
            "<tool_response>\n(no output)\n</tool_response>",
            "/mnt/user-data/workspace/primes.py",
            ["primes.py is empty", "imitates a tool result"],
            "placeholders",
            id="touched",
        ),
        pytest.param(  # from the benchmark: it answered book07.txt, then wrote an empty file and a sentence
            "t-cc23",
            "Which file mentions a falcon? Write just its file name to /mnt/user-data/outputs/answer.txt.",
            "echo book07.txt",
            "book07.txt",
            "/mnt/user-data/outputs/answer.txt",
            [
                "Your answer was the line below; if it is what belongs in /mnt/user-data/outputs/answer.txt, write just that line there with write_file:\nbook07.txt"
            ],
            None,
            id="value-to-copy",
        ),
        pytest.param(  # from the benchmark: given "[7 matches]" it answered 1; a number no tool showed is no value to copy
            "t-cc25",
            "How many files are there? Write just the number to /mnt/user-data/outputs/n.txt.",
            "echo '[7 matches]'",
            "1",
            "/mnt/user-data/outputs/n.txt",
            ["Your answer states 1, which no tool result shows"],
            "Your answer was",
            id="unshown-number",
        ),
        pytest.param(  # from the benchmark: asked for a JSON list of names, a sub-agent wrote []
            "t-cc27",
            "Create /mnt/user-data/outputs/team.json, a JSON list of the team's names.",
            "echo '[]' > /mnt/user-data/outputs/team.json",
            "Created it.",
            "/mnt/user-data/outputs/team.json",
            ["team.json is empty"],
            None,
            id="empty-json",
        ),
        pytest.param(  # from the benchmark: asked for a site in outputs/site, the model wrote a plan and said "Done."
            "t-cc28",
            "Make a one-page site for a bakery in /mnt/user-data/outputs/site.",
            "echo plan > site-plan.md",
            "Done.",
            "/mnt/user-data/outputs/site/index.html",
            ["files in /mnt/user-data/outputs/site, which has none yet"],
            None,
            id="empty-folder",
        ),
        pytest.param(  # from the benchmark: it printed the totals as JSON in its answer, then wrote {} twice
            "t-cc30",
            "Compute the totals per region and save them to /mnt/user-data/outputs/by_region.json.",
            "echo '{\"north\": 2.4999999999999996}'",
            'The totals are {"north": 2.5}.',
            "/mnt/user-data/outputs/by_region.json",
            ['write just that line there with write_file:\n{"north": 2.5}'],
            None,
            id="json-to-copy",
        ),
        pytest.param(  # from the benchmark: python3 printed the rows as a Python list; then it wrote [] twice
            "t-cc31",
            "Turn the uploaded CSV into JSON and save it to /mnt/user-data/outputs/contacts.json.",
            "python3 - <<'EOF'\nprint([{'name': 'Mia'}])\nEOF",
            "Saved /mnt/user-data/outputs/contacts.json.",
            "/mnt/user-data/outputs/contacts.json",
            [
                "Your last command printed its result but saved nothing to /mnt/user-data/outputs/contacts.json. Run it again "
                "with its output saved, like this:\npython3 - > /mnt/user-data/outputs/contacts.json <<'EOF'\n"
                "print([{'name': 'Mia'}])\nEOF"
            ],
            "Your answer was",
            id="printed-not-saved",
        ),
        pytest.param(  # a sentence is not a value to copy
            "t-cc24",
            "Summarize the notes and save it to /mnt/user-data/outputs/s.md.",
            "echo notes",
            "The notes are about cows.",
            "/mnt/user-data/outputs/s.md",
            ["s.md, which does not exist yet"],
            "Your answer was",
            id="sentence",
        ),
    ],
)
async def test_a_missing_or_empty_file_forces_write_file(
    home: Path,
    thread: str,
    request_text: str,
    command: str,
    reply: str,
    path: str,
    expected: list[str],
    absent: str | None,
) -> None:
    model, _ = await run(
        home,
        thread,
        request_text,
        [
            call("bash", 1, command=command),
            reply,
            call("write_file", 2, path=path, content="x\n"),
            "Wrote it.",
            "Wrote it.",  # "x" in a .json file does not parse: one more round
        ],
    )
    [note] = harness_notes(model, 2)
    assert all(part in note for part in expected), note
    assert absent is None or absent not in note
    assert "Your answer was" not in note or note.endswith(("\nbook07.txt", '\n{"north": 2.5}'))  # the value alone, last
    forced = "any" if "Your answer states" in note else "bash" if "Your last command printed" in note else "write_file"
    assert model.calls[2].kwargs.get("tool_choice") == forced


def test_numbers_written_without_evidence() -> None:
    """A file of nothing but numbers needs them shown by a tool (from the benchmark: told to run
    primes.py and save its output, the model wrote the primes itself, 1 among them); a long
    sequence the request describes is left alone."""
    from herdsman.middleware.completion.rules import guessed_numbers

    def wrote(content: str) -> list:
        return [
            AIMessage(
                "", tool_calls=[{"name": "write_file", "args": {"path": "p.txt", "content": content}, "id": "w1"}]
            ),
            ToolMessage("Wrote 20 bytes to p.txt", tool_call_id="w1", name="write_file"),
        ]

    assert guessed_numbers(wrote("1\n2\n3\n5\n7"), "Save the primes below 10 to p.txt") == [("p.txt", "1, 2, 3, 5, 7")]
    assert guessed_numbers(wrote("\n".join(map(str, range(1, 201)))), "Write the numbers 1 to 200 to p.txt") == []
    assert guessed_numbers(wrote("2, 3"), "Save 2 and 3 to p.txt") == []
    assert guessed_numbers(wrote("total: 5"), "Save the total to p.txt") == []  # not only numbers
    # a JSON document's numeric values are data too; its keys, strings and a long sequence are not
    sums = 'Save both sums to p.json as {"a": <sum>, "b": <sum>}'
    assert guessed_numbers(wrote('{"a": 899, "b": 1234}'), sums) == [("p.txt", "899, 1234")]
    summed = [
        AIMessage("", tool_calls=[{"name": "bash", "args": {"command": "python3 sum.py a.txt"}, "id": "s1"}]),
        ToolMessage('{"sum": 899}', tool_call_id="s1", name="bash"),
    ]
    assert guessed_numbers(summed + wrote('{"a": 899, "b": 1234}'), sums) == [("p.txt", "1234")]
    assert guessed_numbers(wrote('{"2024": "x", "n": "7 items", "ok": true}'), "Save it to p.json") == []
    assert guessed_numbers(wrote(json.dumps({"squares": [n * n for n in range(1, 51)]})), "Squares 1 to 50") == []
    assert guessed_numbers(wrote("[[[[1]]]]" * 1 + "x"), "Save it") == []  # not JSON
    echoed = [
        AIMessage(
            "",
            tool_calls=[{"name": "bash", "args": {"command": "echo 1 > /mnt/user-data/outputs/count.txt"}, "id": "b1"}],
        ),
        ToolMessage("(no output)", tool_call_id="b1", name="bash"),
    ]  # from the benchmark: given "[7 matches]", it wrote 1 with echo
    assert guessed_numbers(echoed, "How many .py files? Write the number to count.txt") == [
        ("/mnt/user-data/outputs/count.txt", "1")
    ]
    assert guessed_numbers(echoed, "Write 1 to count.txt") == []


async def test_a_file_written_back_unchanged_is_not_fixed(home: Path) -> None:
    """From the benchmark: the model read stats.py and wrote the same text back (once without its
    final newline); by size and mtime that was a change, by content it is not."""
    ws = user_data(home, "t-cc26") / "workspace"
    ws.mkdir(parents=True)
    (ws / "stats.py").write_text("def mean(v):\n    return sum(v)\n")
    model, _ = await run(
        home,
        "t-cc26",
        "Fix the bug in stats.py",
        [
            call("read_file", 1, path="stats.py"),
            call("write_file", 2, path="stats.py", content="def mean(v):\n    return sum(v)"),
            "Wrote 29 bytes.",
            call("str_replace", 3, path="stats.py", old="sum(v)", new="sum(v) / len(v)"),
            call("bash", 4, command="python3 -c 'import stats'"),
            "Fixed stats.py.",
        ],
    )
    assert "asks to change stats.py, but it was not changed" in harness_notes(model, 3)[0]
    assert len(model.calls) == 6


def test_a_rounded_number_counts_as_shown() -> None:
    """A tool printed 2050.6499999999996 and the answer said 2050.65: that is the tool's number."""
    from herdsman.middleware.completion.rules import is_shown

    shown = {"2050.6499999999996", "7", "1.5"}
    assert is_shown("2050.65", shown) and is_shown("2050.6", shown) and is_shown("7", shown)
    assert not is_shown("2050.66", shown) and not is_shown("8", shown) and not is_shown("1.50001", shown)


async def test_an_answer_after_a_search_that_found_nothing_is_sent_to_search_inside_the_files(home: Path) -> None:
    """From the benchmark: asked where parse_date is defined, the model ran find -name
    parse_date.py, got nothing and answered that it is defined nowhere; asked which file mentions
    a falcon, it grepped the folder without -r ("Is a directory"). Both are sent to the grep tool
    with the term and the folder, once."""
    ws = user_data(home, "t-cc40") / "workspace"
    (ws / "pkg" / "utils").mkdir(parents=True)
    (ws / "pkg" / "utils" / "dates.py").write_text("def parse_date(s):\n    return s\n")
    request = "In which file under /mnt/user-data/workspace/pkg is the function parse_date defined?"
    model, answer = await run(
        home,
        "t-cc40",
        request,
        [
            call("bash", 1, command="find /mnt/user-data/workspace/pkg -name parse_date.py"),
            "The function parse_date is not defined in any file.",
            call("grep", 2, pattern="parse_date", path="/mnt/user-data/workspace/pkg"),
            "utils/dates.py",
        ],
    )
    [note] = harness_notes(model, 2)
    assert "Your search (bash for 'parse_date.py') found nothing" in note
    assert "call grep with pattern '(def|class|function) parse_date' and path '/mnt/user-data/workspace/pkg'" in note
    assert model.calls[2].kwargs.get("tool_choice") == "grep"
    assert answer["messages"][-1].text == "utils/dates.py"

    from herdsman.middleware.completion.search import fruitless_search

    def ran(command: str, output: str) -> list:
        return [
            AIMessage("", tool_calls=[{"name": "bash", "args": {"command": command}, "id": "b"}]),
            ToolMessage(output, tool_call_id="b", name="bash"),
            AIMessage("No falcon found."),
        ]

    ask = "Which file in /mnt/user-data/workspace/library mentions a falcon?"
    directory = ran(
        "grep falcon /mnt/user-data/workspace/library | head -n 1",
        "grep: /mnt/user-data/workspace/library: Is a directory",
    )
    assert "pattern 'falcon' and path '/mnt/user-data/workspace/library'" in render(fruitless_search(ask, directory))
    assert fruitless_search(ask, ran("grep -rl falcon /mnt/user-data/workspace/library", "library/book07.txt")) is None
    assert fruitless_search("Say hello", directory) is None  # not a search request
    globbed = [
        AIMessage(
            "",
            tool_calls=[
                {
                    "name": "glob",
                    "args": {"pattern": "**/parse_date.py", "path": "/mnt/user-data/workspace/pkg"},
                    "id": "g",
                }
            ],
        ),
        ToolMessage(
            "no paths match '**/parse_date.py' under /mnt/user-data/workspace/pkg", tool_call_id="g", name="glob"
        ),
        AIMessage("It is not defined anywhere."),
    ]
    where = "In which file under /mnt/user-data/workspace/pkg is the function parse_date defined?"
    assert "pattern '(def|class|function) parse_date'" in render(fruitless_search(where, globbed))  # not '/parse_date'


def test_a_search_term_no_call_looked_for_is_searched_for() -> None:
    """From the benchmark: asked how many TODO comments the .py files hold, the model listed the
    .py files and answered with their number."""
    from herdsman.middleware.completion.search import unsearched_term

    ask = "How many TODO comments are there in the .py files under /mnt/user-data/workspace/project?"
    listed = [
        AIMessage("", tool_calls=[{"name": "glob", "args": {"pattern": "**/*.py"}, "id": "g"}]),
        ToolMessage("app.py\nutil.py\n[3 matches]", tool_call_id="g", name="glob"),
        AIMessage("3"),
    ]
    note = render(unsearched_term(ask, listed))
    assert note.startswith("The request is about 'TODO', but none of your tool calls looked for it")
    assert "call grep with pattern 'TODO' and path '/mnt/user-data/workspace/project' and glob '*.py'" in note
    grepped = [
        AIMessage("", tool_calls=[{"name": "grep", "args": {"pattern": "TODO", "glob": "*.py"}, "id": "g"}]),
        ToolMessage("[5 matching lines in 3 files]", tool_call_id="g", name="grep"),
        AIMessage("5"),
    ]
    assert unsearched_term(ask, grepped) is None
    assert unsearched_term("How many rows does the CSV file in /mnt/user-data/workspace have?", listed) is None
    assert unsearched_term("Write TODO to a.txt", listed) is None  # not a search


async def test_a_claim_of_work_done_without_a_write_is_sent_back(home: Path) -> None:
    """From the benchmark: asked to make a skill, the model ran mkdir and answered "The skill
    csv-summary has been created"."""
    model, result = await run(
        home,
        "t-cc41",
        "Make a skill named csv-summary that summarizes a CSV file.",
        [
            call("bash", 1, command="mkdir -p /mnt/user-data/outputs/skills/csv-summary"),
            "The skill `csv-summary` has been created.",
            call(
                "write_file",
                2,
                path="/mnt/user-data/outputs/skills/csv-summary/SKILL.md",
                content="---\nname: csv-summary\n---\n",
            ),
            "The skill `csv-summary` has been created.",
        ],
    )
    [note] = harness_notes(model, 2)
    assert (
        "Your answer says the work was done, but none of your tool calls wrote a file (mkdir makes an empty folder only)"
        in note
    )
    assert len(model.calls) == 4  # after the write, the same answer stands

    from herdsman.middleware.completion.files import unbacked_claim

    def ran(command: str) -> list:
        return [
            AIMessage("", tool_calls=[{"name": "bash", "args": {"command": command}, "id": "b"}]),
            ToolMessage("", tool_call_id="b", name="bash"),
        ]

    assert unbacked_claim("I have saved the chart.", ran("python3 chart.py")) is None
    assert unbacked_claim("The list has been saved.", ran("sort a.txt > b.txt")) is None
    assert unbacked_claim("The file has 3 lines.", ran("wc -l a.txt")) is None  # no claim
    assert unbacked_claim("I have saved the chart.", ran("ls /mnt/user-data/outputs")) is not None


async def test_a_value_the_request_sets_that_the_file_lacks_is_sent_back(home: Path) -> None:
    """From the benchmark: "set port to 9090 and debug to false"; a sed for port = 8080 on a file
    that said port = 8000 changed nothing, the debug edit worked, and the model said both were set."""
    ws = user_data(home, "t-cc42") / "workspace"
    ws.mkdir(parents=True)
    (ws / "app.ini").write_text("[server]\nhost = 0.0.0.0\nport = 8000\ndebug = true\n")
    request = "In /mnt/user-data/workspace/app.ini set port to 9090 and debug to false; keep everything else as it is."
    model, _ = await run(
        home,
        "t-cc42",
        request,
        [
            call("bash", 1, command="sed -i 's/port = 8080/port = 9090/; s/debug = true/debug = false/' app.ini"),
            "The port is now 9090 and debug is false.",
            call("read_file", 2, path="/mnt/user-data/workspace/app.ini"),
            call("str_replace", 3, path="/mnt/user-data/workspace/app.ini", old="port = 8000", new="port = 9090"),
            "Done: port 9090, debug false.",
        ],
    )
    [note] = harness_notes(model, 2)
    assert "The request sets port to 9090, but /mnt/user-data/workspace/app.ini still says: port = 8000" in note
    assert [c.kwargs.get("tool_choice") for c in model.calls[2:4]] == ["read_file", "str_replace"]
    assert (ws / "app.ini").read_text() == "[server]\nhost = 0.0.0.0\nport = 9090\ndebug = false\n"
    assert len(model.calls) == 5  # then it is done

    from herdsman.middleware.completion.files import unset_value

    assert unset_value('Set "timeout" to 30 in config.json', "config.json", '{\n  "timeout": 10\n}') is not None
    assert unset_value("Update the version to 2.0.1 in setup.cfg", "setup.cfg", "version = 2.0.1\n") is None


def test_output_of_nothing_but_error_lines_is_a_failure_whatever_the_exit_code() -> None:
    """From the benchmark: ``find ... -exec rename`` without rename exited 0 printing "find:
    'rename': No such file or directory" three times; ``grep falcon folder | head`` exited 0 with
    "Is a directory". The model went on as if they had worked."""
    from herdsman.middleware.completion.rules import failed

    def bash(text: str) -> ToolMessage:
        return ToolMessage(text, tool_call_id="b", name="bash")

    assert failed(bash("find: ‘rename’: No such file or directory\nfind: ‘rename’: No such file or directory"))
    assert failed(bash("grep: /mnt/user-data/workspace/library: Is a directory"))
    assert not failed(bash("a.txt\ngrep: b: Is a directory"))  # something was found
    assert not failed(bash("(no output)"))
    assert failed(bash("done\n[exit code 2]"))


def test_tips_for_a_placeholder_run_as_a_file_and_for_rename() -> None:
    """From the benchmark: the model ran "python3 wc.py FILE" (FILE from the request) three times,
    and "find -exec rename" in a sandbox without rename; and the note after its edit told it to run
    the request's "python3 wc.py FILE" as written."""
    from herdsman.middleware.completion.rules import one_liner_tip, untested_change

    def ran(command: str, output: str) -> tuple[list, ToolMessage]:
        return (
            [AIMessage("", tool_calls=[{"name": "bash", "args": {"command": command}, "id": "b"}])],
            ToolMessage(output, tool_call_id="b", name="bash"),
        )

    def tip(run: list, result: ToolMessage) -> str:
        return render(
            Finding("command.failed_not_retried", {"tool": "bash", "detail": "x", "tip": one_liner_tip(run, result)})
        )

    missing = "FileNotFoundError: [Errno 2] No such file or directory: 'FILE'\n[exit code 1]"
    assert "FILE is a placeholder from the request, not a file" in tip(*ran("python3 wc.py FILE --lines", missing))
    assert "use mv in a loop" in tip(
        *ran("find . -name '*.txt' -exec rename 's/x/y/' {} \\;", "find: ‘rename’: No such file or directory")
    )
    assert one_liner_tip(*ran("python3 wc.py a.txt", "FileNotFoundError: 'a.txt'\n[exit code 1]")) is None
    not_found = "/bin/bash: line 1: write_file: command not found\n[exit code 127]"
    assert "write_file is one of your tools, not a shell command" in tip(*ran('write_file out.txt "hi"', not_found))
    columns = "error: no column 'total'; the columns are: date, region, amount\n[exit code 1]"
    assert "'total' is not one of them: use one of date, region, amount instead" in tip(
        *ran("python3 chart.py --y total", columns)
    )
    request = "wc.py should print the number of words in a file (python3 wc.py FILE). Fix that one bug."
    edited = [AIMessage("", tool_calls=[{"name": "write_file", "args": {"path": "wc.py", "content": "x"}, "id": "w"}])]
    [finding] = untested_change(request, ["wc.py"], edited, ["sample.txt"])
    assert finding.rule == "script.changed_not_run" and finding.next_tools == ("bash",)
    assert "Run it now (python3 wc.py FILE, with FILE a file that exists, such as sample.txt)" in render(finding)


def test_a_file_with_more_or_fewer_rows_than_the_range_asked_for() -> None:
    """From the benchmark: asked for a header and one row for each n from 1 to 50, the model typed
    49 rows into write_file."""
    from herdsman.middleware.completion.files import rows_short

    request = "Create /mnt/user-data/outputs/squares.csv with the header n,square and one row for each n from 1 to 50."
    rows = [f"{n},{n * n}" for n in range(1, 51)]
    note = render(rows_short(request, "squares.csv", "\n".join(["n,square", *rows[:49]])))
    assert note.startswith("The request wants one row per item from 1 to 50 (50 rows), but squares.csv has 50 lines.\n")
    assert "python3 - > squares.csv <<'EOF'" in note
    # from the second benchmark run: the loop printed the 50 rows, twice, never saved: the note gives the command
    loop = "python3 - <<'EOF'\nfor n in range(1, 51):\n    print(f'{n},{n**2}')\nEOF"
    printed = [
        AIMessage("", tool_calls=[{"name": "bash", "args": {"command": loop}, "id": "b"}]),
        ToolMessage("\n".join(rows), tool_call_id="b", name="bash"),
    ]
    saved = render(rows_short(request, "squares.csv", "\n".join(["n,square", *rows[:49]]), printed))
    assert saved.endswith(
        "save them like this:\npython3 - > squares.csv <<'EOF'\nprint('n,square')\n"
        "for n in range(1, 51):\n    print(f'{n},{n**2}')\nEOF"
    )
    assert rows_short(request, "squares.csv", "\n".join(["n,square", *rows])) is None
    numbers = "Write the numbers 1 to 200, one per line, to /mnt/user-data/outputs/numbers.txt."
    assert rows_short(numbers, "numbers.txt", "\n".join(map(str, range(1, 201)))) is None
    assert "has 199 lines" in render(rows_short(numbers, "numbers.txt", "\n".join(map(str, range(1, 200)))))
    assert rows_short("Write a poem to p.txt", "p.txt", "a\nb") is None


def test_lines_written_cut_short_are_sent_back_with_a_grep_that_saves_them_whole() -> None:
    """From the benchmark: asked to save the ERROR lines of app.log, the model grepped them, then
    wrote each without its timestamp."""
    from herdsman.middleware.completion.files import cut_lines

    log = [f"2025-05-01 10:0{i}:00 ERROR disk full id={i}" for i in range(3)]
    grep = {"name": "grep", "args": {"pattern": "ERROR", "path": "/mnt/user-data/workspace/app.log"}, "id": "g"}
    found = ToolMessage(
        "\n".join(f"/mnt/user-data/workspace/app.log:{i + 4}: {line}" for i, line in enumerate(log)),
        tool_call_id="g",
        name="grep",
    )

    def wrote(lines: list[str]) -> list:
        call = {
            "name": "write_file",
            "args": {"path": "/mnt/user-data/outputs/errors.txt", "content": "\n".join(lines)},
            "id": "w",
        }
        return [
            AIMessage("", tool_calls=[grep]),
            found,
            AIMessage("", tool_calls=[call]),
            ToolMessage("Wrote", tool_call_id="w"),
        ]

    note = render(cut_lines(wrote([line.split(" ", 2)[2] for line in log])))
    assert note.startswith(
        "The lines you wrote are cut short: 'ERROR disk full id=0' is part of the line '2025-05-01 10:00:00 ERROR"
    )
    assert note.endswith("grep ERROR /mnt/user-data/workspace/app.log > /mnt/user-data/outputs/errors.txt")
    assert cut_lines(wrote(log)) is None  # whole lines
    assert cut_lines(wrote(["a summary line"])) is None
    listed = [
        AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "l"}]),
        ToolMessage("/mnt/user-data/workspace/data/c.log  (50 bytes)", tool_call_id="l", name="ls"),
    ]
    path = {
        "name": "write_file",
        "args": {"path": "/mnt/user-data/outputs/x.txt", "content": "/mnt/user-data/workspace/data/c.log"},
        "id": "w",
    }
    assert cut_lines([*listed, AIMessage("", tool_calls=[path])]) is None  # a path taken from a listing is a value


async def test_a_sentence_where_just_a_name_was_asked_for_is_sent_back_with_the_name(home: Path) -> None:
    """From the benchmark: asked to write the largest file's name, the model wrote a sentence
    ("The largest file in ... is .../c.log.")."""
    sentence = "The notes are in /mnt/user-data/workspace/data/c.log."
    out = "/mnt/user-data/outputs/largest.txt"
    model, _ = await run(
        home,
        "t-cc43",
        f"Which file in /mnt/user-data/workspace/data holds the notes? Write its file name to {out}.",
        [
            call("write_file", 1, path=out, content=sentence),
            "Saved.",
            call("write_file", 2, path=out, content="c.log"),
            "c.log",
        ],
    )
    [note] = harness_notes(model, 2)
    assert f"The request asks for just the name in {out}, but it holds a sentence" in note
    assert note.endswith("If it is c.log, write just c.log there with write_file.")
    assert model.calls[2].kwargs.get("tool_choice") == "write_file"
    assert (user_data(home, "t-cc43") / "outputs" / "largest.txt").read_text() == "c.log"

    from herdsman.middleware.completion.files import not_just_value

    assert "If it is 7, write just 7" in render(
        not_just_value("Write just the number to c.txt", "c.txt", "There are 7 files.")
    )
    assert not_just_value("Write just the number to c.txt", "c.txt", "7") is None
    assert not_just_value("Write a summary to s.txt", "s.txt", "It is about cows.") is None
    relative = "Write its path relative to pkg (like a/b.py) to /mnt/user-data/outputs/where.txt."
    assert render(not_just_value(relative, "where.txt", "/mnt/user-data/workspace/pkg/utils/dates.py")).endswith(
        "If it is utils/dates.py, write just utils/dates.py there with write_file."
    )
    assert not_just_value(relative, "where.txt", "utils/dates.py") is None
    # a file name has no folder in it: /book07.txt (the model cut the grep's path at the folder) is not one
    named = "Which file in library mentions a falcon? Write just its file name to answer.txt."
    assert render(not_just_value(named, "answer.txt", "/book07.txt")).endswith(
        "holds a path: '/book07.txt' (a file name has no /). If it is book07.txt, write just book07.txt there with write_file."
    )
    assert not_just_value(named, "answer.txt", "book07.txt") is None
    assert not_just_value("Write just its path to answer.txt.", "answer.txt", "library/book07.txt") is None
    grepped = "pkg/main.py:1: from utils.dates import parse_date\npkg/utils/dates.py:3: def parse_date(s):"
    assert render(not_just_value("Write its path relative to pkg to where.txt.", "where.txt", grepped)).endswith(
        "but it holds 2 lines. Write just the path there."
    )


async def test_a_script_to_run_with_its_output_saved_is_given_the_command(home: Path) -> None:
    """From the benchmark: told to write primes.py, run it and save its output, the model wrote the
    script and then typed the primes into the output file itself (1 among them)."""
    script = "/mnt/user-data/workspace/primes.py"
    out = "/mnt/user-data/outputs/primes.txt"
    request = f"Write a Python script {script} that prints the primes below 10. Run it and save its output to {out}."
    model, _ = await run(
        home,
        "t-cc44",
        request,
        [
            call("write_file", 1, path=script, content="print(2)\nprint(3)\nprint(5)\nprint(7)\n"),
            "The script is written.",
            call("bash", 2, command=f"python3 {script} > {out}"),
            "Saved the primes.",
        ],
    )
    [note] = harness_notes(model, 2)
    assert (
        f"Run the script the request names with its output saved, instead of writing the output yourself: python3 {script} > {out}"
        in note
    )
    assert model.calls[2].kwargs.get("tool_choice") == "bash"
    assert (user_data(home, "t-cc44") / "outputs" / "primes.txt").read_text() == "2\n3\n5\n7\n"


async def test_paths_inside_shown_commands_are_not_claimed_files(home: Path) -> None:
    """From the benchmark: the model suggested "touch .../file1.txt" in a code block; the note told it
    to create file1.txt, and it did. A path in prose that does not exist is still sent back."""
    model, _ = await run(
        home,
        "t-cc45",
        "List the files in /mnt/user-data/workspace/notes",
        [
            call("ls", 1, path="/mnt/user-data/workspace"),
            "The folder is empty. Create some:\n```bash\ntouch /mnt/user-data/workspace/notes/file1.txt\n```",
        ],
    )
    assert len(model.calls) == 2  # nothing to send back: the answer claims no file
    model, _ = await run(
        home,
        "t-cc46",
        "List the files in /mnt/user-data/workspace/notes",
        [
            call("ls", 1, path="/mnt/user-data/workspace"),
            "Saved the list to /mnt/user-data/outputs/list.txt.",
            "Nothing was saved.",
        ],
    )
    assert "mentions /mnt/user-data/outputs/list.txt, but there is no such file" in harness_notes(model, 2)[0]


async def test_which_is_the_largest_is_sent_to_compare_with_a_command(home: Path) -> None:
    """From the benchmark: given three files with their sizes, the model named the one of 50 bytes
    as the largest. Asked which is the largest, an answer with no comparing command goes back once."""
    ws = user_data(home, "t-cc47") / "workspace" / "data"
    ws.mkdir(parents=True)
    for name, size in (("a.log", 10), ("b.log", 500), ("c.log", 50)):
        (ws / name).write_text("x" * size)
    model, answer = await run(
        home,
        "t-cc47",
        "Which file in /mnt/user-data/workspace/data is the largest?",
        [
            call("ls", 1, path="/mnt/user-data/workspace/data"),
            "c.log",
            call("bash", 2, command="ls -S /mnt/user-data/workspace/data | head -n 1"),
            "b.log",
        ],
    )
    [note] = harness_notes(model, 2)
    assert "The request asks which is the largest: find it with a command that compares" in note
    assert "ls -S /mnt/user-data/workspace/data | head -n 1" in note
    assert model.calls[2].kwargs.get("tool_choice") == "bash"
    assert answer["messages"][-1].text == "b.log"

    from herdsman.middleware.completion.rules import uncompared

    computed = [
        AIMessage(
            "", tool_calls=[{"name": "bash", "args": {"command": "python3 - <<'EOF'\nprint(max(v))\nEOF"}, "id": "b"}]
        )
    ]
    assert uncompared("Which city is the warmest in the uploaded file?", computed) is None
    assert uncompared("What is the total of the amount column?", []) is None


async def test_lines_the_grep_tool_found_are_saved_with_a_shell_grep(home: Path) -> None:
    """From the benchmark: asked to save the ERROR lines of a log, the model grepped them with the
    grep tool, wrote an empty file, then wrote the check's own note into it."""
    ws = user_data(home, "t-cc48") / "workspace"
    ws.mkdir(parents=True)
    (ws / "app.log").write_text("a ok\nb ERROR disk full\nc ok\nd ERROR disk full\n")
    out = "/mnt/user-data/outputs/errors.txt"
    model, _ = await run(
        home,
        "t-cc48",
        f"Save all lines containing ERROR from /mnt/user-data/workspace/app.log to {out}.",
        [
            call("grep", 1, pattern="ERROR", path="/mnt/user-data/workspace/app.log"),
            "Saved them.",
            call("bash", 2, command=f"grep ERROR /mnt/user-data/workspace/app.log > {out}"),
            "Saved the 2 lines.",
        ],
    )
    [note] = harness_notes(model, 2)
    assert f"Save them whole with bash: grep ERROR /mnt/user-data/workspace/app.log > {out}" in note
    assert model.calls[2].kwargs.get("tool_choice") == "bash"
    assert (
        user_data(home, "t-cc48") / "outputs" / "errors.txt"
    ).read_text() == "b ERROR disk full\nd ERROR disk full\n"


def test_a_list_asked_for_sorted_that_is_not_is_sent_back() -> None:
    """From the benchmark: asked for the names sorted alphabetically, a sub-agent typed them in
    the file's order."""
    from herdsman.middleware.completion.files import not_sorted

    request = "Create /mnt/user-data/outputs/team.json, a JSON list of the names in team.txt sorted alphabetically."
    note = render(not_sorted(request, "team.json", '["Zoe", "Adam", "Mira", "Karl", "Bea"]'))
    assert note.startswith("The request asks for it sorted, but team.json is not in order (Zoe, Adam, Mira, Karl...)")
    assert not_sorted(request, "team.json", '["Adam", "Bea", "karl", "Mira", "Zoe"]') is None  # case aside
    assert not_sorted(request, "team.txt", "Zoe\nMira\nBea") is None  # descending is an order too
    assert not_sorted("Create team.json with the names", "team.json", '["Zoe", "Adam"]') is None
    assert not_sorted(request, "team.json", '{"a": 1}') is None


def test_figures_in_a_written_report_that_no_tool_showed() -> None:
    """From the benchmark: with the report skill, the model wrote a sales report stating $123,456.78
    before anything had read the CSV."""
    from herdsman.middleware.completion.rules import made_up_figures

    def wrote(content: str) -> list:
        call = {
            "name": "write_file",
            "args": {"path": "/mnt/user-data/outputs/report.md", "content": content},
            "id": "w",
        }
        return [AIMessage("", tool_calls=[call]), ToolMessage("Wrote", tool_call_id="w", name="write_file")]

    report = "# Sales\nThe total is $123,456.78 over 100 rows (see section 2.1, 2025)."
    assert made_up_figures(wrote(report), "Write a report on sales.csv") == [
        ("/mnt/user-data/outputs/report.md", "123456.78")
    ]
    computed = [
        AIMessage("", tool_calls=[{"name": "bash", "args": {"command": "python3 x.py"}, "id": "b"}]),
        ToolMessage("7990.9299999999985\n30", tool_call_id="b", name="bash"),
    ]
    assert made_up_figures(computed + wrote("Total: 7,990.93 over 30 rows."), "Write a report") == []


def test_comma_separated_values_are_fields_not_thousands() -> None:
    """From the dev split: squares.csv typed as ``10,100`` (n and its square) was taken for the figure
    10100 that no tool showed; a figure with two decimals in a CSV is still checked."""
    from herdsman.middleware.completion.rules import comma_separated, made_up_figures

    def wrote(path: str, content: str) -> list:
        call = {"name": "write_file", "args": {"path": path, "content": content}, "id": "w"}
        return [AIMessage("", tool_calls=[call]), ToolMessage("Wrote", tool_call_id="w", name="write_file")]

    squares = "n,square\n" + "\n".join(f"{n},{n * n}" for n in range(1, 50))
    assert made_up_figures(wrote("/mnt/user-data/outputs/squares.csv", squares), "one row for each n") == []
    assert made_up_figures(wrote("/mnt/user-data/outputs/rows.txt", squares), "one row for each n") == []
    prices = "item,price\npen,3.14159\n"
    assert made_up_figures(wrote("/mnt/user-data/outputs/p.csv", prices), "prices") == [
        ("/mnt/user-data/outputs/p.csv", "3.14159")
    ]
    assert not comma_separated("report.md", "The total is $123,456.78.\nSee section 2.")


def test_a_count_of_words_or_lines_is_given_its_command() -> None:
    """From the benchmark: a sub-agent read the essay, answered 100 and wrote 100, then ran wc -l on
    its own output file."""
    from herdsman.middleware.completion.rules import count_command

    ask = (
        "Count the words in /mnt/user-data/workspace/essay.txt and save the number to /mnt/user-data/outputs/words.txt."
    )
    assert count_command(ask) == "wc -w < /mnt/user-data/workspace/essay.txt"
    assert count_command("How many lines does app.log have?") == "wc -l < app.log"
    assert count_command("How many .py files are there?") is None


def test_the_saving_command_is_the_models_own_with_the_redirect() -> None:
    """From the benchmark: told to add '> file' after 'python3 -', the model re-ran its command
    unchanged, twice. The note gives the command whole: redirect in, and JSON for a .json file."""
    from herdsman.middleware.completion.files import saving_command

    code = "python3 - <<'EOF'\nimport csv\nv = []\nfor row in csv.DictReader(open('a.csv')):\n    v.append(row)\nprint(v)\nEOF"
    saved = saving_command(code, "/mnt/user-data/outputs/c.json")
    assert saved.startswith("python3 - > /mnt/user-data/outputs/c.json <<'EOF'\nimport csv\n")
    assert saved.endswith("import json\nprint(json.dumps(v))\nEOF")
    assert saving_command(code, "/mnt/user-data/outputs/c.txt").endswith("print(v)\nEOF")
    assert saving_command("sort a.txt | uniq", "b.txt") == "sort a.txt | uniq > b.txt"


async def test_a_count_made_by_eye_is_sent_to_run_wc(home: Path) -> None:
    """From the second benchmark run: a sub-agent answered 100 words by eye and wrote 100 twice;
    the note gave wc -w, but the next call was left free and it chose write_file again."""
    ws = user_data(home, "t-cc49") / "workspace"
    ws.mkdir(parents=True)
    (ws / "essay.txt").write_text("the herd moves " * 5)
    model, answer = await run(
        home,
        "t-cc49",
        "Count the words in /mnt/user-data/workspace/essay.txt.",
        [
            call("read_file", 1, path="/mnt/user-data/workspace/essay.txt"),
            "100",
            call("bash", 2, command="wc -w < /mnt/user-data/workspace/essay.txt"),
            "15",
        ],
    )
    [note] = harness_notes(model, 2)
    assert "wc -w < /mnt/user-data/workspace/essay.txt" in note
    assert model.calls[2].kwargs.get("tool_choice") == "bash"
    assert answer["messages"][-1].text == "15"


async def test_renamed_files_with_both_extensions_are_sent_back_with_the_loop(home: Path) -> None:
    """From the benchmark: 'find -exec mv {} {}.md' made a.txt.md of a.txt; the model answered done."""
    notes = user_data(home, "t-cc50") / "workspace" / "notes"
    notes.mkdir(parents=True)
    for name in ("a", "b"):
        (notes / f"{name}.txt").write_text(name)
    folder = "/mnt/user-data/workspace/notes"
    fix = f'cd {folder} && for f in *.txt.md; do mv "$f" "${{f%.txt.md}}.md"; done'
    model, _ = await run(
        home,
        "t-cc50",
        f"Rename every .txt file in {folder} to .md.",
        [
            call("bash", 1, command=f"find {folder} -name '*.txt' -exec mv {{}} {{}}.md \\;"),
            "Renamed them.",
            call("bash", 2, command=fix),
            "Renamed them.",
        ],
    )
    [note] = harness_notes(model, 2)
    assert f"The files are now named like a.txt.md: the .txt must go. Fix the names with bash: {fix}" in note
    assert model.calls[2].kwargs.get("tool_choice") == "bash"
    assert sorted(p.name for p in notes.iterdir()) == ["a.md", "b.md"]


async def test_a_folder_where_the_request_names_a_file_is_not_the_file(home: Path) -> None:
    """``outputs/pal.py`` in the request is /mnt/user-data/outputs/pal.py; a folder made there
    (``mkdir -p outputs/pal.py``) is not the file: the check says so, and the file gets written."""
    model, state = await run(
        home,
        "t-folder",
        "Write a palindrome checker to outputs/pal.py",
        [
            call("bash", 1, command="mkdir -p outputs/pal.py"),
            "Done: outputs/pal.py is ready.",
            call("bash", 2, command="rmdir outputs/pal.py"),
            call("write_file", 3, path="outputs/pal.py", content="def is_pal(s):\n    return s == s[::-1]\n"),
            "Wrote /mnt/user-data/outputs/pal.py.",
        ],
    )
    [note] = harness_notes(model, 2)
    assert "/mnt/user-data/outputs/pal.py is a folder" in note
    pal = user_data(home, "t-folder") / "outputs" / "pal.py"
    assert pal.is_file() and "s[::-1]" in pal.read_text()
    assert not (user_data(home, "t-folder") / "workspace" / "outputs").exists()
    assert state["completion_checks"] == 1 and not state["completion_unresolved"]


def test_a_request_naming_outputs_names_the_outputs_folder() -> None:
    assert named_files("Save it as outputs/report.md and read uploads/data.csv") == [
        "/mnt/user-data/outputs/report.md",
        "/mnt/user-data/uploads/data.csv",
    ]


async def test_a_package_the_sandbox_lacks_gets_a_hint_to_do_without_it(home: Path) -> None:
    """The README's example run: the script imported a package not installed here, the run
    failed; the note says the package is missing and to use the standard library."""
    model, _ = await run(
        home,
        "t-module",
        "Write outputs/primes.py, a Python script that prints the first 10 primes, and run it",
        [
            call("write_file", 1, path="outputs/primes.py", content="import herdsman_no_such_package\nprint(2)\n"),
            call("bash", 2, command="python3 outputs/primes.py"),
            "Here are the primes.",
            "Done.",
            "Done.",
        ],
    )
    notes = harness_notes(model, 3)
    assert notes and "herdsman_no_such_package is not installed in this sandbox" in notes[0]
    assert "standard library" in notes[0]


def test_a_job_started_in_the_background_is_no_printed_result_to_save() -> None:
    """The harness's note on a background job is not the job's output: no hint proposes
    ``python3 ticker.py & > outputs/first_tick.txt`` (from a dev task); a computing command is still one."""
    from langchain_core.messages import AIMessage, ToolMessage

    from herdsman.middleware.completion.files import printed_not_saved

    def ran(args: dict, output: str) -> list:
        return [
            AIMessage("", tool_calls=[{"name": "bash", "args": args, "id": "c1"}]),
            ToolMessage(output, tool_call_id="c1", name="bash"),
        ]

    wanted = ["/mnt/user-data/outputs/first_tick.txt"]
    started = "Started in the background (job 1) and running."
    assert printed_not_saved(wanted, ran({"command": "python3 ticker.py", "background": True}, started)) is None
    assert printed_not_saved(wanted, ran({"command": "python3 ticker.py &"}, started)) is None
    found = printed_not_saved(wanted, ran({"command": "python3 -c 'print(1)'"}, "1"))
    assert found is not None and found.evidence["command"].endswith("> /mnt/user-data/outputs/first_tick.txt")


def test_a_module_of_the_users_own_that_is_not_there_gets_the_files_beside_it() -> None:
    """From the dev split: helpers.py renamed to common.py, main.py failed on cli.py's import of
    helpers, and the note said the package was not installed; the model proposed pip install. In a
    folder of several modules the tip names the Python files there instead; a script alone in its
    folder still gets the package tip."""
    from herdsman.middleware.completion.rules import local_module_tip, one_liner_tip

    tool = "/mnt/user-data/workspace/tool"
    trace = (
        f'Traceback (most recent call last):\n  File "{tool}/main.py", line 1, in <module>\n    import cli\n'
        f'  File "{tool}/cli.py", line 1, in <module>\n    import helpers\n'
        "ModuleNotFoundError: No module named 'helpers'\n[exit code 1]"
    )
    run = [
        AIMessage("", tool_calls=[{"name": "bash", "args": {"command": "python3 main.py"}, "id": "b"}]),
        ToolMessage(trace, tool_call_id="b", name="bash"),
    ]
    paths = [f"{tool}/main.py", f"{tool}/cli.py", f"{tool}/common.py", f"{tool}/data.txt", "/mnt/user-data/x.py"]
    tip = local_module_tip(one_liner_tip(run, run[1]), paths)
    assert tip == {
        "kind": "local_module",
        "name": "helpers",
        "file": f"{tool}/cli.py",
        "folder": tool,
        "siblings": "cli.py, common.py, main.py",
    }
    note = render(Finding("command.failed_not_retried", {"tool": "bash", "detail": "x", "tip": tip}))
    assert "there is no helpers.py beside it" in note and "common.py" in note and "not installed" not in note
    alone = local_module_tip(one_liner_tip(run, run[1]), [f"{tool}/cli.py"])
    assert alone == {"kind": "module", "name": "helpers"}


async def test_on_the_small_profile_the_harness_makes_the_search_a_note_proposes_after_one_that_found_nothing(
    home: Path,
) -> None:
    """With the harness running what a note proposes (the small profile), the grep the note gives
    after a search that found nothing is made for the model, and the model answers from its
    result (on dev a task program copied the note's pattern into a shell grep, whose basic regular
    expressions take | and ( literally, and found nothing again)."""
    from herdsman.middleware.completion.shown_code import RAN_SHOWN_CODE
    from tests.support import small_model_run
    from tests.support import tool_call as tc

    ws = user_data(home, "t-cc40s") / "workspace"
    (ws / "pkg" / "utils").mkdir(parents=True)
    (ws / "pkg" / "utils" / "dates.py").write_text("def parse_date(s):\n    return s\n")
    (ws / "pkg" / "main.py").write_text("from utils.dates import parse_date\n")
    request = "In which file under /mnt/user-data/workspace/pkg is the function parse_date defined?"
    model = ScriptedChatModel(
        responses=[
            tc("glob", pattern="**/parse_date.py", path="/mnt/user-data/workspace/pkg"),
            "It is not defined anywhere.",
            "In pkg/utils/dates.py.",
        ]
    )
    messages = await small_model_run(home, "t-cc40s", request, model, {}, {"verify_rounds": 2})
    harness = next(m for m in messages if isinstance(m, AIMessage) and m.additional_kwargs.get(RAN_SHOWN_CODE))
    assert harness.tool_calls[0]["name"] == "grep"
    assert harness.tool_calls[0]["args"]["pattern"] == "(def|class|function) parse_date"
    result = next(m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == harness.tool_calls[0]["id"])
    assert "utils/dates.py" in result.text and "main.py" not in result.text  # the definition, not its use
    note = next(m for m in messages if isinstance(m, HumanMessage) and m.name == "harness")
    assert "The harness searched inside every file under the folder for you" in note.text
    assert messages[-1].text == "In pkg/utils/dates.py."


def test_a_script_a_sub_agent_changed_and_nothing_ran_since_is_sent_to_be_run() -> None:
    """The lead delegated the fix; the sub-agent's result lists the file it wrote; the lead answered
    without running the request's command: script.changed_not_run, as for the lead's own edit."""
    from herdsman.middleware.completion.rules import untested_change

    path = "/mnt/user-data/workspace/hello.py"
    request = f"Ask a sub-agent to fix {path} so that python3 hello.py prints hello world."
    delegated = [
        AIMessage("", tool_calls=[{"name": "task", "args": {"prompt": "Fix hello.py"}, "id": "t1"}]),
        ToolMessage(f"[general-purpose] Fix: completed\nFiles written: {path}\nResult:\nDone.", tool_call_id="t1"),
        AIMessage("Fixed."),
    ]
    [found] = untested_change(request, [path], delegated)
    assert found.rule == "script.changed_not_run" and found.evidence["command"] == "python3 hello.py"
    ran = [
        *delegated[:2],
        AIMessage("", tool_calls=[{"name": "bash", "args": {"command": "python3 hello.py"}, "id": "b"}]),
    ]
    assert untested_change(request, [path], ran) == []  # run since
    other = [delegated[0], ToolMessage("[general-purpose] completed\nFiles written: /x/other.py\n", tool_call_id="t1")]
    assert untested_change(request, [path], other) == []  # the sub-agent wrote another file
