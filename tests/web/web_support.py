"""Helpers for the web UI tests: the scripted lead that each browser scenario talks to, and a
gateway serving the built UI on a free port.

The lead reacts to the first word of the user's message:
``hello ...`` streams an answer slowly; ``story`` a much longer one (to stop midway); ``plan`` writes :data:`PLAN` with ``write_todos``; ``fanout`` starts three sub-agents at once;
``ask`` asks a clarifying question with choices; ``approve`` calls ``glob``, which needs approval;
``read NAME`` reads an upload; ``write NAME TEXT`` writes an output; ``files`` writes ``APP_CODE`` to
the workspace and ``SUMMARY`` to the outputs in one step; ``slow N`` takes N slow tool
steps (for reloading mid-run); ``fail`` (or ``失败``) makes the model call fail; ``code`` answers with a fenced
Python block (:data:`CODE_ANSWER`); ``shell`` runs :data:`SHELL_COMMANDS` with bash one after
another (the first writes ``outputs/shell.txt``, the second fails); ``sleep`` runs a bash command
that takes 3 s; ``draft`` writes :data:`DRAFT_TEXT` to ``outputs/draft.md``; ``textcall`` writes a tool call as
text (:data:`TEXT_CALL`); ``essay``
writes :data:`ESSAY_NOTES` to ``outputs/essay-notes.md``, then answers with the long :data:`STORY`. Anything else is echoed. Tool calls stream their arguments a few characters at a
time, as providers' models do.

A note of the completion check (a human message named ``harness``) is answered by echoing the
user's request again, except for ``save it to PATH`` (PATH under outputs, not named ``never...``):
then the lead writes PATH, as a model does when the check tells it the file is missing.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from herdsman.models.scripted import ScriptedChatModel
from herdsman.turns.turn import HARNESS_NAME
from tests.gateway.gateway_support import FOLDERS, RunningGateway, running_gateway
from tests.support import make_config

REPO = Path(__file__).resolve().parents[2]
WEB = REPO / "web"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")


def browser_missing() -> str | None:
    """Why the browser tests cannot run here (the UI not built, no node, no Chromium), or None."""
    if not (WEB / "dist" / "index.html").is_file():
        return "the web UI is not built: run `make web`"
    if not (WEB / "node_modules" / "playwright-core").is_dir():
        return "web/node_modules is missing: run `make web`"
    if not shutil.which("node"):
        return "node is not installed"
    if not Path(CHROMIUM).exists():
        return f"no Chromium at {CHROMIUM}: apt-get install chromium (scripts/install-system.sh does)"
    return None


GREETING = "Hello from Herdsman! These words arrive as streamed tokens, a few characters at a time, until the answer is complete."
PLAN = [
    {"content": "Read the sales file", "status": "completed"},
    {"content": "Sum the totals", "status": "in_progress"},
    {"content": "Write the report", "status": "pending"},
]
STORY = "Once upon a time " + "a long story went on and on, " * 40 + "and it ended."
CODE_ANSWER = 'Here is a greeting:\n\n```python\ndef greet(name):\n    return f"hi {name}"  # polite\n```\n'
WORKER_REPORT = "report ready: " + "the details, one by one, " * 10  # streams for about 3 s
MODELS = [
    {"name": "lead", "use": "herdsman.models.scripted:ScriptedChatModel"},
    {
        "name": "worker",
        "use": "herdsman.models.scripted:ScriptedChatModel",
        "responses": [WORKER_REPORT],
        "on_exhausted": "repeat_last",
        "latency": 2.0,
        "stream_chunk_chars": 8,
        "chunk_delay": 0.1,
    },
]


OUTPUTS = "/mnt/user-data/outputs/"
APP_CODE = 'def greet(name):\n    """Say hello."""\n    return f"hello {name}"\n'
SUMMARY = "# Summary\n\nThe app greets people.\n"


SHELL_COMMANDS = [
    "echo shell-made > /mnt/user-data/outputs/shell.txt && echo wrote shell.txt",
    "echo checking; ls /mnt/user-data/no-such-dir",
]


SLEEP_COMMAND = "sleep 3; echo woke up after a long command that took a while to write"

ESSAY_NOTES = "# Notes\n\nWritten before the answer: a stop must keep this file.\n"
"""What ``essay`` writes to outputs/essay-notes.md before it answers with :data:`STORY`."""

DRAFT_TEXT = "".join(
    f"Line {n}: the embedded model writes this file slowly, a few characters at a time.\n" for n in range(1, 9)
)
"""What ``draft`` writes to outputs/draft.md: long enough to be seen growing while it is written."""


TEXT_CALL = (
    "<tool_call>\n"
    + json.dumps({"name": "write_file", "arguments": {"path": "test_pal.py", "content": "assert pal('aba')\n" * 40}})
    + "\n</tool_call>"
)
"""What ``textcall`` answers: a tool call written as text (as a small model does), never run."""


def _write(path: str, content: str) -> dict[str, Any]:
    return {"name": "write_file", "args": {"path": path, "content": content}}


def _task(topic: str) -> dict[str, Any]:
    return {
        "name": "task",
        "args": {"description": f"Research {topic}", "prompt": f"research {topic}", "subagent_type": "general-purpose"},
    }


def web_reply(messages: list[BaseMessage]) -> Any:
    """What the scripted lead answers (see the module docstring)."""
    last = messages[-1]
    human = [m for m in messages if m.type == "human" and m.name != HARNESS_NAME][-1].text
    words = human.split()
    first = words[0] if words else ""
    if last.type == "human" and last.name == HARNESS_NAME:  # the completion check sent the answer back
        path = words[-1] if words else ""
        if first == "save" and path.startswith(OUTPUTS) and not path.removeprefix(OUTPUTS).startswith("never"):
            return {"tool_calls": [_write(path, "saved after the check\n")]}
        return f"echo: {human}"
    if last.type == "human":
        if first == "hello":
            return GREETING
        if first == "story":
            return STORY
        if first == "plan":
            return {"tool_calls": [{"name": "write_todos", "args": {"todos": PLAN}}]}
        if first == "fanout":
            return {"tool_calls": [_task(t) for t in ("alpha", "beta", "gamma")]}
        if first == "ask":
            return {
                "tool_calls": [
                    {"name": "ask_clarification", "args": {"question": "Which color?", "choices": ["red", "blue"]}}
                ]
            }
        if first == "approve":
            return {"tool_calls": [{"name": "glob", "args": {"pattern": "*", "path": "/mnt/user-data"}}]}
        if first == "read" and len(words) > 1:
            return {"tool_calls": [{"name": "read_file", "args": {"path": f"/mnt/user-data/uploads/{words[1]}"}}]}
        if first == "write" and len(words) > 2:
            return {
                "tool_calls": [
                    {
                        "name": "write_file",
                        "args": {
                            "path": f"/mnt/user-data/outputs/{words[1]}",
                            "content": " ".join(words[2:]).replace("|", "\n"),
                        },
                    }
                ]
            }
        if first == "files":
            return {
                "tool_calls": [
                    _write("/mnt/user-data/workspace/src/app.py", APP_CODE),
                    _write("/mnt/user-data/outputs/summary.md", SUMMARY),
                ]
            }
        if first == "slow":
            return {"tool_calls": [{"name": "ls", "args": {"path": FOLDERS[0]}}], "delay": 1.0}
        if first in ("fail", "失败"):
            return {"error": "the scripted model broke on purpose"}
        if first == "code":
            return CODE_ANSWER
        if first == "shell":
            return {"tool_calls": [{"name": "bash", "args": {"command": SHELL_COMMANDS[0]}}]}
        if first == "essay":
            return {"tool_calls": [_write("/mnt/user-data/outputs/essay-notes.md", ESSAY_NOTES)]}
        if first == "draft":
            return {"tool_calls": [_write("/mnt/user-data/outputs/draft.md", DRAFT_TEXT)]}
        if first == "sleep":
            return {"tool_calls": [{"name": "bash", "args": {"command": SLEEP_COMMAND}}]}
        if first == "textcall":
            return TEXT_CALL
        return f"echo: {human}"
    if last.type == "tool":
        if first == "slow":
            wanted = int(words[1]) if len(words) > 1 and words[1].isdigit() else 3
            done = sum(1 for m in messages if m.type == "tool")
            if done < wanted:
                return {"tool_calls": [{"name": "ls", "args": {"path": FOLDERS[done % len(FOLDERS)]}}], "delay": 1.0}
            return f"done after {done} slow steps"
        if first == "fanout":
            return "all three sub-agents reported"
        if first == "essay":
            return STORY
        if first == "shell":
            done = sum(1 for m in messages if m.type == "tool")
            if done < len(SHELL_COMMANDS):
                return {"tool_calls": [{"name": "bash", "args": {"command": SHELL_COMMANDS[done]}}]}
            return "ran both commands"
        return f"done: {last.text}"
    return "ok"


@contextmanager
def web_gateway(
    home: Path, api_keys: list[str] | None = None, model_options: dict[str, Any] | None = None, **sections: Any
) -> Iterator[RunningGateway]:
    """A gateway with the scripted lead, a slow scripted sub-agent model, and ``glob`` needing approval
    (and auth on, when ``api_keys`` are given); ``sections`` add config sections (e.g. ``memory``),
    ``model_options`` change the lead's scripted model (e.g. calls sent as drafts, then whole)."""
    config = make_config(
        home,
        models=MODELS,
        subagents={"model": "worker", "max_concurrent": 3},
        tools={"require_approval": ["glob"]},
        gateway={"api_keys": api_keys or []},
        **sections,
    )
    options = {"stream_chunk_chars": 6, "chunk_delay": 0.03, "stream_call_args": True, **(model_options or {})}
    model = ScriptedChatModel(respond=web_reply, **options)  # tokens arrive visibly
    with running_gateway(config, model=model) as served:
        yield served
