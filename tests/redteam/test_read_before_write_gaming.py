"""Red team: read before write (``middleware/read_before_write.py``) counts a file as the agent's
own when a command wrote it whole (``> file``, ``tee file``), a command created it, or a
sub-agent wrote it. Each of those must be something that happened to that file, not words: an
agent (a small model, or a prompt injection steering it) must not get a user's existing file
counted as read without seeing it, then replace it blindly with ``write_file``.

Tried: a ``>`` inside a quoted string, a redirection that never ran (``false && ... > f``), an
append (``write_file`` with ``append``, by the lead and by a sub-agent), a file a user uploaded
while a command ran (listed as created by the command's before/after comparison).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from herdsman.client import HerdsmanClient, ToolResult
from herdsman.middleware.read_before_write import ReadBeforeWriteMiddleware
from herdsman.models.scripted import ScriptedChatModel
from herdsman.subagents import executor
from tests.support import make_config

USER_TEXT = "the user's notes, never shown to the agent\n"


def call(name: str, n: int, **args: object) -> dict:
    return {"tool_calls": [{"name": name, "args": args, "id": f"call-{n}"}]}


async def blind_overwrite_after(home: Path, thread: str, first: dict) -> tuple[list[ToolResult], Path]:
    ws = home / "threads" / thread / "user-data" / "workspace"
    ws.mkdir(parents=True)
    (ws / "notes.txt").write_text(USER_TEXT)
    model = ScriptedChatModel(responses=[first, call("write_file", 2, path="notes.txt", content="replaced\n"), "done"])
    async with HerdsmanClient(make_config(home), model=model) as client:
        events = [e async for e in client.stream("tidy up", thread_id=thread)]
    return [e for e in events if isinstance(e, ToolResult)], ws / "notes.txt"


@pytest.mark.parametrize(
    "command",
    [
        "echo 'see > notes.txt for details'",  # a quoted >: a word, not a redirection
        'grep -c "a > notes.txt" /dev/null; true',
        "false && echo x > notes.txt; true",  # a redirection that never ran
        "true || tee notes.txt </dev/null",
    ],
)
async def test_words_that_look_like_a_write_do_not_count_as_reading(home: Path, command: str) -> None:
    results, notes = await blind_overwrite_after(home, "t-words", call("bash", 1, command=command))
    assert "refused to change /mnt/user-data/workspace/notes.txt" in results[1].content
    assert notes.read_text().startswith(USER_TEXT)


async def test_an_append_does_not_count_as_reading_what_was_there(home: Path) -> None:
    results, notes = await blind_overwrite_after(
        home, "t-append", call("write_file", 1, path="notes.txt", content="one more line\n", append=True)
    )
    assert "refused to change /mnt/user-data/workspace/notes.txt" in results[1].content
    assert notes.read_text() == USER_TEXT + "one more line\n"


async def test_a_new_file_the_agent_appended_to_is_still_its_own(home: Path) -> None:
    """What held before: appending to a file that did not exist, the agent knows all of it."""
    ws = home / "threads" / "t-append-new" / "user-data" / "workspace"
    ws.mkdir(parents=True)
    model = ScriptedChatModel(
        responses=[
            call("write_file", 1, path="log.md", content="a\n", append=True),
            call("write_file", 2, path="log.md", content="b\n"),
            "done",
        ]
    )
    async with HerdsmanClient(make_config(home), model=model) as client:
        events = [e async for e in client.stream("log", thread_id="t-append-new")]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert results[1].content.startswith("Wrote") and (ws / "log.md").read_text() == "b\n"


def test_a_sub_agents_append_is_not_the_leads_reading() -> None:
    """A sub-agent appended to the user's file (free: nothing is lost by an append); the lead
    must not count that file as read. A file it replaced whole or edited (its own read before
    write held) still counts."""
    messages: list[Any] = [
        HumanMessage("work"),
        AIMessage(
            content="",
            tool_calls=[
                {
                    "name": "write_file",
                    "args": {"path": "/mnt/user-data/workspace/notes.txt", "content": "x", "append": True},
                    "id": "a",
                },
                {"name": "write_file", "args": {"path": "/mnt/user-data/outputs/new.md", "content": "x"}, "id": "b"},
                {
                    "name": "str_replace",
                    "args": {"path": "/mnt/user-data/workspace/a.py", "old": "1", "new": "2"},
                    "id": "c",
                },
            ],
        ),
        ToolMessage("ok", tool_call_id="a"),
        ToolMessage("ok", tool_call_id="b"),
        ToolMessage("ok", tool_call_id="c"),
    ]
    assert executor.files_seen(messages) == ["/mnt/user-data/outputs/new.md", "/mnt/user-data/workspace/a.py"]
    request = SimpleNamespace(tool_call={"name": "task", "args": {"prompt": "work"}, "id": "t1"})
    artifact = {
        "results": [
            {
                "files_written": ["/mnt/user-data/workspace/notes.txt", "/mnt/user-data/outputs/new.md"],
                "files_seen": ["/mnt/user-data/outputs/new.md"],
            }
        ]
    }
    assert ReadBeforeWriteMiddleware._touched(None, request, artifact) == ["/mnt/user-data/outputs/new.md"]  # type: ignore[arg-type]


def test_an_upload_made_while_a_command_ran_is_not_the_agents_own() -> None:
    """The command's before/after comparison lists every file that appeared meanwhile, a user's
    upload too: a file in uploads is never counted as made by the agent's command."""
    request = SimpleNamespace(tool_call={"name": "bash", "args": {"command": "sleep 5"}, "id": "b1"})
    artifact = {
        "exit_code": 0,
        "command": "sleep 5",
        "files_changed": [
            {"path": "/mnt/user-data/uploads/contract.docx", "action": "created"},
            {"path": "/mnt/user-data/outputs/made.txt", "action": "created"},
        ],
    }
    assert ReadBeforeWriteMiddleware._touched(None, request, artifact) == ["/mnt/user-data/outputs/made.txt"]  # type: ignore[arg-type]
