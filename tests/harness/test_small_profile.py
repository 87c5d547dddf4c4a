"""The small model profile: a short prompt with worked examples, only the tools the request
needs at each call, and a nudge to answer once a tool result holds the answer to a question."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import HumanMessage, SystemMessage

from herdsman.client import HerdsmanClient
from herdsman.middleware.answer_nudge import NUDGE, is_question
from herdsman.middleware.tool_selection import CORE, select_tools
from herdsman.models.scripted import ScriptedChatModel
from tests.support import make_config

SMALL = {"local_model": {"profile": "small"}, "context": {"hide_unavailable_tools": False}}


def call(name: str, n: int, **args: object) -> dict:
    return {"tool_calls": [{"name": name, "args": args, "id": f"call-{n}"}]}


async def run(home: Path, message: str, responses: list, **sections) -> ScriptedChatModel:
    model = ScriptedChatModel(responses=responses)
    async with HerdsmanClient(make_config(home, **{**SMALL, **sections}), model=model) as client:
        [e async for e in client.stream(message, thread_id="t-small")]
    return model


async def test_small_prompt_and_core_tools_for_a_file_question(home: Path) -> None:
    model = await run(home, "How many lines does notes.txt have?", [call("bash", 1, command="echo 3"), "3 lines."])
    system = model.calls[0].messages[0]
    assert isinstance(system, SystemMessage)
    assert "Examples of good work" in system.text and "<response_style>" not in system.text
    assert len(system.text) < 4500  # about 1,100 tokens, processed once per version (prompt cache)
    assert set(model.calls[0].tools) == set(CORE)
    nudges = [m for m in model.calls[1].messages if isinstance(m, HumanMessage) and m.text == NUDGE]
    assert len(nudges) == 1  # a question, and the tool result came back


async def test_delegation_and_web_tools_only_when_asked(home: Path) -> None:
    model = await run(home, "Use a sub-agent to summarize https://example.org/notes", ["ok"])
    assert {"task", "run_plan", "web_fetch", "web_search"} <= set(model.calls[0].tools)
    assert "ask_clarification" not in model.calls[0].tools


async def test_tasks_get_no_nudge_and_standard_profile_is_unchanged(home: Path) -> None:
    model = await run(
        home, "Create hello.txt with the text hi", [call("bash", 1, command="echo hi > hello.txt"), "Done."]
    )
    assert not any(isinstance(m, HumanMessage) and m.text == NUDGE for m in model.calls[1].messages)
    standard = await run(home, "How many lines does notes.txt have?", ["no idea"], local_model={"profile": "standard"})
    assert "<response_style>" in standard.calls[0].messages[0].text
    assert "task" in standard.calls[0].tools


async def test_the_first_call_on_a_file_request_must_call_a_tool(home: Path) -> None:
    """From the benchmark: asked to copy report.md, the model answered with a call to a "copy"
    tool that does not exist, written as text. The first call of a run about files is forced to
    call a tool (a request for sub-agents: the task tool); later calls, and requests that are not
    about files, choose freely."""
    model = await run(
        home,
        "Copy report.md from the workspace to /mnt/user-data/outputs/report.md.",
        [
            call("bash", 1, command="cp /mnt/user-data/workspace/report.md /mnt/user-data/outputs/ || true"),
            "Copied.",
        ],
    )
    assert [c.kwargs.get("tool_choice") for c in model.calls] == ["any", None]
    delegated = await run(home, "Use a sub-agent to count the words in /mnt/user-data/workspace/essay.txt", ["ok"])
    assert delegated.calls[0].kwargs.get("tool_choice") == "task"
    chat = await run(home, "What is the capital of France?", ["Paris."])
    assert chat.calls[0].kwargs.get("tool_choice") is None
    standard = await run(home, "Copy report.md to report2.md", ["Done."], local_model={"profile": "standard"})
    assert standard.calls[0].kwargs.get("tool_choice") is None


def test_selection_keeps_used_and_named_tools() -> None:
    names = {*CORE, "task", "run_plan", "web_fetch", "calc_add", "ask_clarification"}
    assert select_tools(names, "add 2 and 3 with calc_add", set()) == {*CORE, "calc_add"}
    assert select_tools(names, "continue the work from before", {"task"}) == {*CORE, "task"}
    assert "ask_clarification" in select_tools(names, "help", set())


def test_question_or_task() -> None:
    assert is_question("Which file mentions the word falcon?")
    assert is_question("how many rows are there")
    assert not is_question("Fix the bug in calc.py, why does it fail?")
    assert not is_question("Save the totals to out.json")


async def test_a_write_planned_before_a_result_waits_for_it(home: Path) -> None:
    """From a transcript: glob and write_file('<number of .py files>') in one reply; the write is
    dropped, the model sees the listing and writes the real count next."""
    both = {
        "tool_calls": [
            {"name": "glob", "args": {"pattern": "**/*.py"}, "id": "c1"},
            {
                "name": "write_file",
                "args": {"path": "/mnt/user-data/outputs/count.txt", "content": "<number of .py files>"},
                "id": "c2",
            },
        ]
    }
    reads = {
        "tool_calls": [
            {"name": "read_file", "args": {"path": "a.py"}, "id": "c3"},
            {"name": "ls", "args": {}, "id": "c4"},
        ]
    }
    model = await run(
        home,
        "Count the .py files and save the count to /mnt/user-data/outputs/count.txt",
        [
            both,
            reads,
            call("write_file", 5, path="/mnt/user-data/outputs/count.txt", content="0"),
            "Saved.",
        ],
    )
    second = model.calls[1].messages
    assert [m.tool_call_id for m in second if m.type == "tool"] == ["c1"]  # the write never ran
    third = model.calls[2].messages
    assert [m.tool_call_id for m in third if m.type == "tool"][-2:] == ["c3", "c4"]  # reads run together
    assert (home / "threads" / "t-small" / "user-data" / "outputs" / "count.txt").read_text() == "0"
