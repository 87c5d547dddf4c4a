"""A script of the user's that raised: the file the traceback blames, as a typed finding.

Told "I renamed helpers.py to common.py, update the imports so python3 main.py works", the
embedded 1.5B model ran main.py, saw ``ModuleNotFoundError: No module named 'helpers'`` raised in
cli.py, and answered "install helpers with pip"; told that no helpers.py is there, it changed
``import helpers`` into ``import title`` (a name from another file). A failed command's note
names the error line, but not which file must change, and a small model guesses the file, then
the change. The traceback says which: its last frame in the user's files is where the error was
raised (a frame of the standard library or of an installed package is nobody's to fix).

So when the last bash call failed with a Python traceback that passes through a file under
``/mnt/user-data`` and ends in an error of the code (a name, an attribute, an import, a type, a
value, an index or key, a syntax error: :data:`CODE_ERRORS`; not a missing input file, a refused
permission or a keyboard interrupt, which no edit of that file mends; not in a test file, whose
error may be the tested code's fault), the check adds a
``script.raises`` finding with that file as its ``path`` and the failed command. Its note asks to
fix the cause in that file, and the file rewrite page (:mod:`~herdsman.middleware.file_rewrite`)
writes it whole on a clean page, once per file and run, with the traceback, in one bash call that
also runs the failed command again: a change that spans files (a module renamed, a function's
arguments changed) is made file by file as each run shows the next, within one round of the
check each.
Python's own words, so any request language. Hand-written: a traceback's frames are two regular
expressions (``traceback`` parses only live exceptions, not their printed text).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import ToolMessage

from herdsman.middleware.completion.findings import Finding
from herdsman.middleware.completion.rules import called_command, user_frames

REWRITE_MARKER = "HERDSMAN_REWRITE"
"""Ends the heredoc of the harness's call that writes a blamed file and runs the command again."""

CODE_ERRORS = (
    "NameError",
    "AttributeError",
    "ImportError",
    "ModuleNotFoundError",
    "TypeError",
    "ValueError",
    "IndexError",
    "KeyError",
    "ZeroDivisionError",
    "UnboundLocalError",
    "SyntaxError",
    "IndentationError",
    "AssertionError",
    "RecursionError",
)
"""Errors an edit of the raising file can mend (a missing input file or a permission cannot; an
AssertionError is a test's verdict on other code, not a fault of the file it is raised in)."""
_TEST_FILE = re.compile(r"(?:^|/)(?:test_[^/]*|[^/]*_test)\.py$")
_ERROR = re.compile(r"^(\w+): (.*)$", re.MULTILINE)


def failed_command(run: Sequence[Any], last: ToolMessage) -> str:
    """The command whose failure ``last`` reports; for the harness's own write-and-rerun call
    (:data:`REWRITE_MARKER`), the command it ran again."""
    command = called_command(run, last)
    return command.rsplit(f"\n{REWRITE_MARKER}\n", 1)[-1].strip()


def script_raised(run: Sequence[Any], last: ToolMessage) -> Finding | None:
    """``script.raises`` when the failed bash result ``last`` (of ``run``) holds a Python traceback (or a
    syntax error's report) through a file under /mnt/user-data that ends in one of
    :data:`CODE_ERRORS`: the blamed file (the last such frame), the error line and the command
    that failed; else None."""
    if last.name != "bash":
        return None
    error = next((e for e in reversed(list(_ERROR.finditer(last.text))) if e.group(1) in CODE_ERRORS), None)
    if error is None:
        return None
    frames = user_frames(last.text[: error.start()])
    if not frames or _TEST_FILE.search(frames[-1]):  # raised in a test: the code it tests may be at fault
        return None
    evidence = {"path": frames[-1], "error": f"{error.group(1)}: {error.group(2).strip()[:200]}"}
    return Finding("script.raises", {**evidence, "command": failed_command(run, last)})
