"""Who owns a thread, as the sandbox sees it: ``<home>/threads/<id>/owner``.

The gateway knows a thread's owner (its record's ``metadata.owner``) when it makes the thread;
the sandbox needs it later, when the thread's files are first placed (by whichever process runs
the thread's first command, upload or tool call), to count them against the user's disk bound
(``user_quota.py``). So the gateway writes the owner here once, next to the thread's files, in
a folder no jail sees; placement reads it. A thread with no owner file (the CLI, the embedded
client, a gateway without API keys) belongs to the one local user (None). The file goes with
the thread's folder when the thread is deleted.

The owner also decides whose own skills the thread's sandbox shows (``skill_view.py``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from herdsman.sandbox.paths import ThreadPaths, private_dir, thread_dir, write_once

OWNER_FILE = "owner"


def record_owner(home: Path, thread_id: str, user: str | None) -> None:
    """Note ``user`` as the owner of ``thread_id`` of ``home`` (None: the local user, nothing
    written). The first owner noted stays: a thread never changes hands."""
    if user is None:
        return
    folder = thread_dir(home, thread_id)  # validates the id
    private_dir(folder.parent)
    private_dir(folder)
    path = folder / OWNER_FILE
    if path.exists():
        return
    write_once(path, json.dumps({"user": user}))  # another process may note the same owner at once


def owner_of(home: Path, thread_id: str) -> str | None:
    """The user noted as the owner of ``thread_id`` of ``home``, None for the local user."""
    path = thread_dir(home, thread_id) / OWNER_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        data = json.loads(os.read(fd, 65536) or b"{}")
    except ValueError:
        return None
    finally:
        os.close(fd)
    user = data.get("user") if isinstance(data, dict) else None
    return user if isinstance(user, str) else None


def thread_paths(home: Path, thread_id: str, skills: Path | None) -> ThreadPaths:
    """The :class:`ThreadPaths` of ``thread_id`` of ``home``, with its owner noted (whose own
    skills its sandbox shows besides the shared ones)."""
    return ThreadPaths.for_thread(home, thread_id, skills, owner=owner_of(home, thread_id))
