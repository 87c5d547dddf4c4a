"""Walking a thread's folder tree from an open descriptor, bounded, never into a link.

One job: list what is below a folder the caller opened safely (:meth:`ThreadFiles.walk
<herdsman.sandbox.fs.ThreadFiles.walk>` opens it with its race-free walk). Every sub-folder is
opened relative to its parent's descriptor without following a link; the walk stops at a bound
on entries and on time and says why; it holds at most ``MAX_HELD_DIRS`` descriptors however deep
the tree (a jail's comb of folders 1,100 deep exhausted the gateway's open files once). Written
by hand because ``os.walk``/``os.fwalk`` follow no such bounds and hold a descriptor per level.
"""

from __future__ import annotations

import os
import stat
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from herdsman.sandbox import skill_view
from herdsman.sandbox.base import SKILLS_ROOT
from herdsman.sandbox.tree import open_dir, unlock_open


@dataclass(frozen=True)
class WalkEntry:
    """One entry met by :meth:`ThreadFiles.walk`; ``st`` is its own ``lstat``."""

    vpath: str
    name: str
    st: os.stat_result
    depth: int

    @property
    def is_dir(self) -> bool:
        """A real directory (a symlink to one is not)."""
        return stat.S_ISDIR(self.st.st_mode)

    @property
    def is_file(self) -> bool:
        """A regular file (a symlink to one is not)."""
        return stat.S_ISREG(self.st.st_mode)

    @property
    def is_link(self) -> bool:
        """A symbolic link (never followed by the walk)."""
        return stat.S_ISLNK(self.st.st_mode)


@dataclass
class WalkStop:
    """Why a walk ended early ("" when it saw everything)."""

    reason: str = ""


def _lstat_in(fd: int, name: str) -> os.stat_result:
    """``lstat`` of ``name`` in the open folder ``fd``; a folder the jail made unsearchable
    (``chmod 600``) gets its owner's ``x`` back first (see tree.py)."""
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False)
    except PermissionError:
        if not unlock_open(fd, 0o500):
            raise
        return os.stat(name, dir_fd=fd, follow_symlinks=False)


MAX_HELD_DIRS = 64  # descriptors one walk holds for queued sub-folders


def _open_below(fd: int, names: tuple[str, ...]) -> int:
    """The folder ``names`` (one name per level) below the open folder ``fd``, opened one level
    at a time without following a link (folders the jail closed opened anyway); -1 when a step
    is gone or is not a folder."""
    current = fd
    for name in names:
        try:
            step = open_dir(current, name)
        except OSError:
            step = -1
        if current != fd:
            os.close(current)
        if step < 0:
            return -1
        current = step
    return current if current != fd else os.dup(fd)


class _SharedFd:
    """A directory descriptor shared by the walk's queued sub-folders; closed by the last user.
    ``held`` counts the walk's open ones."""

    __slots__ = ("fd", "users", "held")

    def __init__(self, fd: int, held: list[int]) -> None:
        self.fd = fd
        self.users = 1
        self.held = held
        held[0] += 1

    def take(self) -> _SharedFd:
        """One more user (a queued sub-folder)."""
        self.users += 1
        return self

    def release(self) -> None:
        """One user less; the descriptor closes with the last."""
        self.users -= 1
        if self.users == 0:
            os.close(self.fd)
            self.held[0] -= 1


def walk_open(
    top: int,
    base: str,
    owner: str | None,
    stop: WalkStop,
    deadline: float,
    seconds: float,
    *,
    max_depth: int,
    limit: int,
    skip_dirs: frozenset[str],
    breadth_first: bool,
    on_dir: Callable[[int, str], None] | None,
) -> Iterator[WalkEntry]:
    """The entries below the open folder ``top`` (virtual path ``base``), which it closes; see
    :meth:`~herdsman.sandbox.fs.ThreadFiles.walk` for the rest (``owner``: whose skills are
    listed under the skills folder)."""
    count = 0
    held = [0]  # descriptors held for queued sub-folders (see _SharedFd)
    # Each queued directory is (an ancestor's shared descriptor, the names from it, virtual
    # path, depth): a folder holds one descriptor while any of its sub-folders waits, not one
    # per sub-folder; past MAX_HELD_DIRS held, its sub-folders are reached from its own
    # holder by name instead (a jail's comb of folders 1,100 deep exhausted the gateway's
    # 1,024 open files, killed the quota's watch and failed every other thread's calls).
    pending: deque[tuple[_SharedFd | None, tuple[str, ...], str, int]] = deque([(None, (), base, 1)])
    try:
        while pending:
            holder, names, vdir, depth = pending.popleft() if breadth_first else pending.pop()
            if holder is None:
                fd = top
            else:
                fd = _open_below(holder.fd, names)  # -1: swapped for a link or removed meanwhile
                if fd < 0:
                    holder.release()
                    continue
            prefix: tuple[str, ...]
            if holder is None or held[0] < MAX_HELD_DIRS:
                here, prefix = _SharedFd(fd, held), ()
                if holder is not None:
                    holder.release()
            else:  # its sub-folders are reached through its holder; its descriptor closes after the listing
                here, prefix = holder, names
            children: list[tuple[_SharedFd | None, tuple[str, ...], str, int]] = []
            try:
                if on_dir is not None:
                    on_dir(fd, vdir)
                with os.scandir(fd) as scanner:
                    listed = sorted(entry.name for entry in scanner)
                for child in listed:
                    if count >= limit:
                        stop.reason = f"stopped after {limit} entries"
                        return
                    if time.monotonic() > deadline:
                        stop.reason = f"stopped after {seconds:g} seconds"
                        return
                    try:
                        st = _lstat_in(fd, child)
                    except OSError:
                        continue  # gone meanwhile
                    vpath = f"{vdir.rstrip('/')}/{child}"
                    if vpath.startswith(SKILLS_ROOT + "/") and not skill_view.visible(vpath, owner):
                        continue  # another user's skills: not listed either (see locate)
                    count += 1
                    yield WalkEntry(vpath, child, st, depth)
                    if stat.S_ISDIR(st.st_mode) and depth < max_depth and child not in skip_dirs:
                        children.append((here.take(), (*prefix, child), vpath, depth + 1))
                pending.extend(children if breadth_first else reversed(children))
                children = []
            finally:
                for queued in children:  # cut short: the sub-folders were never queued
                    if queued[0] is not None:
                        queued[0].release()
                if here.fd != fd:
                    os.close(fd)  # reached through its holder: not kept
                here.release()
    finally:
        for holder, _, _, _ in pending:
            if holder is not None:
                holder.release()
            else:
                os.close(top)
