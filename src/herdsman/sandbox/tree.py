"""Folders a jail closed: open them anyway, and remove a whole tree, whatever modes it set.

A jailed command runs as a uid that maps to the gateway's own user, so everything it writes
belongs to that user. Root reads and removes anything (``CAP_DAC_OVERRIDE``); a gateway that is
not root is held to the modes, and a jail could ``chmod 300`` a folder to hide what it holds from
the quota's walk, or ``chmod 500`` one so that deleting the thread failed and the next thread
with that id inherited it. Since the gateway owns those folders, it gives itself back the bits
it needs on the way (``r`` and ``x`` to walk, ``w`` to remove): the folder is opened with
``O_PATH | O_NOFOLLOW`` relative to its parent's descriptor, checked to be a directory the
gateway owns, and changed through ``/proc/self/fd`` (the inode opened, never a path that a
symlink could redirect). A jail could set the same bits itself; nothing is widened for others.

``shutil.rmtree`` cannot do this: its error handler gets a path, not a descriptor, and does not
retry. :func:`remove_tree` is an iterative descriptor walk (links removed, never followed).

A walk by descriptors holds one per level, and a jail can nest folders deeper than the gateway
may open files (1,500 levels against the common limit of 1,024): the walk then failed with
``EMFILE`` half way, the thread's data stayed on disk, and a new thread given the deleted one's id
(another user's too) found what lay below. So the walk keeps at most :data:`MAX_OPEN` folders
open: a folder met deeper is first moved up (``renameat``) into an ancestor still open, which is
listed again once its listing is done, so the tree flattens as it goes.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_OPEN = 128  # folders remove_tree holds open at once (one per level); deeper ones are moved up


def unlock(dir_fd: int, name: str, bits: int) -> bool:
    """Add the owner ``bits`` to directory ``name`` in ``dir_fd`` when the gateway owns it; a
    symlink or someone else's entry is left alone. Whether the mode changed."""
    try:
        fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            return False
        mode = stat.S_IMODE(st.st_mode)
        if mode & bits == bits:
            return False
        os.chmod(f"/proc/self/fd/{fd}", mode | bits)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def unlock_open(fd: int, bits: int) -> bool:
    """Add the owner ``bits`` to the directory open as ``fd`` when the gateway owns it."""
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid() or stat.S_IMODE(st.st_mode) & bits == bits:
            return False
        os.fchmod(fd, stat.S_IMODE(st.st_mode) | bits)
        return True
    except OSError:
        return False


def open_dir(dir_fd: int, name: str, bits: int = 0o500) -> int:
    """Open directory ``name`` below ``dir_fd`` without following a link; a folder the gateway
    owns but may not read or search gets ``bits`` back first. Raises what ``os.open`` raises."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    except PermissionError:
        if not unlock(dir_fd, name, bits):
            raise
        return os.open(name, DIR_FLAGS, dir_fd=dir_fd)


def _remove_in(fd: int, name: str, is_dir: bool, shown: str, failed: list[str]) -> None:
    """Remove entry ``name`` of the open directory ``fd`` (giving ``fd`` its ``w`` when needed);
    a failure is added to ``failed`` as ``"<shown>: <error>"``, a missing entry is none."""
    for attempt in (0, 1):
        try:
            if is_dir:
                os.rmdir(name, dir_fd=fd)
            else:
                os.unlink(name, dir_fd=fd)
            return
        except FileNotFoundError:
            return
        except PermissionError as exc:
            if attempt or not unlock_open(fd, 0o700):
                failed.append(f"{shown}: {exc.strerror}")
                return
        except OSError as exc:
            failed.append(f"{shown}: {exc.strerror}")
            return


def _list_again(fd: int) -> list[str]:
    """The names in the directory open as ``fd``, read through a new open file: btrfs lists, on
    an open file that read the directory once, only the entries it held then."""
    again = os.open(".", DIR_FLAGS, dir_fd=fd)
    try:
        return sorted(os.listdir(again), reverse=True)
    finally:
        os.close(again)


def _move_up(
    parent: int, name: str, ancestor: tuple[Any, ...], shown: str, failed: list[str], moved_into: set[int]
) -> None:
    """Move folder ``name`` of ``parent`` into the open ``ancestor`` frame of the walk (under a
    fresh name), to be removed from there; a failure is added to ``failed``."""
    target = ancestor[2]
    try:
        os.rename(name, f".herdsman-removing-{os.urandom(8).hex()}", src_dir_fd=parent, dst_dir_fd=target)
    except OSError as exc:
        failed.append(f"{shown}: {exc.strerror}")
        return
    moved_into.add(target)


def remove_tree(path: Path) -> list[str]:
    """Remove ``path`` and everything below it (links removed, never followed; folders the
    gateway owns opened whatever their modes). What could not be removed, as
    ``"<relative path>: <error>"`` (empty when all went); a missing ``path`` is no error."""
    path = Path(path)
    failed: list[str] = []
    try:
        top_parent = os.open(path.parent, DIR_FLAGS & ~os.O_NOFOLLOW)  # the caller's own folder
    except FileNotFoundError:
        return failed
    # each frame: (parent fd, name, its fd or None before it is opened, names left, relative path)
    stack: list[tuple[int, str, int | None, list[str] | None, str]] = [(top_parent, path.name, None, None, path.name)]
    moved_into: set[int] = set()  # descriptors of the folders that deeper ones were moved up into
    try:
        while stack:
            parent, name, fd, left, shown = stack.pop()
            if fd is None:
                try:
                    st = os.stat(name, dir_fd=parent, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    failed.append(f"{shown}: {exc.strerror}")
                    continue
                if not stat.S_ISDIR(st.st_mode):
                    _remove_in(parent, name, False, shown, failed)
                    continue
                if len(stack) >= MAX_OPEN:  # every frame below is an open ancestor
                    _move_up(parent, name, stack[MAX_OPEN // 2], shown, failed, moved_into)
                    continue
                try:
                    fd = open_dir(parent, name, 0o700)
                    unlock_open(fd, 0o700)  # w to remove its entries, x to reach them
                    left = sorted(os.listdir(fd), reverse=True)
                except OSError as exc:
                    if fd is not None:
                        os.close(fd)
                    if exc.errno != errno.ENOENT:
                        failed.append(f"{shown}: {exc.strerror}")
                    continue
            assert left is not None
            if not left and fd in moved_into:  # folders were moved up into it: list it again
                moved_into.discard(fd)
                try:
                    left = _list_again(fd)
                except OSError as exc:
                    failed.append(f"{shown}: {exc.strerror}")
            if left:
                child = left.pop()
                stack.append((parent, name, fd, left, shown))
                stack.append((fd, child, None, None, f"{shown}/{child}"))
                continue
            os.close(fd)
            _remove_in(parent, name, True, shown, failed)
    finally:
        for _parent, _name, fd, _left, _shown in stack:
            if fd is not None:
                os.close(fd)
        os.close(top_parent)
    return failed
