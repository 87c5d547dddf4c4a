"""Here-documents in a shell command, and the Python programs read from them.

A small model writes most of its programs as ``python3 - <<'EOF'`` followed by the program and
``EOF``. To a learned skill such a program is a script, not shell text: its values become
``--name`` options (:mod:`.generalize`) and it is saved in the skill's folder, so the skill's step
is one short command a 1.5B model can copy with new values.

Written by hand: no maintained library splits a bash text into its here-documents (``shlex``
does not know them, ``bashlex`` gives positions but no quoting of the delimiter). It reads line by
line, as bash does: a here-document opens on a line with ``<<WORD`` (not ``<<<``) and ends at the
first line that is exactly ``WORD`` (with ``<<-``, after leading tabs); the search for that line
is a plain string search, so a long command costs linear time.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_OPEN = re.compile(r"(?<!<)<<(?!<)(?P<dash>-?)[ \t]*(?P<q>['\"]?)(?P<delim>[A-Za-z_]\w*)(?P=q)")
_RUN_PYTHON = re.compile(rf"\bpython3?[ \t]+-[ \t]*(?P<redirect>{_OPEN.pattern})")
"""``python3 -`` reading the here-document that opens right after it."""


@dataclass(frozen=True)
class HereDoc:
    """One here-document of a shell text: ``head`` (the line that opens it, with its newline),
    ``body``, ``end`` (the closing line), where it starts and ends in the text, and whether its
    delimiter was quoted (``quoted``) or written ``<<-`` (``dash``)."""

    start: int
    stop: int
    head: str
    body: str
    end: str
    delim: str
    quoted: bool
    dash: bool


def _closing(text: str, delim: str, dash: bool, at: int) -> tuple[int, int] | None:
    """Where the line that closes a here-document of ``delim`` starts and ends, searching from ``at``
    (a line start); None when no line closes it."""
    pos = at
    while pos <= len(text):
        newline = text.find("\n", pos)
        line_end = len(text) if newline < 0 else newline
        line = text[pos:line_end]
        if (line.lstrip("\t") if dash else line) == delim:
            return pos, line_end if newline < 0 else newline + 1
        if newline < 0:
            return None
        pos = newline + 1
    return None


def heredocs(text: str) -> Iterator[HereDoc]:
    """The here-documents of shell ``text``, in order: the first one opened on each line (a
    second ``<<`` on the same line is left in the shell text)."""
    pos = 0
    while pos < len(text):
        newline = text.find("\n", pos)
        if newline < 0:
            return
        opened = _OPEN.search(text, pos, newline)
        if opened is None:
            pos = newline + 1
            continue
        closing = _closing(text, opened.group("delim"), bool(opened.group("dash")), newline + 1)
        if closing is None:
            return
        yield HereDoc(
            start=pos,
            stop=closing[1],
            head=text[pos : newline + 1],
            body=text[newline + 1 : closing[0]],
            end=text[closing[0] : closing[1]],
            delim=opened.group("delim"),
            quoted=bool(opened.group("q")),
            dash=bool(opened.group("dash")),
        )
        pos = closing[1]


def is_python_program(doc: HereDoc) -> bool:
    """Whether here-document ``doc`` is the program Python reads from standard input: its line has
    ``python3 -`` right before its ``<<`` and no other here-document opens on it."""
    return _python_run(doc.head) is not None


def _python_run(head: str) -> re.Match[str] | None:
    run = _RUN_PYTHON.search(head)
    if run is None or len(_OPEN.findall(head)) != 1:
        return None
    return run


def as_written(doc: HereDoc) -> bool:
    """Whether the body of here-document ``doc`` is exactly what the command's reader got: its
    delimiter is quoted and not ``<<-`` (which strips tabs), or the body has nothing the shell
    expands (``$``, backquotes, backslashes)."""
    return not doc.dash and (doc.quoted or not re.search(r"[$`\\]", doc.body))


def python_programs(command: str) -> tuple[str, list[str]]:
    """``command`` without the bodies of the Python programs it reads from here-documents, and
    those bodies: what the shell runs, and what Python does."""
    shell: list[str] = []
    programs: list[str] = []
    last = 0
    for doc in heredocs(command):
        if is_python_program(doc):
            shell.append(command[last : doc.start] + doc.head)
            programs.append(doc.body)
            last = doc.stop
    shell.append(command[last:])
    return "".join(shell), programs


def around_run(head: str) -> tuple[str, str, str, str] | None:
    """``head`` (the line opening a ``python3 - <<'EOF'`` here-document) in four: the text before
    ``python3``, ``python3 -``, the ``<<'EOF'`` and the rest of the line; None when the line is
    not of that shape."""
    run = _python_run(head)
    if run is None:
        return None
    dash = head.index("-", run.start())
    program = head[run.start() : dash + 1]
    return head[: run.start()], program, head[run.start("redirect") : run.end("redirect")], head[run.end("redirect") :]
