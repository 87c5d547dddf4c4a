"""Bringing a thread's files back to a version of its history: all of them, or some paths.

One job: write a version's entries back through the thread's race-free file access
(:class:`~herdsman.sandbox.fs.ThreadFiles`): folders made, files written from their objects (holes
stay holes), links made, what the version does not have removed. The caller holds the history's
lock. A restore captures the files as they were first, so it can itself be undone.
"""

from __future__ import annotations

import os
import stat
import tempfile
import time
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from herdsman.logs import get_logger
from herdsman.sandbox.base import SandboxError
from herdsman.sandbox.fs import copy_sparse
from herdsman.sandbox.history_objects import Entry, HistoryError

if TYPE_CHECKING:
    from herdsman.sandbox.history import FileHistory

log = get_logger(__name__)


@dataclass
class RestoreReport:
    """What a restore changed: virtual paths written and removed."""

    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # "path: why", for entries left as they were
    before: str | None = None  # the version of the files just before the restore (kept: undo)


def restore_version(history: FileHistory, root: str) -> RestoreReport:
    """Make the thread's files those of version ``root``. The files as they were just before
    are captured first, so a restore can itself be undone."""
    target = history.entries(root)
    before = history.capture()
    history.record(f"before-restore-{time.time_ns()}", before)  # kept like any version: the undo
    current = history.entries(before)
    report = RestoreReport(before=before)

    def attempt(vpath: str, action: Any, *args: Any) -> bool:
        try:
            action(vpath, *args)
            return True
        except (SandboxError, OSError) as exc:  # one entry that cannot change does not stop the rest
            report.failed.append(f"{vpath}: {exc}")
            return False

    for vpath in sorted(current, key=lambda p: p.count("/"), reverse=True):
        now, want = current[vpath], target.get(vpath)
        if want is not None and now[0] == want[0] and (now[0] == "d" or now == want):
            continue
        if now[0] == "d":
            if (want is None or want[0] != "d") and attempt(vpath, history.files.remove_dir):
                report.removed.append(vpath)
        elif attempt(vpath, history.files.unlink) and want is None:
            report.removed.append(vpath)
    for vpath in sorted(target, key=lambda p: p.count("/")):
        wanted, there = target[vpath], current.get(vpath)
        if there is not None and there == wanted or (there is not None and there[0] == wanted[0] == "d"):
            continue
        if wanted[0] == "d":
            attempt(vpath, history.files.make_dir, wanted[1])
        elif attempt(vpath, partial(_put_back, history), wanted):
            report.written.append(vpath)
    history.capture()  # what is there now (the files just written are read once, to check them)
    log.info(
        "files_restored",
        thread_id=history.files.paths.thread_id,
        version=root[:12],
        written=len(report.written),
        removed=len(report.removed),
    )
    return report


def revert_paths(history: FileHistory, root: str, paths: list[str]) -> RestoreReport:
    """Put only ``paths`` back as they were in version ``root``: written back when the version
    has them, removed when it does not (a sub-agent's failed attempt, undone file by file
    while its siblings' files stay)."""
    target = history.entries(root)
    report = RestoreReport()
    for vpath in dict.fromkeys(paths):
        want = target.get(vpath)
        now = history.files.stat(vpath, follow=False)
        if want is None or want[0] == "d":
            if now is not None and not stat.S_ISDIR(now.st_mode):
                history.files.unlink(vpath)
                report.removed.append(vpath)
            continue
        if now is not None and not stat.S_ISDIR(now.st_mode):
            history.files.unlink(vpath)
        _put_back(history, vpath, want)
        report.written.append(vpath)
    return report


def _put_back(history: FileHistory, vpath: str, item: Entry) -> None:
    """Create the link or file entry ``item`` of a version at ``vpath`` (nothing is there)."""
    if item[0] == "l":
        history.files.make_link(vpath, item[1])
    else:
        _write_back(history, vpath, item)


def _write_back(history: FileHistory, vpath: str, item: Entry) -> None:
    """Write the file entry ``item`` at ``vpath`` from its object, staged in the history's folder."""
    source = history.store.path(item[2])
    if not source.exists():
        raise HistoryError(f"the contents of {vpath} in this version are gone; the version cannot be restored")
    fd, name = tempfile.mkstemp(dir=history.directory)
    try:
        with os.fdopen(fd, "wb") as out, source.open("rb") as src:
            copy_sparse(src.fileno(), out.fileno(), os.fstat(src.fileno()).st_size)  # holes stay holes
        os.chmod(name, item[1] & 0o777)
        staging = os.open(history.directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            history.files.move_in(staging, os.path.basename(name), vpath)
        finally:
            os.close(staging)
    except BaseException:
        if os.path.exists(name):
            os.unlink(name)
        raise
