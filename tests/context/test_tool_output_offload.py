"""Long tool results: saved in the workspace, replaced by head, tail and path; short ones untouched."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import SystemMessage

from herdsman.client import HerdsmanClient, ToolResult
from herdsman.middleware.context.tool_output_offload import OFFLOAD_DIR, offload_path, preview
from herdsman.models.scripted import ScriptedChatModel
from tests.support import make_config

BIG = "".join(f"line {i:05d} " + "x" * 60 + "\n" for i in range(600))  # ~43 KB


def call(name: str, **args: object) -> dict:
    return {"tool_calls": [{"name": name, "args": args, "id": f"call-{name}-{len(args)}"}]}


def test_preview_keeps_head_and_tail_at_line_ends() -> None:
    text = "".join(f"row {i}\n" for i in range(1000))
    shown = preview(text, 100, 50, "see the file")
    assert shown.startswith("row 0\n") and shown.rstrip().endswith("row 999")
    assert "characters omitted. see the file" in shown
    assert len(shown) < 300
    assert offload_path("bash", "call/../x") == f"{OFFLOAD_DIR}/bash-call_.._x.txt"


async def test_long_result_is_saved_and_previewed(home: Path) -> None:
    config = make_config(home, context={"offload_tool_output_chars": 5000}, sandbox={"max_output_chars": 100_000})
    model = ScriptedChatModel(
        responses=[
            call("write_file", path="big.txt", content=BIG),
            call("read_file", path="big.txt"),
            call("ls"),
            "done",
        ]
    )
    async with HerdsmanClient(config, model=model) as client:
        events = [e async for e in client.stream("look at big.txt", thread_id="t-off")]
    results = [e for e in events if isinstance(e, ToolResult)]
    read = results[1].content
    assert len(read) < 4000
    assert "line 00000" in read and "line 00599" in read and "line 00300" not in read
    saved_virtual = f"{OFFLOAD_DIR}/read_file-call-read_file-1.txt"
    assert f"saved in {saved_virtual}" in read and "start_line" in read
    saved = home / "threads" / "t-off" / "user-data" / "workspace" / ".tool-outputs" / "read_file-call-read_file-1.txt"
    assert "line 00300" in saved.read_text()
    # the model saw the preview, not the 43 KB
    assert all(
        len(m.text) < 5000 for m in model.calls[2].messages if not isinstance(m, SystemMessage)
    )  # the prompt lists the skills
    # short results pass untouched
    assert results[2].content.startswith("/mnt/user-data/workspace/")


async def test_reading_a_saved_output_is_not_saved_again(home: Path) -> None:
    config = make_config(home, context={"offload_tool_output_chars": 5000}, sandbox={"max_output_chars": 100_000})
    saved = f"{OFFLOAD_DIR}/bash-old.txt"
    model = ScriptedChatModel(
        responses=[call("write_file", path=saved, content=BIG), call("read_file", path=saved), "done"]
    )
    async with HerdsmanClient(config, model=model) as client:
        events = [e async for e in client.stream("again", thread_id="t-reread")]
    read = [e for e in events if isinstance(e, ToolResult)][1].content
    assert "This is a saved tool output; read a smaller range" in read
    files = sorted(
        p.name for p in (home / "threads" / "t-reread" / "user-data" / "workspace" / ".tool-outputs").iterdir()
    )
    assert files == ["bash-old.txt"]


async def test_offload_off_keeps_results_whole(home: Path) -> None:
    config = make_config(home, context={"offload_tool_output_chars": None}, sandbox={"max_output_chars": 100_000})
    model = ScriptedChatModel(
        responses=[call("write_file", path="big.txt", content=BIG), call("read_file", path="big.txt"), "ok"]
    )
    async with HerdsmanClient(config, model=model) as client:
        events = [e async for e in client.stream("read", thread_id="t-whole")]
    assert "line 00300" in [e for e in events if isinstance(e, ToolResult)][1].content


async def test_offloaded_bash_result_keeps_its_artifact_for_the_trace(home: Path) -> None:
    from herdsman.runtime.tracing.trace import read_trace

    config = make_config(
        home,
        context={"offload_tool_output_chars": 5000},
        sandbox={"max_output_chars": 100_000, "allow_unisolated_bash": True},
    )
    command = "for i in $(seq 1 3000); do echo line $i; done; echo problem >&2; exit 5"
    model = ScriptedChatModel(responses=[call("bash", command=command), "done"])
    async with HerdsmanClient(config, model=model) as client:
        await client.run("run it", thread_id="t-art")
        messages = await client.messages("t-art")
        trace = await read_trace(client.agent, "t-art")
    result = [m for m in messages if m.type == "tool"][0]
    assert "saved in" in result.content and len(result.content) < 5000  # the model sees the preview
    assert result.artifact["exit_code"] == 5 and result.artifact["stderr"] == "problem\n"
    assert result.artifact["stdout"].startswith("line 1\n") and "line 3000" in result.artifact["stdout"]
    bash = [s for s in trace.steps if s.kind == "tool"][0]
    assert bash.bash is not None and bash.bash.exit_code == 5
    assert [f.path for f in bash.files_changed] == []  # the saved copy is written after the command
