"""File rewrites: a file the model could not fix is written whole on a clean page.

Asked to fix the bug in stats.py so that its test passes, the embedded 1.5B model showed the
right function in its answer, then wrote stats.py back with the old text, twice, each time after
a note that it was unchanged: the old text was in its context, read a moment before, and it
copied it. Asked to make add.py print the sum of its arguments, it wrote ``def add(a, b, c)``
and nothing that reads them; told that the command printed nothing, it answered that the command
printed nothing.

So when a note of the completion check says a file the request names is not right yet
(:data:`REWRITE_RULES`: not changed though the request asks to change it, written back unchanged,
changed in the reply's code only, a script that printed nothing, printed something else than the
request says, or does not parse; a file a traceback blames
(:mod:`~herdsman.middleware.completion.raised`: first, and once for each file it blames, at most
:data:`MAX_FILES`, written in one bash call that runs the failed command again); or a script it
asks for that is missing or empty: asked for a program that makes a missing add.py, the model
wrote one that writes an add.py printing the sum of the request's example numbers, 9, whatever
its arguments), the model is asked on a clean page instead
(:mod:`~herdsman.middleware.clean_page`: once per run) for the whole new text of that file: the
page holds the request, the file as it is now (at most :data:`MAX_FILE_CHARS`; a longer file is
left to edits), the beginnings of the other files the request names (a test, the data), what the
note found and the last command's output. The reply's first fenced block, when it differs from
the file (and parses, for Python), becomes the model's next step: a ``write_file`` call in its
name, marked (:data:`REWRITE_KEY`). The page showed the file whole, so it counts as read (read
before write). The completion check then sees a changed file as any other: a script changed and
not run is run, its output checked.

Hand-written: see :mod:`~herdsman.middleware.clean_page`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage

from herdsman.middleware.agent_profile import run_settings, tool_allowed
from herdsman.middleware.clean_page import (
    CleanPageMiddleware,
    Page,
    first_block,
    found_text,
    full_path,
    named_looks,
    note_findings,
    statements_in,
)
from herdsman.middleware.completion.raised import REWRITE_MARKER
from herdsman.middleware.completion.shown_code import harness_call
from herdsman.middleware.read_before_write import ReadState, current_fingerprint
from herdsman.sandbox.shell_words import python_heredoc
from herdsman.sandbox.tools import parse_error

REWRITE_KEY = "herdsman_file_rewrite"
"""``additional_kwargs`` key of the AI message whose call writes a file from a clean page (write_file,
or bash that also runs the failed command again): its value is that file's path."""
RAISED_RULE = "script.raises"
"""The check's rule that names the file a traceback blames: its page comes first, once per file."""
MAX_FILES = 3
"""Pages of one run for files a traceback blames (a change spanning files is made file by file)."""
MISSING_RULES = frozenset({"file.missing", "file.empty", "path.missing", "path.empty"})
"""The completion check's rules that say a file the request asks for is missing or empty: a page
writes it only when it is code (:data:`CODE_SUFFIXES`); other files are the task program's."""
CODE_SUFFIXES = (".py", ".sh", ".js")
REWRITE_RULES = MISSING_RULES | frozenset(
    {
        "file.change_not_made",
        "file.unchanged",
        "code.shown_not_written",
        "script.printed_nothing",
        "script.ignores_arguments",
        "script.output_differs",
        "script.does_not_parse",
        RAISED_RULE,
    }
)
"""The completion check's rules that say a file the request names is not right yet."""
PROMPT = (
    "You change files. Write the complete new text of the file named below so that the user's request is met, "
    "and keep what the request does not ask to change. Reply with the whole file in one ``` block and nothing else."
)
MAX_FILE_CHARS = 4000
"""A longer file is not rewritten whole on a page (a small model drops parts of it): edits remain."""
MAX_TOKENS = 1024
"""The rewritten file's length limit (about :data:`MAX_FILE_CHARS` characters of code)."""
WRITE_PROGRAM = """\
import pathlib
path = pathlib.Path({path})
path.write_text({content}, encoding='utf-8')
print('The harness wrote ' + str(path) + ' from a clean page; running the failed command again:')"""
"""Writes a blamed file (its path and text JSON-quoted: no line of it can end the heredoc)."""
OUTPUT_CHARS = 1000
"""The last command's output shown on the page (its end: where a traceback says what failed)."""


def target_of(finding: dict[str, Any]) -> str | None:
    """The file a finding is about: its ``path``, or the first of its ``paths``."""
    evidence = finding.get("evidence") or {}
    paths = evidence.get("paths") or []
    target = evidence.get("path") or (paths[0] if paths else None)
    return full_path(str(target)) if target else None


def last_output(run: Sequence[AnyMessage]) -> str | None:
    """The end of the run's last bash result (what the script or the test printed), or None."""
    result = next((m for m in reversed(run) if isinstance(m, ToolMessage) and m.name == "bash"), None)
    return result.text[-OUTPUT_CHARS:] if result is not None and result.text.strip() else None


class FileRewriteMiddleware(CleanPageMiddleware):
    """Write a file the model could not fix on a clean page (module docstring)."""

    state_schema = ReadState  # the page's file counts as read: the channel read before write keeps
    RULES = REWRITE_RULES
    KEY = REWRITE_KEY
    TOOL = "write_file"
    MAX_TOKENS = MAX_TOKENS

    def pick(self, findings: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
        """The file a traceback blames first (the other findings may name the request's entry
        script, which only imports it), else the first of :data:`REWRITE_RULES`."""
        return next((f for f in findings if f.get("rule") == RAISED_RULE), None) or super().pick(findings)

    def again(self, run: Sequence[AnyMessage], made: Sequence[AIMessage]) -> bool:
        """Once more when a traceback now blames a file no page of this run wrote (at most
        :data:`MAX_FILES` pages): a module renamed is imported by several files."""
        finding = self.pick(note_findings(run))
        if finding is None or finding.get("rule") != RAISED_RULE or len(made) >= MAX_FILES:
            return False
        return target_of(finding) not in {m.additional_kwargs[self.KEY] for m in made}

    def page(self, question: str, run: Sequence[AnyMessage], finding: dict[str, Any], sandbox: Any) -> Page | None:
        """The request, the file now, the other named files, the note's findings and the last
        command's output; None when the file cannot be read or is too long."""
        target = target_of(finding)
        if sandbox is None or target is None:
            return None
        missing = finding.get("rule") in MISSING_RULES
        if missing and not target.endswith(CODE_SUFFIXES):
            return None
        try:
            text = "" if missing else sandbox.read_text(target)
        except Exception:  # noqa: BLE001 - unreadable: nothing to rewrite
            return None
        if len(text) > MAX_FILE_CHARS:
            return None
        now = f"The file {target} does not exist yet." if missing else f"The file {target} now:\n```\n{text}\n```"
        parts = [f"Request: {question[:2000]}", now]
        parts += named_looks(question, sandbox, skip=[target])
        parts.append(f"What is wrong now:\n{found_text(run)}")
        output = last_output(run)
        if output:
            parts.append(f"The last command printed:\n{output}")
        parts.append(f"Write the whole new text of {target}.")
        seen = None if missing else current_fingerprint(sandbox, target)
        messages: list[AnyMessage] = [SystemMessage(PROMPT), HumanMessage("\n\n".join(parts))]
        then = (finding.get("evidence") or {}).get("command") if finding.get("rule") == RAISED_RULE else None
        return Page(messages, str(finding["rule"]), target, {target: seen} if seen else {}, text, then or None)

    def made(self, page: Page, reply: Any) -> AIMessage | None:
        """The write_file call made from the reply; for a file a traceback blamed, one bash call
        that writes it and runs the failed command again (its output shows the next error, or
        none, within the same round of the check)."""
        message = super().made(page, reply)
        if message is None:
            return None
        args = message.tool_calls[0]["args"]
        if page.then and tool_allowed(run_settings(), "bash"):
            program = WRITE_PROGRAM.format(
                path=json.dumps(args["path"], ensure_ascii=False),
                content=json.dumps(args["content"], ensure_ascii=False),
            )
            command = f"{python_heredoc(program, REWRITE_MARKER)}\n{page.then}"
            message = harness_call(page.rule, "bash", {"command": command})
        message.additional_kwargs[self.KEY] = args["path"]  # the file it writes, whatever the call (again() reads it)
        return message

    def call_args(self, page: Page, reply: str) -> dict[str, Any] | None:
        """The write_file call with the reply's first block (or, for a Python file, the whole
        reply when it is code), when it changes the file and, for code the sandbox can check, parses."""
        block = first_block(reply)
        if block is None and page.target is not None and page.target.endswith(".py") and statements_in(reply):
            block = reply  # the whole reply is the file, unfenced (as a program page's may be)
        if block is None or page.target is None or block.strip() == (page.before or "").strip():
            return None
        content = block.rstrip() + "\n"
        if parse_error(page.target, content) is not None:
            return None
        return {"path": page.target, "content": content}
