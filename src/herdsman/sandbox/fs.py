"""Race-free host-side access to one thread's files, by virtual path.

Code in the sandbox can change its files at any moment: a ``renameat2(RENAME_EXCHANGE)`` loop
can swap a directory for a symlink to another thread's folder, or to ``/etc``, between the
moment the host checks a path and the moment it opens it. So the host never opens a thread's
file by its host path. :class:`ThreadFiles` walks every path one component at a time from a
directory file descriptor of one of the thread's roots, opening each directory with
``O_NOFOLLOW | O_DIRECTORY`` relative to its parent's descriptor (``openat``). The kernel
never follows a symlink on the way and never sees ``..``; whatever a swap does, the walk stays
on inodes below the root it started from.

Symlinks the agent made are still honoured, the way the shell inside the jail sees them: a
link met on the way is read with ``readlinkat`` and its target is interpreted as a *virtual*
path (``ln -s /mnt/user-data/uploads/a.csv a.csv`` works in the file tools as in bash), then the
walk goes on from the descriptor of the root that target names. A target that leaves the
virtual roots is refused. If the link is swapped again after it was read, the next
``openat`` with ``O_NOFOLLOW`` sees the new state and the walk re-reads it; nothing is ever
resolved by the kernel on a host path string.

Why by hand and not ``openat2(RESOLVE_BENEATH)``: absolute links in a sandbox name virtual
paths (``/mnt/user-data/...``), which ``RESOLVE_BENEATH`` refuses and ``RESOLVE_IN_ROOT`` would
resolve against the wrong directory, and Python has no ``openat2`` binding; the walk is the
``O_NOFOLLOW`` fallback that design notes name, used everywhere, so there is one code path.

Walks over trees (:meth:`ThreadFiles.walk`) never descend into a symlink, stop at a bound on entries
and on time, and say why they stopped; a folder the jail made unreadable or unsearchable is opened
anyway when the gateway owns it (``tree.py``), so the quota and the versions see it. Writes can be
charged to a
:class:`~herdsman.sandbox.quota.DiskQuota`.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from herdsman.sandbox import skill_view
from herdsman.sandbox.base import SKILLS_ROOT, WORKSPACE, PathEscapeError, SandboxError
from herdsman.sandbox.fs_walk import WalkEntry, walk_open
from herdsman.sandbox.fs_walk import WalkStop as WalkStop  # part of this module's API (a walk's limits)
from herdsman.sandbox.paths import ReadOnlyPathError, ThreadPaths, VirtualRoot
from herdsman.sandbox.tree import open_dir

if TYPE_CHECKING:
    from herdsman.sandbox.quota import DiskQuota

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_SYMLINKS = 40
_MAX_COMPONENT_BYTES = 255
MAX_PATH_CHARS = 4096
MAX_DEPTH = 256  # folders in one path
CHUNK = 1024 * 1024


def _read_only(root: VirtualRoot, shown: str) -> ReadOnlyPathError:
    """The refusal of a write into the read-only ``root``."""
    if root.virtual == SKILLS_ROOT:
        return ReadOnlyPathError(f"{shown}: {SKILLS_ROOT} is read-only; write to the workspace or the outputs instead")
    return ReadOnlyPathError(f"{shown}: only the workspace, uploads and outputs folders are writable")


@dataclass
class _Step:
    """One resolved component: its name and, inside a root, an open directory descriptor
    (``closed`` when the walk let it go to keep only the last two open)."""

    name: str
    fd: int | None
    closed: bool = False


_KEEP_OPEN = 2  # descriptors a walk holds at once: the current folder and its parent


@dataclass(frozen=True)
class Location:
    """Where a virtual path lives: its canonical virtual form, its root, and the open directory
    that holds its last component (``name`` is ``"."`` when the path is a root itself)."""

    vpath: str
    root: VirtualRoot
    dir_fd: int
    name: str


class NotFoundError(SandboxError):
    """The path (or a folder on the way) does not exist."""


def os_error(exc: OSError, path: str, action: str) -> SandboxError:
    """A message for the model about ``exc`` met while doing ``action`` on virtual ``path``."""
    if isinstance(exc, FileNotFoundError):
        return NotFoundError(f"{path} does not exist")
    if isinstance(exc, IsADirectoryError):
        return SandboxError(f"{path} is a directory, not a file; use ls to see what it holds")
    if isinstance(exc, NotADirectoryError):
        return SandboxError(f"{path}: a part of this path is a file, not a directory")
    if isinstance(exc, PermissionError):
        return SandboxError(f"cannot {action} {path}: permission denied")
    if exc.errno == errno.ELOOP:
        return PathEscapeError(f"{path} is a symbolic link that changed while it was used; try again")
    if exc.errno == errno.ENAMETOOLONG:
        return SandboxError(f"cannot {action} {path}: a name in the path is too long (255 bytes at most)")
    if exc.errno == errno.EDQUOT:
        return SandboxError(f"cannot {action} {path}: disk quota exceeded (sandbox.disk_quota_mb); delete files first")
    if exc.errno == errno.ENOSPC:
        return SandboxError(f"cannot {action} {path}: no space left on the disk")
    return SandboxError(f"cannot {action} {path}: {exc.strerror or type(exc).__name__}")


def _check_name(name: str, shown: str) -> None:
    """Refuse a component the filesystem cannot store, with a message instead of an OSError."""
    try:
        encoded = name.encode("utf-8")
    except UnicodeEncodeError:
        raise SandboxError(
            f"{shown[:200]!r}: the path holds characters that are not valid text (lone surrogates); "
            "use plain UTF-8 names"
        ) from None
    if len(encoded) > _MAX_COMPONENT_BYTES:
        raise SandboxError(
            f"{shown[:120]}...: the name {name[:40]!r}... is too long ({len(encoded)} bytes; "
            f"names are at most {_MAX_COMPONENT_BYTES} bytes); use a shorter one"
        )


def _regular(fd: int, path: str) -> os.stat_result:
    """The ``fstat`` of ``fd``; refuses directories, FIFOs and devices (a FIFO would block forever)."""
    st = os.fstat(fd)
    if stat.S_ISDIR(st.st_mode):
        raise SandboxError(f"{path} is a directory, not a file; use ls to see what it holds")
    if not stat.S_ISREG(st.st_mode):
        raise SandboxError(f"{path} is not a regular file (a pipe, socket or device)")
    return st


class ThreadFiles:
    """The files of one thread, reached only through descriptors (see the module docstring).

    ``owner`` (uid, gid), when given, is what new files and directories are handed to (the
    container user of the docker provider when the gateway runs as root); ``quota`` is charged
    for every write.
    """

    def __init__(
        self,
        paths: ThreadPaths,
        *,
        owner: tuple[int, int] | None = None,
        quota: DiskQuota | None = None,
    ) -> None:
        self.paths = paths
        self.owner = owner
        self.quota = quota

    # -- resolution -----------------------------------------------------------------------

    def _root_exact(self, vpath: str) -> VirtualRoot | None:
        for root in self.paths.roots:
            if root.virtual == vpath:
                return root
        return None

    def _root_of(self, vpath: str) -> VirtualRoot | None:
        for root in self.paths.roots:
            if vpath == root.virtual or vpath.startswith(root.virtual + "/"):
                return root
        return None

    def _open_root(self, root: VirtualRoot, shown: str) -> int:
        try:
            return os.open(root.host, _DIR_FLAGS)
        except PermissionError:  # the jail closed its own workspace (chmod 000): the harness's folder above
            parent = os.open(root.host.parent, _DIR_FLAGS)
            try:
                return open_dir(parent, root.host.name)
            except OSError:
                raise SandboxError(f"{shown}: {root.virtual} is not available in this sandbox") from None
            finally:
                os.close(parent)
        except FileNotFoundError:
            if root.writable:
                root.host.mkdir(parents=True, exist_ok=True)  # the harness's own folder, not the agent's
            try:
                return os.open(root.host, _DIR_FLAGS)
            except OSError:
                raise SandboxError(f"{shown}: {root.virtual} is not available in this sandbox") from None

    def _escape(self, shown: str, final: str, links: int) -> PathEscapeError:
        if self.paths.skills is None and (final == SKILLS_ROOT or final.startswith(SKILLS_ROOT + "/")):
            return PathEscapeError(f"{shown}: no skills folder is mounted in this sandbox")
        via = " (through a symbolic link)" if links else ""
        return PathEscapeError(
            f"{shown}: the path leaves the sandbox{via}; only paths under "
            f"{self.paths.describe_roots()} are allowed (relative paths start in {WORKSPACE})"
        )

    @contextmanager
    def locate(
        self, path: str, *, write: bool = False, follow: bool = True, create_dirs: bool = False
    ) -> Iterator[Location]:
        """Resolve virtual ``path`` by descriptors; the location of its last component.

        ``follow``: a symlink as the last component is followed (in virtual space).
        ``create_dirs``: missing directories on the way are created (writable roots only).
        ``write``: refuse read-only roots. The descriptors are closed when the block ends.
        """
        shown = path if isinstance(path, str) else repr(path)
        if isinstance(path, str) and len(path) > MAX_PATH_CHARS:
            raise SandboxError(f"the path is {len(path)} characters long; paths are at most {MAX_PATH_CHARS}")
        vpath = self.paths.normalize(path)
        pending = deque(c for c in vpath.split("/") if c)
        steps: list[_Step] = []
        links = 0
        try:
            while pending:
                comp = pending.popleft()
                if comp == ".":
                    continue
                if comp == "..":
                    if steps:
                        gone = steps.pop()
                        if gone.fd is not None:
                            os.close(gone.fd)
                    continue
                if len(steps) >= MAX_DEPTH:
                    raise SandboxError(f"{shown[:120]}...: the path is more than {MAX_DEPTH} folders deep")
                self._keep_last_open(steps, shown)
                _check_name(comp, shown)
                current = "/" + "/".join([s.name for s in steps] + [comp])
                root = self._root_exact(current)
                if root is not None:
                    steps.append(_Step(comp, self._open_root(root, shown)))
                    continue
                parent = steps[-1].fd if steps else None
                if parent is None:
                    steps.append(_Step(comp, None))  # a virtual directory above the roots
                    continue
                last = not pending
                if last:
                    target = self._link_target(parent, comp) if follow else None
                    if target is None:
                        steps.append(_Step(comp, None))
                        continue
                else:
                    here = self._root_of(current)
                    creatable = write and create_dirs and here is not None and here.writable
                    if write and create_dirs and not creatable and here is not None:
                        self._refuse_missing(parent, comp, here, shown)  # never a folder made in a read-only root
                    fd, target = self._open_dir(parent, comp, shown, creatable, current)
                    if fd is not None:
                        steps.append(_Step(comp, fd))
                        continue
                links += 1
                if links > _MAX_SYMLINKS:
                    raise PathEscapeError(f"{shown}: too many levels of symbolic links")
                if target.startswith("/"):
                    for step in steps:
                        if step.fd is not None:
                            os.close(step.fd)
                    steps = []
                pending.extendleft(reversed([c for c in target.split("/") if c]))
            final = "/" + "/".join(s.name for s in steps)
            root = self._root_of(final)
            if root is None:
                raise self._escape(shown, final, links)
            if root.virtual == SKILLS_ROOT and not skill_view.visible(final, self.paths.owner):
                raise PathEscapeError(
                    f"{shown}: not in this sandbox's skills; it sees {SKILLS_ROOT}/public, {SKILLS_ROOT}/custom "
                    "and the skills its user installed"
                )
            if write and not root.writable:
                raise _read_only(root, shown)
            self._keep_last_open(steps, shown)
            if final == root.virtual:
                dir_fd, name = steps[-1].fd, "."
            else:
                dir_fd, name = steps[-2].fd, steps[-1].name
            assert dir_fd is not None
            yield Location(final, root, dir_fd, name)
        finally:
            for step in steps:
                if step.fd is not None:
                    os.close(step.fd)

    @staticmethod
    def _refuse_missing(parent: int, name: str, root: VirtualRoot, shown: str) -> None:
        """A write that would create folder ``name`` in read-only ``root``: refused before anything is made."""
        try:
            os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            raise _read_only(root, shown) from None
        except OSError:
            pass  # the walk opens it and says what is wrong

    def _keep_last_open(self, steps: list[_Step], shown: str) -> None:
        """Close the descriptors of all but the last two steps, and reopen those two if a
        ``..`` brought the walk back to steps it had closed (so a path of many folders never
        holds many descriptors)."""
        for step in steps[:-_KEEP_OPEN]:
            if step.fd is not None:
                os.close(step.fd)
                step.fd, step.closed = None, True
        for index in range(max(0, len(steps) - _KEEP_OPEN), len(steps)):
            if steps[index].closed:
                steps[index].fd = self._reopen(steps, index, shown)
                steps[index].closed = False

    def _reopen(self, steps: list[_Step], index: int, shown: str) -> int:
        """A descriptor of ``steps[index]``: from its root, by the canonical names, following
        no link (one that appeared since the walk passed means the path changed: refused)."""
        names = [s.name for s in steps[: index + 1]]
        start = next(i for i in range(index, -1, -1) if self._root_exact("/" + "/".join(names[: i + 1])))
        root = self._root_exact("/" + "/".join(names[: start + 1]))
        assert root is not None
        fd = self._open_root(root, shown)
        try:
            for name in names[start + 1 :]:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
        except OSError:
            os.close(fd)
            raise PathEscapeError(f"{shown}: the path changed while it was used; try again") from None
        return fd

    def _link_target(self, dir_fd: int, name: str) -> str | None:
        """The target of ``name`` in ``dir_fd`` if it is a symlink, else None."""
        try:
            return os.readlink(name, dir_fd=dir_fd)
        except OSError:
            return None  # not a link (EINVAL), or missing: the caller opens it with O_NOFOLLOW

    def _open_dir(self, parent: int, name: str, shown: str, create: bool, current: str) -> tuple[int | None, str]:
        """Open directory ``name`` below ``parent`` without following a link: (fd, "") or
        (None, link target). Creates it first when ``create`` and it is missing."""
        for _ in range(8):
            try:
                return os.open(name, _DIR_FLAGS, dir_fd=parent), ""
            except FileNotFoundError:
                if not create:
                    raise NotFoundError(f"{shown} does not exist ({current} is missing)") from None
                try:
                    os.mkdir(name, 0o755, dir_fd=parent)
                    self._give(parent, name)
                except FileExistsError:
                    pass
                except OSError as exc:
                    raise os_error(exc, shown, "create a folder for") from None
            except (NotADirectoryError, OSError) as exc:
                if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                    raise os_error(exc, shown, "open") from None
                target = self._link_target(parent, name)
                if target is not None:
                    return None, target
                if exc.errno == errno.ENOTDIR:
                    raise NotFoundError(f"{shown} does not exist ({current} is a file, not a folder)") from None
                # ELOOP but no longer a link: it was swapped meanwhile; try again
        raise PathEscapeError(f"{shown}: the path keeps changing while it is used; try again")

    def _give(self, dir_fd: int, name: str) -> None:
        """Hand a new entry to ``owner`` (never following a link)."""
        if self.owner is None:
            return
        try:
            os.chown(name, *self.owner, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            pass

    def resolve_virtual(self, path: str) -> str:
        """The canonical virtual path of ``path`` (links followed in virtual space); refuses escapes."""
        with self.locate(path) as loc:
            return loc.vpath

    # -- reading --------------------------------------------------------------------------

    @contextmanager
    def open_file(self, path: str) -> Iterator[tuple[int, os.stat_result, str]]:
        """An open descriptor of the regular file at ``path``, its ``fstat`` and canonical path."""
        with self.locate(path) as loc:
            try:
                fd = os.open(loc.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=loc.dir_fd)
            except OSError as exc:
                raise os_error(exc, path, "read") from None
        try:
            yield fd, _regular(fd, path), loc.vpath
        finally:
            os.close(fd)

    def read_bytes(self, path: str, limit: int) -> bytes:
        """The bytes of the file at ``path``; a file larger than ``limit`` raises FileTooLarge."""
        with self.open_file(path) as (fd, st, _):
            if st.st_size > limit:
                raise FileTooLargeError(path, st.st_size, limit)
            chunks = []
            total = 0
            while True:
                chunk = os.read(fd, CHUNK)
                if not chunk:
                    break
                total += len(chunk)
                if total > limit:
                    raise FileTooLargeError(path, total, limit)
                chunks.append(chunk)
            return b"".join(chunks)

    def stat(self, path: str, *, follow: bool = True) -> os.stat_result | None:
        """The ``stat`` of ``path`` (links followed in virtual space), or None when missing."""
        try:
            with self.locate(path, follow=follow) as loc:
                try:
                    return os.stat(loc.name, dir_fd=loc.dir_fd, follow_symlinks=False)
                except FileNotFoundError:
                    return None
        except NotFoundError:
            return None

    def exists(self, path: str) -> bool:
        """Whether ``path`` exists (a link leaving the sandbox raises; a dangling one is missing)."""
        return self.stat(path) is not None

    # -- writing --------------------------------------------------------------------------

    def write_bytes(self, path: str, data: bytes, *, append: bool = False) -> str:
        """Write (or append) ``data`` at ``path``, creating parent directories; the canonical path.

        The quota, when there is one, is checked first; a refused write changes nothing.
        """
        with self.locate(path, write=True, create_dirs=True) as loc:
            if loc.name == ".":
                raise SandboxError(f"{path} is a directory, not a file; give a file name")
            flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
            flags |= os.O_APPEND if append else 0
            with self._charged(path, loc, len(data), append):
                existed = self._exists_in(loc)
                try:
                    fd = os.open(loc.name, flags, 0o644, dir_fd=loc.dir_fd)
                except OSError as exc:
                    raise self._write_error(exc, path) from None
                try:
                    st = _regular(fd, path)
                    if not append:
                        os.ftruncate(fd, 0)
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view) :]
                    if self.owner is not None and (st.st_uid, st.st_gid) != self.owner:
                        os.fchown(fd, *self.owner)
                except OSError as exc:
                    if exc.errno == errno.EDQUOT and not existed:
                        os.unlink(loc.name, dir_fd=loc.dir_fd)  # the kernel refused it: no half-written new file
                    raise self._write_error(exc, path) from None
                finally:
                    os.close(fd)
            return loc.vpath

    @staticmethod
    def _exists_in(loc: Location) -> bool:
        try:
            os.stat(loc.name, dir_fd=loc.dir_fd, follow_symlinks=False)
            return True
        except OSError:
            return False

    def _write_error(self, exc: OSError, path: str) -> SandboxError:
        """The error for a failed write: the quota's own message when the kernel held the thread
        to it (``EDQUOT`` on the quota volume), else :func:`os_error`'s."""
        if exc.errno == errno.EDQUOT and self.quota is not None and self.quota.enabled:
            return self.quota.error(f"cannot write {path}", self.quota.usage(fresh=True))
        return os_error(exc, path, "write")

    @contextmanager
    def _charged(self, path: str, loc: Location, size: int, append: bool) -> Iterator[None]:
        if self.quota is None:
            yield
            return
        try:
            old = os.stat(loc.name, dir_fd=loc.dir_fd, follow_symlinks=False)
        except OSError:
            old = None
        grow = size if append or old is None else size - old.st_size
        with self.quota.charge(path, grow, 0 if old is not None else 1):
            yield

    def move_in(self, source_dir_fd: int, source_name: str, path: str) -> str:
        """Move a staged file (outside the thread's roots) to ``path`` with one rename; the
        quota is charged first. Refuses a directory in the way. The canonical path."""
        st = os.stat(source_name, dir_fd=source_dir_fd, follow_symlinks=False)
        with self.locate(path, write=True, create_dirs=True) as loc:
            if loc.name == ".":
                raise SandboxError(f"{path} is a directory, not a file; give a file name")
            try:
                existing = os.stat(loc.name, dir_fd=loc.dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                existing = None
            if existing is not None and stat.S_ISDIR(existing.st_mode):
                raise IsADirectoryError(path)
            with self._charged(path, loc, min(st.st_size, st.st_blocks * 512), False):  # a sparse file: its data
                try:
                    os.replace(source_name, loc.name, src_dir_fd=source_dir_fd, dst_dir_fd=loc.dir_fd)
                except OSError as exc:
                    if exc.errno != errno.EXDEV:
                        raise
                    try:
                        self._copy_across(source_dir_fd, source_name, loc)  # staged on another filesystem
                    except OSError as exc:
                        raise self._write_error(exc, path) from None
                self._give(loc.dir_fd, loc.name)
            return loc.vpath

    def _copy_across(self, source_dir_fd: int, source_name: str, loc: Location) -> None:
        """Move the staged file into ``loc`` when a rename cannot (another filesystem, or another
        btrfs subvolume: the quota volume): copy it beside its target, rename, drop the source."""
        tmp = f".herdsman-in-{os.urandom(6).hex()}"
        src = os.open(source_name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=source_dir_fd)
        try:
            st = _regular(src, loc.vpath)
            dst = os.open(
                tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=loc.dir_fd
            )
            try:
                copy_sparse(src, dst, st.st_size)
                os.fchmod(dst, stat.S_IMODE(st.st_mode))
            except BaseException:
                os.close(dst)
                os.unlink(tmp, dir_fd=loc.dir_fd)
                raise
            os.close(dst)
        finally:
            os.close(src)
        os.replace(tmp, loc.name, src_dir_fd=loc.dir_fd, dst_dir_fd=loc.dir_fd)
        os.unlink(source_name, dir_fd=source_dir_fd)

    def read_link(self, path: str) -> str:
        """The target of the symlink at ``path`` (as written in the sandbox, never followed)."""
        with self.locate(path, follow=False) as loc:
            try:
                return os.readlink(loc.name, dir_fd=loc.dir_fd)
            except OSError as exc:
                raise os_error(exc, path, "read the link") from None

    def make_link(self, path: str, target: str) -> None:
        """Create the symlink ``path`` -> ``target`` (the target is kept as text, as ``ln -s`` does;
        every host-side access treats it as a virtual path and refuses one that leaves the roots)."""
        with self.locate(path, write=True, follow=False, create_dirs=True) as loc:
            try:
                os.symlink(target, loc.name, dir_fd=loc.dir_fd)
            except OSError as exc:
                raise os_error(exc, path, "create the link") from None
            self._give(loc.dir_fd, loc.name)

    def make_dir(self, path: str, mode: int = 0o755) -> None:
        """Create the directory ``path`` (and its parents); nothing happens when it is one already."""
        with self.locate(path, write=True, follow=False, create_dirs=True) as loc:
            if loc.name == ".":
                return
            try:
                os.mkdir(loc.name, mode, dir_fd=loc.dir_fd)
            except FileExistsError:
                return
            except OSError as exc:
                raise os_error(exc, path, "create the folder") from None
            self._give(loc.dir_fd, loc.name)

    def remove_dir(self, path: str) -> None:
        """Remove the empty directory ``path`` (a root is never removed)."""
        with self.locate(path, write=True, follow=False) as loc:
            if loc.name == ".":
                return
            try:
                os.rmdir(loc.name, dir_fd=loc.dir_fd)
            except OSError as exc:
                raise os_error(exc, path, "remove the folder") from None

    def unlink(self, path: str) -> None:
        """Remove the file (or link) at ``path``; the link itself, never what it points to."""
        with self.locate(path, write=True, follow=False) as loc:
            try:
                os.unlink(loc.name, dir_fd=loc.dir_fd)
            except OSError as exc:
                raise os_error(exc, path, "delete") from None

    # -- walking --------------------------------------------------------------------------

    def walk(
        self,
        path: str,
        *,
        max_depth: int = 1 << 30,
        limit: int = 10_000,
        seconds: float = 10.0,
        skip_dirs: frozenset[str] = frozenset(),
        stop: WalkStop | None = None,
        breadth_first: bool = False,
        on_dir: Callable[[int, str], None] | None = None,
    ) -> Iterator[WalkEntry]:
        """The entries below directory ``path`` (links listed, never entered), at most
        ``limit`` of them and for at most ``seconds``; ``stop.reason`` says when it was cut.

        Depth-first in name order by default (``ls -R``'s order); ``breadth_first`` lists top
        folders before their contents. ``on_dir(fd, vpath)`` is called with each folder's open
        descriptor just before the folder is listed (a change journal watches it from there).
        """
        stop = stop if stop is not None else WalkStop()
        deadline = time.monotonic() + seconds
        with self.locate(path) as loc:
            try:
                top = os.open(loc.name, _DIR_FLAGS, dir_fd=loc.dir_fd)
            except OSError as exc:
                if exc.errno in (errno.ENOTDIR, errno.ELOOP):
                    raise SandboxError(f"{path} is a file, not a directory; use read_file to read it") from None
                raise os_error(exc, path, "list") from None
            base = loc.vpath
        yield from walk_open(
            top,
            base,
            self.paths.owner,
            stop,
            deadline,
            seconds,
            max_depth=max_depth,
            limit=limit,
            skip_dirs=skip_dirs,
            breadth_first=breadth_first,
            on_dir=on_dir,
        )


def _data_segments(fd: int, size: int) -> Iterator[tuple[int, int]]:
    """(offset, length) of the data of the file open as ``fd`` (``SEEK_DATA``/``SEEK_HOLE``):
    one segment for a file without holes."""
    offset = 0
    while offset < size:
        try:
            start = os.lseek(fd, offset, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                return  # only a hole is left
            raise
        end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
        if end > start:
            yield start, end - start
        offset = max(end, start + 1)


def copy_sparse(src: int, dst: int, size: int, limit: int | None = None) -> tuple[str, int]:
    """Copy the ``size`` bytes of ``src`` to ``dst``, reading and writing only the data: holes
    are skipped and stay holes, so a terabyte of holes is never read. The digest and the bytes
    copied: a file without holes has the sha256 of its bytes, one with holes the sha256 of its
    size and data segments. Past ``limit`` copied bytes it raises :class:`FileTooLargeError`."""
    segments = list(_data_segments(src, size))
    dense = not size or segments == [(0, size)]
    digest = hashlib.sha256() if dense else hashlib.sha256(f"herdsman-sparse:{size}\n".encode())
    copied = 0
    for start, length in segments:
        if not dense:
            digest.update(f"{start}:{length}\n".encode())
        os.lseek(src, start, os.SEEK_SET)
        os.lseek(dst, start, os.SEEK_SET)
        left = length
        while left > 0 and (chunk := os.read(src, min(CHUNK, left))):
            left -= len(chunk)
            copied += len(chunk)
            if limit is not None and copied > limit:
                raise FileTooLargeError("", copied, limit)
            digest.update(chunk)
            view = memoryview(chunk)
            while view:
                view = view[os.write(dst, view) :]
    os.ftruncate(dst, size)
    return digest.hexdigest(), copied


class FileTooLargeError(SandboxError):
    """The file is larger than the caller accepts."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(f"{path} is {size // 1024} KB, more than the {limit // 1024} KB allowed here")
        self.path, self.size, self.limit = path, size, limit
