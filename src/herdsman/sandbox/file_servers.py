"""Which folder a static file server serves, read from the command that starts it.

``python3 -m http.server 8123`` serves the folder it starts in, and bash (and a background job)
starts in the workspace: asked to serve ``/mnt/user-data/workspace/site`` and fetch ``/hello.txt``
through it, the embedded 1.5B model started the server without ``--directory`` and saved the
server's 404 page as the file. Knowing the served folder lets the bash tool say where a URL path
leads when it starts such a server, and the completion check (``middleware/completion/servers.py``)
say which URL reaches the file the request means.

Hand-written: a command line is split into simple commands (``shell_words.py``); no library knows the options of
Python's own file server (``--directory``/``-d``) or follows a ``cd`` before it.
"""

from __future__ import annotations

import posixpath
import re

from herdsman.sandbox.base import WORKSPACE
from herdsman.sandbox.shell_words import simple_commands

_SERVER = re.compile(r"\bpython[\d.]*\s+-m\s+(?:http\.server|SimpleHTTPServer)\b")
_MODULES = ("http.server", "SimpleHTTPServer")


def served_folder(command: str, cwd: str = WORKSPACE) -> str | None:
    """The folder the static file server ``command`` starts serves (its ``--directory``, else the
    folder a ``cd`` before it moved to, else ``cwd``), as a normalized absolute path; None when
    ``command`` starts no ``python3 -m http.server``."""
    if _SERVER.search(command) is None:
        return None
    here = cwd
    for words in simple_commands(command):
        if words[0] == "cd" and len(words) > 1:
            here = posixpath.normpath(posixpath.join(here, words[1]))
        module = next((i for i, w in enumerate(words) if w in _MODULES and i > 0 and words[i - 1] == "-m"), None)
        if module is None:
            continue
        folder = here
        options = words[module + 1 :]
        for option, value in zip(options, [*options[1:], ""], strict=True):
            if option in ("-d", "--directory") and value:
                folder = value
            elif option.startswith("--directory="):
                folder = option.split("=", 1)[1]
        return posixpath.normpath(posixpath.join(here, folder))
    return None
