"""Running what was written, when the model would not: the code a reply showed, and the query a
note of the harness proposes.

A small model asked to do something often answers with the way to do it ("here is how: ```bash
wc -w essay.txt > outputs/words.txt```") instead of calling bash. Told that nothing ran its code,
it runs something else (``touch outputs/words.txt``), then shows the same code again; the run
ends with an empty file. The completion check's ``code.shown_not_run`` finding therefore carries
the code itself: when that finding decides the way out, the harness runs the shown blocks as
one bash call in the model's name (:func:`harness_call`), through the tools node like any call
(the tool gates, read before write, the sandbox, the file history all apply), and the model
reads the result and answers from it. What transfers here is mechanism, not phrasing: the code
is whatever the reply fenced as Python or shell, in any language of the conversation.

Likewise a Python file the run wrote that does not parse (``script.does_not_parse``) while the
reply shows one Python block that does: the harness writes that block into the file
(:func:`shown_file`) with a write_file call in the model's name.
And the one file the request asks for that is missing while the answer is a value
(``answer.offer``: the answer itself, or the one short line the last tool printed that the
answer states): the harness writes that value into it. On dev a script printed Cairo, the model
answered "The warmest city is Cairo." without the file, and a program written afterwards picked
the largest temperature as text, Oslo.

The same holds for the read-only commands the completion check itself proposes to find a value
(:data:`QUERY_RULES`: ``wc -w < essay.txt`` for a count read by eye, ``ls -S folder | head -n 1``
for a largest file picked by eye): forced to bash, a small model ran ``touch outputs/largest.txt``
instead. When such a finding decides the way out, the harness runs its command and the model
answers from what it prints. So too the commands the check proposes that save a result to the file
the request asks for (:data:`SAVE_RULES`): the shell grep that saves the lines the model's own grep
call found (``output.grep_not_saved``), the model's own last command run again with its output
sent to the file (``output.printed_not_saved``), the script the request names run with its output
saved (``script.output_typed``). Each writes that file only, with what the model's own call or the
script prints. On dev the notes proposed them and a program written instead saved all 40 lines of
a log, not its 6 ERROR lines, and wrote a script's source where its output belonged.

A small model also writes its own tools as shell commands (```bash write_file
/mnt/user-data/outputs/fetched.txt "hello from the herd"```): run in bash that is "command not
found". When the reply's shell blocks are nothing but such lines, the harness makes the first as
the tool call it names (:func:`shown_tool_call`: the words after the name fill the tool's
parameters in order, ``name=value`` words by name). On dev a server's page was fetched, and the
model showed ``write_file`` with the page's text three times instead of calling it.

It is not done when a human must approve bash or write_file calls (``tools.require_approval``: the
approval hook sees only the model's own calls), when the run may not use bash (a custom agent's or the active
skill's tool allow-list), once the run's tool calls reached ``tools.max_tool_calls_per_run`` (the
limit's hook runs before the check adds the call, so the completion check counts it itself), for
code already run unchanged in this run, for installs (no network in the sandbox: they only hang
until the timeout), for a template path (``/path/to/``) or a query whose placeholder was left in
(``ls -S <folder>``: bash reads a redirection), and for code the model copied from a tool result
(:func:`copied`): a block a fetched page or a read file holds is quoted, not written by the model,
and running it would run what the page's author wrote (prompt injection). A Python block holding the
heredoc's end marker is not run either (its lines after the marker would run as shell).
Hand-written: extracting fenced blocks is a regular expression
(:func:`~herdsman.middleware.completion.rules.fenced_code`); no library decides which shown code is
a command.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage

from herdsman.config.schema import switched_on
from herdsman.middleware.completion.rules import fenced_code
from herdsman.sandbox.shell_words import python_heredoc, simple_commands
from herdsman.sandbox.tools import parse_error

RAN_SHOWN_CODE = "herdsman_ran_shown_code"
"""``additional_kwargs`` key of the AI message whose bash call the harness made for the model
(its value: the rule of the finding that led to it)."""

QUERY_RULES = frozenset(
    {
        "compare.not_made",
        "count.not_computed",
        "number.unsupported",
        "file.numbers_unsupported",
        "server.not_used",
        "server.not_found",
        "skill.check_not_run",
    }
)
"""Rules whose evidence ``command`` is a read-only query the harness builds (wc, ls -S | head, a
curl of the server the run started, the active skill's own check of what it delivered)."""
RUN_RULES = frozenset({"command.not_run", "script.missing_import"})
"""Rules whose evidence ``command`` runs the command the request shows, on the script it names,
in that script's folder (what the user said must work), or the model's failed command again
once the import it lacked is added (:mod:`~herdsman.middleware.completion.imports`)."""
SAVE_RULES = frozenset({"output.grep_not_saved", "output.printed_not_saved", "script.output_typed"})
"""Rules whose evidence ``command`` saves a result to the file the request asks for: the lines the
model's own grep found, the output of the model's own last command run again, the output of the
script the request names."""

RERUN_RULES = frozenset({"skill.check_not_run"})
"""Rules whose command is run again though the run ran it before: the finding itself says the
file it checks changed since."""

MAX_CHARS = 8000
"""Longer shown code is not run for the model (a long program is a file to write, not a command)."""

_INSTALL = re.compile(
    r"^\s*(?:sudo\s+)?(?:pip3?|python3?\s+-m\s+pip|apt(?:-get)?|npm|yarn|pnpm|conda|brew)\s+(?:install|add)\b", re.M
)
_TEMPLATE_PATH = re.compile(r"/path/to/", re.I)
_PROMPT = re.compile(r"^\s*\$\s+(.*)$")
_EOF = "HERDSMAN_SHOWN_CODE"
_QUERY_PLACEHOLDER = re.compile(r"<[A-Za-z_][\w-]*>")
_SPACE = re.compile(r"\s+")
_GUTTER = re.compile(r"^ *\d+\t", re.M)


def runs_shown_code(mode: str, small: bool, approval: Sequence[str]) -> bool:
    """Whether the harness runs shown code (``lead.run_shown_code`` ``mode``: auto is on for a
    ``small`` profile model); never while bash or write_file calls wait for a human's approval
    (the approval hook sees the model's own calls only, and the harness makes calls of both)."""
    if {"bash", "write_file"} & set(approval):
        return False
    return switched_on(mode, small)


def _shell(code: str) -> str:
    """A shell block as commands: a block written as a session (``$ cmd`` lines and their
    output) keeps only the commands."""
    lines = code.rstrip().splitlines()
    prompted = [m.group(1) for line in lines if (m := _PROMPT.match(line))]
    return "\n".join(prompted) if prompted else "\n".join(lines)


def shown_command(reply: str, run: Sequence[Any]) -> str | None:
    """The bash command that runs the Python and shell blocks ``reply`` shows, in order, or None
    when there is nothing to run, it is too long, it installs packages or names a template path,
    or a bash call of this run already ran exactly that command."""
    parts: list[str] = []
    results = _results(run)
    for language, code in fenced_code(reply):
        if _INSTALL.search(code) or _TEMPLATE_PATH.search(code) or copied(code, results) or _EOF in code:
            return None
        if language.startswith("py"):
            parts.append(python_heredoc(code.rstrip(), _EOF))
        else:
            parts.append(_shell(code))
    command = "\n".join(p for p in parts if p.strip())
    if not command.strip() or len(command) > MAX_CHARS:
        return None
    return None if command.strip() in _ran(run) else command


def _results(run: Sequence[Any]) -> list[str]:
    """The texts of the run's tool results, whitespace collapsed (read_file's line numbers left out)."""
    return [
        _SPACE.sub(" ", _GUTTER.sub("", m.text) if m.name == "read_file" else m.text)
        for m in run
        if isinstance(m, ToolMessage)
    ]


def copied(code: str, results: Sequence[str]) -> bool:
    """Whether the block ``code`` is one a tool result of the run shows (whitespace aside): the
    model quoted it from a web page, a file or a command's output, it did not write it."""
    block = _SPACE.sub(" ", code).strip()
    return bool(block) and any(block in text for text in results)


def _ran(run: Sequence[Any]) -> set[str]:
    """The commands of the run's bash calls."""
    return {
        str((c.get("args") or {}).get("command", "")).strip()
        for m in run
        if isinstance(m, AIMessage)
        for c in m.tool_calls
        if c["name"] == "bash"
    }


def proposed_command(rule: str, evidence: Mapping[str, Any], run: Sequence[Any]) -> str | None:
    """The command a finding of :data:`QUERY_RULES` (a read-only query), :data:`SAVE_RULES` or
    :data:`RUN_RULES` proposes, unless the run already ran it (and its rule is not one of
    :data:`RERUN_RULES`)."""
    command = evidence.get("command") if rule in QUERY_RULES | SAVE_RULES | RUN_RULES else None
    if not isinstance(command, str) or not command.strip():
        return None
    if command.strip() in _ran(run) and rule not in RERUN_RULES:
        return None
    if _QUERY_PLACEHOLDER.search(command):  # the note's example for the model, not a command
        return None
    return command


TOOL_WORDS: dict[str, tuple[tuple[str, ...], int]] = {
    "write_file": (("path", "content"), 2),
    "read_file": (("path",), 1),
    "str_replace": (("path", "old", "new"), 3),
    "ls": (("path",), 0),
    "glob": (("pattern", "path"), 1),
    "grep": (("pattern", "path"), 1),
}
"""The file tools a shown line may call by name: their parameters in the order the words fill
them (the tools' own order, ``sandbox/tools.py``), and how many of the first are required."""


def tool_words(line: str) -> tuple[str, dict[str, str]] | None:
    """The tool call a shell line that names one of :data:`TOOL_WORDS` stands for (words past
    the last parameter join it: ``write_file a.txt hello world``), or None: another command,
    more than one simple command, too few words, or words that do not split."""
    commands = list(simple_commands(line))
    if len(commands) != 1 or not commands[0] or commands[0][0] not in TOOL_WORDS:
        return None
    name, words = commands[0][0], commands[0][1:]
    params, required = TOOL_WORDS[name]
    args: dict[str, str] = {}
    positional: list[str] = []
    for word in words:
        key, eq, value = word.partition("=")
        key = key.lstrip("-")
        if eq and key in params and key not in args:
            args[key] = value
        else:
            positional.append(word)
    free = [p for p in params if p not in args]
    if len(positional) > len(free) and free:
        positional = [*positional[: len(free) - 1], " ".join(positional[len(free) - 1 :])]
    if len(positional) > len(free):
        return None
    args.update(zip(free, positional, strict=False))
    if any(p not in args for p in params[:required]):
        return None
    return name, args


def shown_tool_call(reply: str, run: Sequence[Any]) -> tuple[str, dict[str, str]] | None:
    """The first tool call the reply's shell blocks write as a command, when every line of
    them is one (a block mixing real commands is run as shell, or not at all) and the model
    wrote them (not copied from a tool result, a page's or a file's words), else None."""
    blocks = [code for language, code in fenced_code(reply) if not language.startswith("py")]
    results = _results(run)
    if any(copied(code, results) or _TEMPLATE_PATH.search(code) for code in blocks):
        return None
    lines = [
        line.strip()
        for code in blocks
        for line in _shell(code).splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    calls = [tool_words(line) for line in lines]
    if not calls or any(c is None for c in calls):
        return None
    return calls[0]


def shown_file(reply: str, path: str, run: Sequence[Any]) -> str | None:
    """The code for the Python file ``path`` (one the run wrote that does not parse) when the reply
    shows exactly one Python block that does parse and that the model wrote (not copied from a
    tool result): a small model writes the request's sentence into ``topword.py``, then shows the
    right program in its answer and writes the sentence again."""
    blocks = [code for language, code in fenced_code(reply) if language.startswith("py")]
    if not path.endswith(".py") or len(blocks) != 1 or len(blocks[0]) > MAX_CHARS or copied(blocks[0], _results(run)):
        return None
    code = blocks[0].rstrip() + "\n"
    return code if parse_error(path, code) is None else None


def harness_call(rule: str, tool: str, args: Mapping[str, Any]) -> AIMessage:
    """The AI message whose ``tool`` call (bash with a command, write_file with a path and the
    shown code) the harness makes for the model, marked (:data:`RAN_SHOWN_CODE`: the finding's
    ``rule``) so a reader can tell it from the model's own calls."""
    return harness_calls(rule, [(tool, args)])


def harness_calls(rule: str, calls: Sequence[tuple[str, Mapping[str, Any]]]) -> AIMessage:
    """:func:`harness_call` with several calls in one message (the files a reply showed)."""
    return AIMessage(
        content="",
        tool_calls=[
            {"name": tool, "args": dict(args), "id": f"call_harness_{uuid.uuid4().hex[:16]}", "type": "tool_call"}
            for tool, args in calls
        ],
        additional_kwargs={RAN_SHOWN_CODE: rule},
    )
