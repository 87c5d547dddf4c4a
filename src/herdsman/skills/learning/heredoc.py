"""Here-documents in a shell command, and the Python programs read from them.

A small model writes most of its programs as ``python3 - <<'EOF'`` followed by the program and
``EOF``. To a learned skill such a program is a script, not shell text: its values become
``--name`` options (:mod:`.generalize`) and it is saved in the skill's folder, so the skill's step
is one short command a 1.5B model can copy with new values.

Written by hand: no maintained library splits a bash text into its here-documents (``shlex``
does not know them, ``bashlex`` gives positions but no quoting of the delimiter).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# A here-document: the line that opens it (``python3 - <<'EOF'``), its body, the closing line
# (``<<<``, a here-string, is none).
HEREDOC = re.compile(
    r"(?P<head>^[^\n]*?(?<!<)<<(?!<)-?[ \t]*(?P<q>['\"]?)(?P<delim>[A-Za-z_][\w]*)(?P=q)[^\n]*\n)"
    r"(?P<body>.*?\n)?(?P<end>[ \t]*(?P=delim)[ \t]*(?:\n|$))",
    re.MULTILINE | re.DOTALL,
)
PYTHON_STDIN = re.compile(r"\bpython3?[ \t]+-(?=[ \t]|<)")
_REDIRECT = re.compile(r"[ \t]*(?<!<)<<(?!<)-?[ \t]*(?P<q>['\"]?)(?P<delim>[A-Za-z_][\w]*)(?P=q)")


def heredocs(text: str) -> Iterator[re.Match[str]]:
    """The here-documents of shell ``text``, in order (groups ``head``, ``q``, ``body``, ``end``)."""
    return HEREDOC.finditer(text)


def is_python_program(doc: re.Match[str]) -> bool:
    """Whether here-document ``doc`` is a program Python reads from standard input (``python3 -``)."""
    return PYTHON_STDIN.search(doc.group("head")) is not None


def as_written(doc: re.Match[str]) -> bool:
    """Whether the body of here-document ``doc`` is what the command's reader got: its delimiter
    is quoted, or the body has nothing the shell expands (``$``, backquotes, backslashes)."""
    return bool(doc.group("q")) or not re.search(r"[$`\\]", doc.group("body") or "")


def python_programs(command: str) -> tuple[str, list[str]]:
    """``command`` without the bodies of the Python programs it reads from here-documents, and
    those bodies: what the shell runs, and what Python does."""
    shell: list[str] = []
    programs: list[str] = []
    last = 0
    for doc in heredocs(command):
        if is_python_program(doc):
            shell.append(command[last : doc.start()] + doc.group("head"))
            programs.append(doc.group("body") or "")
            last = doc.end()
    shell.append(command[last:])
    return "".join(shell), programs


def run_script_instead(head: str, script: str, options: str) -> str:
    """The opening line ``head`` of a ``python3 - <<'EOF'`` here-document, made to run ``script``
    with ``options`` instead of reading a program (the ``<<'EOF'`` taken out, the rest kept)."""
    at = PYTHON_STDIN.search(head)
    if at is None:
        return head
    rest = _REDIRECT.sub("", head[at.end() :], count=1)
    run = f"python3 {script} {options}".rstrip()
    return f"{head[: at.start()]}{run}{rest}"
