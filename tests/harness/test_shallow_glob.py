"""A shell glob one folder short: ``chmod +x tools/*.sh`` left ``tools/ci/test.sh`` as it was. The
completion check names the files left and gives the ``find`` command that reaches them all; the
jail runs the model's commands for real."""

from __future__ import annotations

import os
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from herdsman.middleware.completion.findings_text import render
from herdsman.middleware.completion.globs import shallow_glob
from herdsman.models.scripted import ScriptedChatModel
from tests.support import small_model_run
from tests.support import tool_call as call

WS = "/mnt/user-data/workspace"
FILES = [f"{WS}/tools/build.sh", f"{WS}/tools/ci/test.sh", f"{WS}/tools/ci/deep/lint.sh", f"{WS}/tools/notes.txt"]


def ran(command: str, output: str = "(no output)") -> list:
    return [
        AIMessage("", tool_calls=[{"name": "bash", "args": {"command": command}, "id": "b"}]),
        ToolMessage(output, tool_call_id="b", name="bash"),
    ]


def test_a_glob_over_a_named_folder_that_left_files_below_it() -> None:
    request = f"把 {WS}/tools 下的所有 .sh 脚本都加上可执行权限，别的文件不用动。"
    found = shallow_glob(request, ran(f"chmod +x {WS}/tools/*.sh"), FILES)
    assert found is not None and found.rule == "glob.shallow" and found.next_tools == ("bash",)
    assert found.evidence["missed"] == [f"{WS}/tools/ci/test.sh", f"{WS}/tools/ci/deep/lint.sh"]
    assert found.evidence["fix"] == f"find {WS}/tools -name '*.sh' -exec chmod +x {{}} +"
    assert render(found).endswith(f"run:\nfind {WS}/tools -name '*.sh' -exec chmod +x {{}} +")
    # relative to the workspace (where bash runs), after a cd-less && chain, in English too
    english = f"Make every .sh file under {WS}/tools executable"
    relative = shallow_glob(english, ran("ls && chmod 755 tools/*.sh"), FILES)
    assert relative is not None and relative.evidence["fix"] == f"find {WS}/tools -name '*.sh' -exec chmod 755 {{}} +"
    # nothing that deletes is proposed for more files than the model chose
    assert shallow_glob(f"Remove the .sh files under {WS}/tools", ran("rm tools/*.sh"), FILES) is None


def test_no_finding_without_a_file_left_a_named_folder_or_a_command_that_worked() -> None:
    request = f"Make the .sh scripts in {WS}/tools executable."
    assert shallow_glob(request, ran(f"chmod +x {WS}/tools/*.sh"), FILES[:1]) is None  # nothing below
    assert shallow_glob("Make the scripts executable.", ran(f"chmod +x {WS}/tools/*.sh"), FILES) is None
    assert shallow_glob(request, ran(f"chmod +x {WS}/tools/*.sh", "chmod: cannot access\n[exit code 1]"), FILES) is None
    assert shallow_glob(request, ran(f"mv {WS}/tools/*.sh {WS}/tools/ci/"), FILES) is None  # not in place
    assert shallow_glob(request, ran(f"find {WS}/tools -name '*.sh' -exec chmod +x {{}} +"), FILES) is None
    assert shallow_glob(request, ran(f"chmod +x {WS}/tools/*/*.sh"), FILES) is None  # the model's own depth


async def test_the_check_sends_the_model_the_find_command_and_every_script_is_executable(home: Path) -> None:
    thread = "t-glob"
    tools = home / "threads" / thread / "user-data" / "workspace" / "tools"
    (tools / "ci").mkdir(parents=True)
    for name in ("build.sh", "ci/test.sh", "readme.txt"):
        (tools / name).write_text("echo hi\n")
    fix = f"find {WS}/tools -name '*.sh' -exec chmod +x {{}} +"
    model = ScriptedChatModel(
        responses=[call("bash", command=f"chmod +x {WS}/tools/*.sh"), "Done.", call("bash", command=fix), "完成了。"]
    )
    request = f"把 {WS}/tools 下的所有 .sh 脚本都加上可执行权限，别的文件不用动。"
    messages = await small_model_run(home, thread, request, model, {}, {"verify_rounds": 2})
    note = next(m for m in messages if isinstance(m, HumanMessage) and m.name == "harness")
    assert f"{WS}/tools/ci/test.sh" in note.text and fix in note.text
    assert os.access(tools / "build.sh", os.X_OK) and os.access(tools / "ci" / "test.sh", os.X_OK)
    assert not os.access(tools / "readme.txt", os.X_OK) and messages[-1].text == "完成了。"
