"""Where a file the model named is, when it is not where the model looked.

Asked to fix the imports of a small program in ``/mnt/user-data/workspace/tool``, the embedded
1.5B model ran ``python3 main.py`` from the workspace, read ``can't open file
'/mnt/user-data/workspace/main.py'``, then read and edited ``/mnt/user-data/workspace/main.py``
four times and answered that main.py does not exist (a development task, in three runs out of
three). The file was one folder down. A model that is told where the file is can take the next
step; one told only "does not exist" guesses.

So when a file tool is given a path that does not exist, or a failed command's output says a
path it names does not exist, and a file or folder of the same name exists elsewhere under
``/mnt/user-data``, the tool's result gains a note: where it is (up to :data:`MAX_PLACES`
places), and for a command, that commands start in the workspace unless they ``cd``.

Language-neutral: it reads file names and the standard error texts of Python, the shell and the
coreutils (``can't open file``, ``No such file or directory``, ``cannot access``), not the
request. Bounded: only on a failure, one search of the user data through the sandbox's own
bounded walk (:meth:`~herdsman.sandbox.base.Sandbox.glob`), at most :data:`MAX_NAMES` names per
command. Hand-written: no library maps an error text back to the files of a sandbox.
"""

from __future__ import annotations

import glob as globbing
import re
from pathlib import PurePosixPath

from herdsman.sandbox.base import USER_DATA_ROOT, WORKSPACE, Sandbox, SandboxError

MAX_PLACES = 3
"""The places of a name the note lists."""
MAX_NAMES = 3
"""The missing names of one command's output the note looks for."""
NOTE_START = "[not found where it was looked for:"
"""How a command's note begins."""
_MISSING = [
    re.compile(r"can't open file '([^'\n]+)'"),
    re.compile(r"No such file or directory: '([^'\n]+)'"),
    re.compile(r"cannot (?:access|open|stat) '([^'\n]+)'"),
    re.compile(r"(?:^|[\s:])([^\s:'\"]+): No such file or directory", re.MULTILINE),
]


def places_of(sandbox: Sandbox, path: str) -> list[str]:
    """Up to :data:`MAX_PLACES` other paths under ``/mnt/user-data`` whose name is the last part
    of ``path`` (a relative ``path`` with folders must end those paths), nearest first; [] when
    there are none or the search cannot be made."""
    parts = [p for p in PurePosixPath(path).parts if p not in ("/", ".")]
    if not parts or ".." in parts or any(c in parts[-1] for c in "*?["):
        return []
    absolute = path if path.startswith("/") else f"{WORKSPACE}/{path}"
    suffix = "/" + "/".join(parts)
    try:
        found = sandbox.glob(f"**/{globbing.escape(parts[-1])}", USER_DATA_ROOT)
    except SandboxError:
        return []
    places = [f.rstrip("/") for f in found]
    places = [p for p in places if p != absolute.rstrip("/") and (path.startswith("/") or p.endswith(suffix))]
    return sorted(places, key=lambda p: (p.count("/"), p))[:MAX_PLACES]


def where_note(sandbox: Sandbox, path: str) -> str:
    """What a file tool's "does not exist" error on ``path`` gains: ``; NAME is at PLACE: use
    that path``, or "" when no file of that name is elsewhere."""
    places = places_of(sandbox, path)
    if not places:
        return ""
    return f"; {PurePosixPath(path).name} is at {_listed(places)}: use that path"


def command_note(sandbox: Sandbox, exit_code: int, output: str) -> str:
    """The note on a failed command whose output says a path does not exist while a file of
    that name is elsewhere under ``/mnt/user-data`` (see the module docstring), else ""."""
    if exit_code == 0:
        return ""
    names: list[str] = []
    for pattern in _MISSING:
        for match in pattern.finditer(output):
            name = match.group(1).strip()
            if name and name not in names:
                names.append(name)
    found = [(name, places) for name in names[:MAX_NAMES] if (places := places_of(sandbox, name))]
    if not found:
        return ""
    folder = str(PurePosixPath(found[0][1][0]).parent)
    listed = "; ".join(f"{name} is at {_listed(places)}" for name, places in found)
    return f"{NOTE_START} {listed}. Commands start in {WORKSPACE}: cd {folder} first, or give the full path]"


def _listed(places: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return places[0] if len(places) == 1 else ", ".join(places[:-1]) + " or " + places[-1]
