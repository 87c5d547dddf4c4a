"""Delete what a thread keeps on disk: its sandbox stopped, ``<home>/threads/<id>`` removed.

Used when a thread is deleted (``DELETE /threads/{id}``, prune) and when a stateless run's
temporary thread ends, so nothing a thread wrote outlives it (nor the rows of its file versions
in the home's index). The removal works by descriptors
and never follows a symlink the sandbox left there; folders the jail closed (``chmod 500``,
``000``) are opened again first when the gateway is not root (``sandbox/tree.py``), and a
``user-data`` kept on the quota volume goes with its subvolume (``sandbox/volume.py``), so a
new thread with the same id starts empty.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from herdsman.logs import get_logger
from herdsman.sandbox.history import forget_thread
from herdsman.sandbox.paths import thread_dir
from herdsman.sandbox.tree import remove_tree
from herdsman.sandbox.volume import remove_volume_data

log = get_logger(__name__)


def remove_thread_files(sandbox: Any, home: Path, thread_id: str) -> None:
    """Stop the thread's sandbox (its commands, its container; ``sandbox`` is the provider, None
    for none) and delete everything kept for the thread under ``home``."""
    if sandbox is not None:
        sandbox.release(thread_id)
    folder = thread_dir(home, thread_id)
    remove_volume_data(folder / "user-data")
    failed = remove_tree(folder)
    forget_thread(home, thread_id)  # and the rows of its file versions in the home's index
    if failed:
        log.warning("thread_file_not_removed", thread_id=thread_id, count=len(failed), first=failed[0][:200])
