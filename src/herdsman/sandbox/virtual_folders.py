"""``outputs/...``, ``uploads/...`` and ``workspace/...`` name the virtual folders, wherever they
are written: in a path a file tool gets, in a command, in the user's request.

A command runs in the workspace, so ``python3 - > outputs/totals.png`` wrote
``/mnt/user-data/workspace/outputs/totals.png`` (and ``mkdir -p outputs/pal.py`` made a folder
there), while the user and the model both meant ``/mnt/user-data/outputs``. The three names are
read as the folders:

* a relative path a file tool gets (``outputs/a.md``, ``./uploads/data.csv``) by
  :func:`~herdsman.sandbox.paths.normalize_virtual`, through :func:`virtual_folder_path`;
* a command, by :func:`rewrite_command`: each such path in it (``outputs/a.md``, ``./outputs/``;
  not ``src/outputs/x``, ``../outputs``, ``~/outputs`` or a URL) becomes the absolute virtual path
  before the command runs, whatever directory it ``cd``s to and in any provider (bubblewrap,
  Docker, Kubernetes), since the text is changed, not the jail;
* a request's file names, by the completion check (``middleware/turn.py``), so the file it
  looks for is the one in ``/mnt/user-data/outputs``.

Why rewrite the command rather than make the names exist in the workspace: a bind mount of
outputs at ``workspace/outputs`` needs a mount point the jail's runtime creates in the host's
workspace folder, as the host user (root, for a root gateway or Docker's daemon), on a path the
jail controls between commands (a link swapped in there is the classic mount-destination race),
and then ``rm -rf *`` in the workspace empties the deliverables through it; a link
``workspace/outputs -> ../outputs`` is harmless on the host but shows in every listing of the
workspace, and ``workspace -> .`` makes every recursive glob see each file forty times. A
rewritten command touches nothing on disk: the jail and its rules are unchanged. What it does
not reach: a path built at run time, or written in a script file that a command then runs from
the workspace (the script's own ``open('outputs/x')``). Hand-written: no shell library rewrites words of a command line in
place and keeps the rest byte for byte (``bashlex`` parses, it does not print back).
"""

from __future__ import annotations

import re

from herdsman.sandbox.base import OUTPUTS, UPLOADS, WORKSPACE

FOLDERS = {"outputs": OUTPUTS, "uploads": UPLOADS, "workspace": WORKSPACE}
"""The names that mean a virtual folder when a relative path starts with them."""

# A path starting with a folder's name and a slash, alone or after "./": not part of a longer
# name or path (src/outputs/, ../outputs/, ~/outputs/, $HOME/outputs/, host:outputs/, a URL).
_IN_COMMAND = re.compile(r"(?<![\w.~/$:@-])(?:\./)?(outputs|uploads|workspace)/")


def virtual_folder_path(path: str) -> str | None:
    """The absolute virtual path of a relative ``path`` that starts with a folder's name
    (``outputs/a.md``, ``./outputs``), else None."""
    rest = path[2:] if path.startswith("./") else path
    head, _, tail = rest.partition("/")
    folder = FOLDERS.get(head)
    if folder is None:
        return None
    return f"{folder}/{tail}" if tail else folder


def rewrite_command(command: str) -> str:
    """``command`` with each relative path that starts with a folder's name made absolute
    (``cat > outputs/a.md`` -> ``cat > /mnt/user-data/outputs/a.md``); the rest unchanged."""
    return _IN_COMMAND.sub(lambda m: FOLDERS[m.group(1)] + "/", command)
