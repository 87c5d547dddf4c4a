"""An edit made in one file of the folder the request names and left undone in the others: the
completion check names the files that still hold the old word and gives the sed command that
makes the same change; the jail runs the model's commands for real."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from herdsman.middleware.completion.edits import changed_word, edit_not_everywhere, run_changes
from herdsman.middleware.completion.findings_text import render
from herdsman.models.scripted import ScriptedChatModel
from tests.support import small_model_run
from tests.support import tool_call as call

WS = "/mnt/user-data/workspace"


def edited(name: str, args: dict, output: str = "Replaced 1 occurrence(s)") -> list:
    return [
        AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"c{len(args)}{name}"}]),
        ToolMessage(output, tool_call_id=f"c{len(args)}{name}", name=name),
    ]


def test_the_word_an_edit_changed() -> None:
    assert changed_word('__version__ = "1.4.0"', '__version__ = "1.5.0"') == ("1.4.0", "1.5.0")
    assert changed_word("print(helpers.slugify(text))", "print(common.slugify(text))") == ("helpers", "common")
    assert changed_word("def total(xs):", "def sum_all(xs):") == ("total", "sum_all")
    # no single word of three characters or more: a passage, an operator, a one-letter name
    assert changed_word("return a * b", "return a + b") is None
    assert changed_word("for i in range(1, n):", "for i in range(1, n + 1):") is None
    assert changed_word("x = 1\ny = 2", "x = 1\ny = 3\nz = 4") is None


def test_a_word_left_in_other_files_of_the_named_folder_gets_the_sed_that_changes_it() -> None:
    request = f"把 {WS}/pkg 里所有提到 1.4.0 的地方都改成 1.5.0。"
    files = {
        f"{WS}/pkg/__init__.py": '__version__ = "1.5.0"\n',
        f"{WS}/pkg/setup.cfg": "[metadata]\nversion = 1.4.0\n",
        f"{WS}/pkg/README.md": "Herd 1.4.0 (not 11.4.0)\n",
        f"{WS}/pkg/notes.txt": "nothing here\n",
        f"{WS}/other/setup.cfg": "version = 1.4.0\n",
    }
    run = edited("str_replace", {"path": f"{WS}/pkg/__init__.py", "old": '"1.4.0"', "new": '"1.5.0"'})
    found = edit_not_everywhere(request, run, files, files.get)
    assert found is not None and found.rule == "edit.not_everywhere" and found.next_tools == ("bash",)
    assert found.evidence["files"] == [f"{WS}/pkg/setup.cfg", f"{WS}/pkg/README.md"]  # not the folder beside it
    command = f"sed -i 's/\\b1\\.4\\.0\\b/1.5.0/g' {WS}/pkg/setup.cfg {WS}/pkg/README.md"
    assert found.evidence["command"] == command
    assert render(found).startswith("You changed 1.4.0 to 1.5.0, but 1.4.0 is still in") and command in render(found)
    # the same from the model's own sed; nothing after a failed edit, a request naming the file, or no old word left
    sed = edited("bash", {"command": f"sed -i 's/1\\.4\\.0/1.5.0/' {WS}/pkg/__init__.py"}, "(no output)")
    assert run_changes(sed) == [("1.4.0", "1.5.0")]
    assert edit_not_everywhere(request, sed, files, files.get) is not None
    failed = edited("str_replace", run[0].tool_calls[0]["args"], "Error: old text not found")
    failed[1].status = "error"
    assert edit_not_everywhere(request, failed, files, files.get) is None
    assert edit_not_everywhere(f"Bump {WS}/pkg/__init__.py to 1.5.0", run, files, files.get) is None
    done = {k: v.replace("1.4.0", "1.5.0") for k, v in files.items()}
    assert edit_not_everywhere(request, run, done, done.get) is None


async def test_the_check_sends_the_sed_and_every_file_of_the_folder_is_changed(home: Path) -> None:
    thread = "t-everywhere"
    tool = home / "threads" / thread / "user-data" / "workspace" / "tool"
    tool.mkdir(parents=True)
    (tool / "common.py").write_text("def slugify(s):\n    return s.lower().replace(' ', '-')\n")
    (tool / "cli.py").write_text("import helpers\n\n\ndef run(text):\n    print(helpers.slugify(text))\n")
    (tool / "main.py").write_text("import cli\nimport helpers\n\ncli.run(helpers.slugify('Hello Herd'))\n")
    request = f"I renamed helpers.py to common.py in {WS}/tool, and now nothing imports. Update the imports in the other files."
    sed = f"sed -i 's/\\bhelpers\\b/common/g' {WS}/tool/cli.py {WS}/tool/main.py"
    model = ScriptedChatModel(
        responses=[
            call("read_file", path=f"{WS}/tool/main.py"),
            call("str_replace", path=f"{WS}/tool/main.py", old="import helpers\n", new="import common\n"),
            "Updated the imports.",
            call("bash", command=sed),
            "Updated the imports in cli.py and main.py.",
        ]
    )
    messages = await small_model_run(home, thread, request, model, {}, {"verify_rounds": 2})
    note = next(m for m in messages if isinstance(m, HumanMessage) and m.name == "harness")
    assert "You changed helpers to common, but helpers is still in" in note.text and sed in note.text, note.text
    # the request names the folder, and the run edits its files: common.py (the new name) is no file to change
    assert "common.py, but it was not changed" not in note.text
    assert "helpers" not in (tool / "cli.py").read_text() + (tool / "main.py").read_text()
    assert messages[-1].text == "Updated the imports in cli.py and main.py."
