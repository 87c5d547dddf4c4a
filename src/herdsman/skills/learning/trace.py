"""The steps of a run's last turn that worked: bash commands that exited 0 and did something
(changed files, wrote with ``>``, ran a script), and the files it wrote with ``write_file`` or
edited with ``str_replace`` (as they were when last run).

Read from the thread's messages only: an AI message's tool calls and the tool results that answer
them (``bash``'s artifact holds the exit code; without one, the result's text says it).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage

from herdsman.skills.activation import is_user_message

INSPECTING = frozenset(
    "ls cat head tail wc pwd echo printf file stat find tree less more which type du df whoami id env "
    "date true sleep nl od xxd hexdump".split()
)
"""Commands that only look: left out of a skill unless they write a file (``>``)."""
SCRIPT_SUFFIXES = {".py": "python3", ".sh": "bash"}
_CD = re.compile(r"^\s*cd\s+(/mnt/user-data/[^\s;&|]*)\s*&&\s*")
WORKSPACE = "/mnt/user-data/workspace"  # where a command runs when it does not say
_EXIT = re.compile(r"\[exit code (-?\d+)\]\s*$")


@dataclass
class Step:
    """One command that worked; ``script`` is the virtual path of the file it ran (written in
    this turn), ``source`` that file as it was when the command ran, ``script_args`` whether the
    command passed arguments to it."""

    command: str
    script: str | None = None
    source: str = ""
    script_args: bool = False


@dataclass
class RunTrace:
    """What a run's last turn asked and did: the request, the steps that worked in order, the
    files it wrote (virtual path -> last content) and how many calls failed."""

    request: str
    steps: list[Step] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    failed: int = 0


def _ok(result: ToolMessage | None) -> bool:
    """Whether a tool call's result says it worked."""
    if result is None or result.status == "error":
        return False
    artifact: Any = result.artifact
    if isinstance(artifact, dict) and "exit_code" in artifact:
        return artifact.get("exit_code") == 0 and not artifact.get("timed_out")
    match = _EXIT.search(result.text)
    return match is None or match.group(1) == "0"


def _changed_files(result: ToolMessage) -> bool | None:
    """Whether a bash command changed files (None: its artifact does not say)."""
    artifact: Any = result.artifact
    if isinstance(artifact, dict) and "files_changed" in artifact:
        return bool(artifact.get("files_changed"))
    return None


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command, comments=True)
    except ValueError:
        return command.split()


def ran_script(command: str, files: dict[str, str]) -> tuple[str | None, bool]:
    """The file of ``files`` that ``command`` runs (``python3 x.py``, ``bash x.sh``, ``./x.py``,
    relative to the workspace too), and whether it passes it arguments."""
    where = ""
    cd = _CD.match(command)
    if cd:
        where, command = cd.group(1).rstrip("/") + "/", command[cd.end() :]
    words = _words(command)
    if not words or any(w in ("|", "&&", ";", "||", ">", ">>", "<") for w in words):
        return None, False
    at = 1 if words[0] in ("python", "python3", "bash", "sh") else 0
    if at >= len(words):
        return None, False
    target = words[at].removeprefix("./")
    for path in files:
        if target == path or (not target.startswith("/") and path in (where + target, f"{WORKSPACE}/{target}")):
            return path, len(words) > at + 1
    return None, False


def _looks_only(command: str, result: ToolMessage) -> bool:
    """Whether a command only looked at things (listed, printed) and changed nothing."""
    if ">" in command:
        return False
    changed = _changed_files(result)
    if changed:
        return False
    words = _words(command)
    return not words or words[0] in INSPECTING


def _edit(content: str | None, args: dict[str, Any]) -> str | None:
    old, new = args.get("old_str"), args.get("new_str")
    if content is None or not isinstance(old, str) or not isinstance(new, str) or old not in content:
        return None
    return content.replace(old, new, 1)


def read_trace(messages: Sequence[AnyMessage]) -> RunTrace | None:
    """The :class:`RunTrace` of the last turn of ``messages``; None when there is no user message."""
    start = next((i for i in range(len(messages) - 1, -1, -1) if is_user_message(messages[i])), None)
    if start is None:
        return None
    turn = list(messages[start + 1 :])
    results = {m.tool_call_id: m for m in turn if isinstance(m, ToolMessage)}
    trace = RunTrace(request=messages[start].text.strip())
    for message in turn:
        if not isinstance(message, AIMessage):
            continue
        for call in message.tool_calls:
            result = results.get(call.get("id") or "")
            args = call.get("args") or {}
            if not _ok(result):
                trace.failed += 1
                continue
            assert result is not None
            name = call.get("name")
            path = args.get("path")
            if name == "write_file" and isinstance(path, str) and isinstance(args.get("content"), str):
                trace.files[path] = args["content"]
            elif name == "str_replace" and isinstance(path, str):
                edited = _edit(trace.files.get(path), args)
                if edited is not None:
                    trace.files[path] = edited
            elif name == "bash" and isinstance(args.get("command"), str):
                _add_command(trace, args["command"].strip(), result)
    return trace


def _add_command(trace: RunTrace, command: str, result: ToolMessage) -> None:
    """Note a command that worked: a script run (with the script as it is now), or work done; a
    command run again replaces its earlier run."""
    script, script_args = ran_script(command, trace.files)
    if script is None and _looks_only(command, result):
        return
    step = Step(command, script, trace.files[script] if script else "", script_args)
    trace.steps = [s for s in trace.steps if s.command != command] + [step]
