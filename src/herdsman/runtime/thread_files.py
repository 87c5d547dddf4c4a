"""Delete what a thread keeps on disk: its sandbox stopped, ``<home>/threads/<id>`` removed.

Used when a thread is deleted (``DELETE /threads/{id}``, prune) and when a stateless run's
temporary thread ends, so nothing a thread wrote outlives it. ``rmtree`` never follows a symlink
the sandbox left there (it works by descriptors on Linux).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import structlog

from herdsman.sandbox.paths import thread_dir

log = structlog.get_logger(__name__)


def remove_thread_files(sandbox: Any, home: Path, thread_id: str) -> None:
    """Stop the thread's sandbox (its commands, its container; ``sandbox`` is the provider, None
    for none) and delete everything kept for the thread under ``home``."""
    def not_removed(_function: Any, _path: str, exc_info: Any) -> None:
        log.warning("thread_file_not_removed", thread_id=thread_id, error=type(exc_info[1]).__name__)

    if sandbox is not None:
        sandbox.release(thread_id)
    folder = thread_dir(home, thread_id)
    if folder.exists():
        shutil.rmtree(folder, onerror=not_removed)
