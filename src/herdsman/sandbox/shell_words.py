"""A command line as its simple commands, each a list of shell words.

The completion check reads what a model's command did (``chmod +x tools/*.sh``: a glob one
folder short) and the bash tool which folder a file server it starts serves (``cd site &&
python3 -m http.server``). Both need the same split: :mod:`shlex` in POSIX mode, with ``;``,
``&``, ``&&``, ``||`` and ``|`` ending a simple command. Hand-written on :mod:`shlex`: ``bashlex``
(which ``virtual_folders.py`` uses) gives a syntax tree, more than a list of words needs.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator


def simple_commands(command: str) -> Iterator[list[str]]:
    """The simple commands of ``command``, in order, as shell words; none when it does not split
    (an unbalanced quote: not a command to reason about)."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return
    current: list[str] = []
    for word in words:
        if word and set(word) <= set(";&|"):
            if current:
                yield current
            current = []
        else:
            current.append(word)
    if current:
        yield current


def python_heredoc(code: str, marker: str) -> str:
    """The bash command that runs the Python ``code`` with python3, fed through a heredoc that
    ends at ``marker`` (the caller makes sure ``code`` does not hold it)."""
    return f"python3 - <<'{marker}'\n{code}\n{marker}"
