"""A standard module a script uses without importing it: the harness adds the import.

A small model writing a command-line script often calls ``sys.argv`` or ``math.sqrt`` and
forgets the import; the run then fails with ``NameError: name 'sys' is not defined``. Told so,
it explains the missing import in words ("You need to import it at the beginning") and ends.
The ``script.missing_import`` finding carries a command the harness runs for the model (see
:data:`~herdsman.middleware.completion.shown_code.RUN_RULES`): a short Python program that adds
``import <name>`` to the script the traceback names, after its shebang, encoding comment,
docstring and ``from __future__`` imports (read with :mod:`ast`, so a ``__future__`` import stays
first), then the failed command run again. Only a name of Python's standard library
(``sys.stdlib_module_names``) in a file under ``/mnt/user-data``, and only for a bash command
that failed with it. Python's own words, so any request language. Hand-written: an insertion
point is a few lines of :mod:`ast`; no library adds one import to a file.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import ToolMessage

from herdsman.middleware.completion.findings import COMMAND, Finding
from herdsman.middleware.completion.rules import called_command, user_frames
from herdsman.sandbox.shell_words import python_heredoc

MARKER = "HERDSMAN_ADD_IMPORT"
_NAME_ERROR = re.compile(r"NameError: name '(\w+)' is not defined")

_PROGRAM = """\
import ast
path, name = {path}, {name}
text = open(path, encoding='utf-8').read()
tree = ast.parse(text)
at = 0
body = tree.body
first = body[0] if body else None
if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
    at = first.end_lineno
for node in body:
    if isinstance(node, ast.ImportFrom) and node.module == '__future__':
        at = node.end_lineno
lines = text.split('\\n')
if at == 0:
    while at < len(lines) and lines[at].startswith('#'):
        at += 1
lines.insert(at, 'import ' + name)
open(path, 'w', encoding='utf-8').write('\\n'.join(lines))
print('added import ' + name + ' to ' + path + ' (line ' + str(at + 1) + '); running the command again:')"""


def missing_import(run: Sequence[Any], last: ToolMessage) -> Finding | None:
    """``script.missing_import`` when the failed bash call ``last`` (of ``run``) died of a
    NameError for a standard module in a file under /mnt/user-data, with the command that adds
    the import and runs the failed command again; else None."""
    if last.name != "bash":
        return None
    error = _NAME_ERROR.search(last.text)
    frames = user_frames(last.text[: error.start()]) if error else []
    if error is None or not frames or error.group(1) not in sys.stdlib_module_names:
        return None
    command = called_command(run, last).strip()
    if not command or MARKER in command:
        return None
    name, path = error.group(1), frames[-1]
    program = _PROGRAM.format(path=json.dumps(path), name=json.dumps(name))
    fix = f"{python_heredoc(program, MARKER)}\n{command}"  # the command's own output says whether it worked
    return Finding("script.missing_import", {"name": name, "path": path, "command": fix}, ("bash",), COMMAND)
