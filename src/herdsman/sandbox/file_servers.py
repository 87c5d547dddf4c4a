"""Which folder a static file server serves, read from the command that starts it.

``python3 -m http.server 8123`` serves the folder it starts in, and bash (and a background job)
starts in the workspace: asked to serve ``/mnt/user-data/workspace/site`` and fetch ``/hello.txt``
through it, the embedded 1.5B model started the server without ``--directory`` and saved the
server's 404 page as the file. Knowing the served folder lets the bash tool say where a URL path
leads when it starts such a server, and the completion check (``middleware/completion/servers.py``)
say which URL reaches the file the request means.

Hand-written: a command line is split with :mod:`shlex`; no library knows the options of
Python's own file server (``--directory``/``-d``) or follows a ``cd`` before it.
"""

from __future__ import annotations

import posixpath
import re
import shlex

from herdsman.sandbox.base import WORKSPACE

_SERVER = re.compile(r"\bpython[\d.]*\s+-m\s+(?:http\.server|SimpleHTTPServer)\b")
_SEPARATORS = frozenset({";", "&&", "||", "|", "&"})


def _words(command: str) -> list[str] | None:
    """The shell words of ``command`` with its separators as words of their own, or None when it
    does not split (unbalanced quotes)."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:
        return None


def served_folder(command: str, cwd: str = WORKSPACE) -> str | None:
    """The folder the static file server ``command`` starts serves (its ``--directory``, else the
    folder a ``cd`` before it moved to, else ``cwd``), as a normalized absolute path; None when
    ``command`` starts no ``python3 -m http.server``."""
    match = _SERVER.search(command)
    words = _words(command) if match is not None else None
    if not words:
        return None
    here = cwd
    for index, word in enumerate(words):
        if word == "cd" and index + 1 < len(words) and words[index + 1] not in _SEPARATORS:
            here = posixpath.normpath(posixpath.join(here, words[index + 1]))
        if word in ("http.server", "SimpleHTTPServer") and index > 0 and words[index - 1] == "-m":
            folder = here
            for option, value in zip(words[index + 1 :], [*words[index + 2 :], ""], strict=True):
                if option in _SEPARATORS:
                    break
                if option in ("-d", "--directory") and value:
                    folder = value
                elif option.startswith("--directory="):
                    folder = option.split("=", 1)[1]
            return posixpath.normpath(posixpath.join(here, folder))
    return None
