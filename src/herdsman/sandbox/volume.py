"""The quota volume: one btrfs filesystem whose quota groups bound each thread's disk in the kernel.

A quota that measures a tree and reacts afterwards is a poll: ``fallocate -l 1000M`` six times
wrote 6 GB in 0.2 s under a 100 MB quota, a file deleted while a process holds it open was never
counted, and a folder the jail made unreadable hid what it held. Only the filesystem can refuse
the write that passes the limit. So, when the gateway runs as root, each thread's ``user-data``
is a btrfs *subvolume* on one loop-mounted volume, with a quota-group limit on the bytes it
references (``sandbox.disk_quota_mb``): the kernel answers ``EDQUOT`` to the write, the
``fallocate`` or the extent that would pass it, counts an unlinked file until its last
descriptor closes, and counts the real blocks of a sparse file. The jail (uid 1000 in a user
namespace) cannot change a limit (``CAP_SYS_ADMIN`` in the first namespace), and the two ways
out of a subvolume's quota group, a nested subvolume or a snapshot, are ioctls that
``seccomp.py`` refuses (a new subvolume does not join its parent's group).

Why btrfs and not XFS or ext4 project quotas: the kernel this runs on has neither
``CONFIG_XFS_QUOTA`` nor ``CONFIG_QFMT_V2`` (XFS mounts with "quota support not available", ext4
refuses ``prjquota``), while btrfs quota groups are part of btrfs itself. Why one volume for the
machine and not one per home: the test suite makes hundreds of homes, only eight loop devices
exist, and a mount inside a temporary folder would block its removal. So:

- the volume is ``sandbox.quota_volume.path`` (default ``/var/lib/herdsman/volume``), a sparse
  image ``<path>.img`` of ``size_gb``, made and mounted on first use under a lock (``mount -o
  loop``: one loop device), then reused by every process and home and never unmounted;
- a thread's data is ``<volume>/<home id>/threads/<id>/user-data`` and ``<home>/threads/<id>/
  user-data`` is a symbolic link to it, made by the harness in a folder no jail sees, so every
  path of the old layout still leads to the files; ``ThreadPaths`` resolves the link once;
- the limit is set again each time a sandbox is made, so a changed ``disk_quota_mb`` applies
  after a restart; a thread whose ``user-data`` is still a plain folder (made before the volume)
  keeps it, with the measured quota only;
- each subvolume also joins the level-1 quota group of its owner (``owners.py``), whose limit is
  ``disk_quota_per_user_mb``, so one user's threads together cannot fill the volume
  (``user_quota.py``); a pool's slot joins none until a thread takes it;
- a home's folder on the volume is named by an id kept in the home (``.quota-volume-id``), not
  by its path, so a project folder that is moved or renamed keeps its threads' files;
- deleting a thread removes its subvolume (``remove_volume_data``); a home that is no longer
  where it was last seen keeps its data for :data:`HOME_GONE_SECONDS` (it may have moved: it
  takes the data back when used again), after which the first provider of a process sweeps it
  away (a deleted home: a test's temporary folder), with the quota groups of subvolumes deleted
  earlier (``btrfs qgroup clear-stale``). A thread being placed holds its folder with a shared
  ``flock`` until its link is made, and the sweep removes only folders it can lock exclusively
  without waiting: another process's sweep (one with no grace, as a test runs it) removed a
  thread mid-placement, and the thread failed with "No such file or directory".

``sandbox.max_files`` stays a host-side count (btrfs has no inode limit; every inode's metadata is
charged to the group's bytes, so a tree of empty files is bounded too). Without root, btrfs-progs
or a loop device, ``mode: auto`` keeps the measured quota and logs once what is then not
enforced; ``mode: required`` refuses to start. The ioctls are called with ``fcntl.ioctl`` (no
Python binding of btrfs's exists; btrfs-progs is only needed to make the filesystem).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import re
import secrets
import shutil
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from herdsman.config.schema import QuotaVolumeConfig
from herdsman.logs import get_logger
from herdsman.sandbox.base import SandboxError
from herdsman.sandbox.owners import owner_of
from herdsman.sandbox.paths import private_dir, write_once
from herdsman.sandbox.tree import remove_tree
from herdsman.sandbox.user_quota import Owner, UserGroups, set_limit

log = get_logger(__name__)

# btrfs ioctls (linux/btrfs.h): _IOW(0x94, 14, struct btrfs_ioctl_vol_args), _IOWR(0x94, 40, struct
# btrfs_ioctl_quota_ctl_args); the quota-group ones are in user_quota.py
SUBVOL_CREATE = 0x5000940E
QUOTA_CTL = 0xC0109428
QUOTA_CTL_ENABLE = 1
SWEEP_GRACE = 120.0  # seconds a subvolume with no link yet is left alone (its link is being made)
# how long the data of a home that is not where it was last seen (moved, renamed, deleted) is kept:
# a moved home takes it back the first time it is used again; a deleted one (a test's) goes after this
HOME_GONE_SECONDS = 7 * 24 * 3600.0
HOME_ID_FILE = ".quota-volume-id"
PLACE_ATTEMPTS = 5  # a thread's folder made again when a sweep removed it meanwhile
QGROUP_MARKER = "qgroup"  # beside a thread's subvolume: the user group it was assigned to
_MKFS_TIMEOUT = 120


class QuotaVolumeError(SandboxError):
    """The quota volume cannot be used; the message says why and what to do."""


def home_id(home: Path) -> str:
    """The id of a Herdsman home, its folder on the volume: kept in the home itself
    (:data:`HOME_ID_FILE`, made on first use), so a home that is moved or renamed keeps its
    threads' data, and a new home made where an old one was gets data of its own."""
    marker = Path(home) / HOME_ID_FILE
    for _ in range(2):
        try:
            found = marker.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            found = ""
        except (OSError, UnicodeDecodeError) as exc:
            raise QuotaVolumeError(
                f"cannot read the home's quota volume id {marker} ({exc}); remove the file"
            ) from None
        if re.fullmatch(r"[0-9a-f]{16}", found):
            return found
        if found:
            raise QuotaVolumeError(f"{marker} does not hold a quota volume id; remove the file")
        write_once(marker, secrets.token_hex(8))
    raise QuotaVolumeError(f"cannot make the home's quota volume id {marker}")


def _mounted_btrfs(path: Path) -> bool:
    """Whether a btrfs filesystem is mounted at ``path``."""
    want = str(path)
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                fields = line.split()
                if len(fields) < 10 or "-" not in fields:
                    continue
                point = fields[4].encode().decode("unicode_escape")
                fstype = fields[fields.index("-") + 1]
                if point == want and fstype == "btrfs":
                    return True
    except OSError:
        return False
    return False


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=_MKFS_TIMEOUT, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise QuotaVolumeError(f"{' '.join(argv[:2])} failed: {(done.stderr or done.stdout).strip()[:300]}")


@dataclass(frozen=True)
class QuotaVolume:
    """A mounted btrfs volume with quota groups on; ``root`` is its mount point."""

    root: Path

    def thread_data(self, home: Path, thread_id: str) -> Path:
        """Where the ``user-data`` subvolume of ``thread_id`` of ``home`` lives on the volume."""
        return self.root / home_id(home) / "threads" / thread_id / "user-data"

    def place(self, home: Path, thread_id: str, quota_bytes: int, owner: Owner | None = None) -> bool:
        """Make ``<home>/threads/<id>/user-data`` a link to a subvolume of the thread limited to
        ``quota_bytes`` (created when missing; the limit set again), counted against the bound
        of ``owner``'s threads (``user_quota.py``; None: no user's, a warm pool's slot). False
        when the thread keeps a plain folder made before the volume was used."""
        link = Path(home) / "threads" / thread_id / "user-data"
        target = self.thread_data(home, thread_id)
        if link.is_symlink():
            if os.readlink(link) != str(target):
                raise QuotaVolumeError(f"thread {thread_id}: its user-data link does not lead to the quota volume")
        elif link.exists():
            return False
        self._place(home, thread_id, quota_bytes, owner)
        return True

    def adopt(self, data: Path, home: Path, thread_id: str, quota_bytes: int, owner: Owner | None = None) -> None:
        """Move the subvolume ``data`` (a warm pool's slot, on this volume) to ``thread_id`` of
        ``home`` and link it there (a bind mount of it follows the rename)."""
        self._place(home, thread_id, quota_bytes, owner, moved=data)

    def _place(
        self, home: Path, thread_id: str, quota_bytes: int, owner: Owner | None, moved: Path | None = None
    ) -> None:
        """Place the thread's subvolume (``moved`` there first, when given), its limits and its
        link, holding its folder against every process's sweep until the link is made."""
        link = Path(home) / "threads" / thread_id / "user-data"
        target = self.thread_data(home, thread_id)
        home_data = target.parents[2]
        home_data.mkdir(mode=0o700, parents=True, exist_ok=True)  # only the gateway's user sees a home's threads
        (home_data / "home").write_text(str(Path(os.path.realpath(home))))
        with _placing(target.parent, thread_id) as parent:
            if moved is not None:
                os.rename(moved, target)
            try:
                args = bytearray(struct.pack("q4088s", 0, b"user-data"))
                fcntl.ioctl(parent, SUBVOL_CREATE, args, True)
            except FileExistsError:
                pass
            fd = os.open("user-data", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
            try:
                set_limit(fd, 0, quota_bytes)  # qgroup 0: the subvolume of fd
                if owner is not None:
                    self._join(fd, target, owner)
            except OSError as exc:
                raise QuotaVolumeError(
                    f"thread {thread_id}: cannot set its disk quota on the volume ({exc.strerror}); "
                    "try again, and if it persists see `btrfs qgroup show -p` on the volume"
                ) from None
            finally:
                os.close(fd)
            private_dir(link.parent.parent)  # threads/ and threads/<id>/ stay 0700 (paths.py)
            private_dir(link.parent)
            try:
                os.symlink(target, link)
            except FileExistsError:
                if not link.is_symlink() or os.readlink(link) != str(target):
                    raise QuotaVolumeError(
                        f"thread {thread_id}: its user-data folder appeared while its volume was made"
                    ) from None

    def _join(self, fd: int, target: Path, owner: Owner) -> None:
        """Count the subvolume open as ``fd`` (at ``target``) against ``owner``'s bound: assigned
        to the user's group once (noted in ``<volume>/<home id>/threads/<id>/qgroup``), the
        group's limit set again each time; joined again when the note names another group or
        one that is gone (``UserGroups.join``)."""
        marker = target.parent / QGROUP_MARKER
        try:
            noted: str | None = marker.read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            noted = None
        name = UserGroups(self.root).join(fd, target.parents[2].name, owner.user, owner.limit_bytes, noted)
        if name != noted:
            marker.unlink(missing_ok=True)
            # no fsync (it took ~12 ms on the volume, on every new thread): the note only saves joining
            # again, and joining again is harmless (the group and the assignment exist: both kept)
            write_once(marker, name, durable=False)

    def owns(self, path: Path) -> bool:
        """Whether ``path`` is a thread's data on this volume."""
        return path.parent.parent.name == "threads" and self.root in path.parents and path.name == "user-data"

    def sweep(self, grace: float | None = None) -> int:
        """Remove the data of threads whose link is gone from their home (a thread folder removed
        by hand), and of homes not seen where they were for :data:`HOME_GONE_SECONDS` (deleted:
        a test's temporary folder); how many threads' data went. A thread's data younger than
        ``grace`` seconds (None: :data:`SWEEP_GRACE`) is left alone: a test that sweeps its own
        volume with none passes 0 here, and the process's sweep of the machine's volume keeps
        its grace."""
        grace = SWEEP_GRACE if grace is None else grace
        removed = 0
        for owner in _listdir(self.root):
            home_file = self.root / owner / "home"
            try:
                home = Path(home_file.read_text())
                last_used = os.stat(home_file).st_mtime
            except OSError:
                continue
            if not _holds_id(home, owner):
                if time.time() - last_used < HOME_GONE_SECONDS:
                    continue  # moved or renamed, maybe: its links still lead here
                threads = _listdir(self.root / owner / "threads")
                with _idle([self.root / owner / "threads" / t for t in threads]) as idle:
                    if idle and time.time() - os.stat(home_file).st_mtime >= HOME_GONE_SECONDS:  # not back meanwhile
                        remove_tree(self.root / owner)
                        removed += len(threads)
                continue
            for thread_id in _listdir(self.root / owner / "threads"):
                data = self.root / owner / "threads" / thread_id
                link = home / "threads" / thread_id / "user-data"
                with _idle([data]) as idle:  # a thread being placed holds its folder: left alone
                    try:
                        linked = link.is_symlink() and os.readlink(link) == str(data / "user-data")
                        young = time.time() - os.lstat(data).st_ctime < grace
                    except OSError:
                        continue
                    if not idle or linked or young:
                        continue
                    remove_tree(data)
                    removed += 1
        return removed


@contextlib.contextmanager
def _placing(folder: Path, thread_id: str) -> Iterator[int]:
    """``folder`` (a thread's folder on the volume, made when missing) open and held with a
    shared ``flock`` for the block: the sweep of any process removes only a folder it can lock
    (:func:`_idle`), so it never removes a thread while its subvolume, limits and link are made
    (the check it made before the lock is made again under it). A folder removed before the
    lock was had is made again."""
    for _ in range(PLACE_ATTEMPTS):
        folder.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            continue  # removed between the two calls
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            if os.fstat(fd).st_nlink == 0:
                continue  # a sweep removed it while we waited for the lock
            yield fd
            return
        finally:
            os.close(fd)
    raise QuotaVolumeError(f"thread {thread_id}: its folder on the quota volume keeps being removed; try again")


@contextlib.contextmanager
def _idle(folders: list[Path]) -> Iterator[bool]:
    """Whether none of ``folders`` (threads' folders on the volume) is being placed: each held
    with an exclusive ``flock`` taken without waiting, for the block (see :func:`_placing`)."""
    held: list[int] = []
    try:
        for folder in folders:
            try:
                fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                continue  # gone already
            held.append(fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
        yield True
    finally:
        for fd in held:
            os.close(fd)


def _holds_id(home: Path, owner: str) -> bool:
    """Whether the home last seen at ``home`` is still there (it holds the id ``owner``)."""
    try:
        return (home / HOME_ID_FILE).read_text(encoding="ascii").strip() == owner
    except (OSError, UnicodeDecodeError):
        return False


def _listdir(path: Path) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def remove_volume_data(link: Path) -> None:
    """Remove the subvolume ``link`` (a thread's ``user-data`` link) leads to, when it is one on a
    quota volume; the link itself is left to the caller."""
    if not link.is_symlink():
        return
    target = Path(os.readlink(link))
    if not target.is_absolute() or target.name != "user-data" or target.parent.parent.name != "threads":
        return
    if len(target.parents) < 5 or not _mounted_btrfs(target.parents[3]):
        return  # not a volume's layout (<volume>/<home id>/threads/<id>/user-data)
    remove_tree(target.parent)  # <volume>/<home id>/threads/<id>: the subvolume and its folder


def _make(path: Path, size_gb: int) -> QuotaVolume:
    """Mount the volume at ``path`` (made first, ``size_gb`` sparse, when its image is missing)."""
    root = Path(path)
    image = Path(f"{root}.img")
    root.parent.mkdir(parents=True, exist_ok=True)
    lock = os.open(f"{root}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one process makes and mounts it; the others wait, then reuse it
        if not _mounted_btrfs(root):
            mkfs = shutil.which("mkfs.btrfs") or shutil.which("mkfs.btrfs", path="/usr/sbin:/sbin")
            if not image.exists():
                if mkfs is None:
                    raise QuotaVolumeError("mkfs.btrfs is missing; install btrfs-progs (scripts/install-system.sh)")
                fd = os.open(image, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
                try:
                    os.ftruncate(fd, size_gb * 1024**3)
                finally:
                    os.close(fd)
                try:
                    _run([mkfs, "-q", str(image)])
                except QuotaVolumeError:
                    image.unlink(missing_ok=True)
                    raise
            root.mkdir(mode=0o755, exist_ok=True)
            _run(["mount", "-t", "btrfs", "-o", "loop,discard=async,nosuid,nodev", str(image), str(root)])
            log.info("quota_volume_mounted", path=str(root), size_gb=size_gb)
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fcntl.ioctl(fd, QUOTA_CTL, bytearray(struct.pack("QQ", QUOTA_CTL_ENABLE, 0)), True)
        except OSError as exc:
            if exc.errno != errno.EEXIST:
                raise QuotaVolumeError(f"cannot turn quota groups on ({exc.strerror})") from None
        finally:
            os.close(fd)
        os.chmod(root, 0o711)  # no user lists the homes on it
    finally:
        os.close(lock)
    return QuotaVolume(root)


_LOCK = threading.Lock()
_WARNED: set[str] = set()


@functools.cache
def _volume(path: Path, size_gb: int) -> QuotaVolume | str:
    """The volume, or why it cannot be had (once per process and setting)."""
    if os.geteuid() != 0:
        return "the gateway does not run as root (mounting the volume needs it)"
    try:
        volume = _make(path, size_gb)
    except (QuotaVolumeError, OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    threading.Thread(target=_sweep_quietly, args=(volume,), name="herdsman-volume-sweep", daemon=True).start()
    return volume


def _sweep_quietly(volume: QuotaVolume) -> None:
    """Sweep the volume, then drop the quota groups of subvolumes deleted before (a deleted
    subvolume leaves its group behind until it is fully dropped; ``clear-stale`` skips the
    ones still busy)."""
    try:
        removed = volume.sweep()
        btrfs = shutil.which("btrfs") or shutil.which("btrfs", path="/usr/bin:/bin:/usr/sbin:/sbin")
        if btrfs:
            subprocess.run(
                [btrfs, "qgroup", "clear-stale", str(volume.root)], capture_output=True, timeout=60, check=False
            )
        UserGroups(volume.root).drop_gone_groups()
    except Exception as exc:  # noqa: BLE001 - housekeeping is best effort
        log.warning("quota_volume_sweep_failed", error=str(exc))
        return
    if removed:
        log.info("quota_volume_swept", threads=removed)


NOT_ENFORCED = (
    "the disk quota is measured, not enforced by the kernel: a command may pass sandbox.disk_quota_mb "
    "before it is stopped (fallocate, files deleted while still open are not counted)"
)


def quota_volume(config: QuotaVolumeConfig, quota_mb: int | None) -> QuotaVolume | None:
    """The volume to place threads on, or None (no quota, ``mode: off``, or unavailable under
    ``mode: auto``: then a warning says once what is not enforced). Raises QuotaVolumeError
    under ``mode: required`` when it cannot be had."""
    if quota_mb is None or config.mode == "off":
        return None
    with _LOCK:
        found = _volume(Path(config.path).expanduser(), config.size_gb)
    if isinstance(found, QuotaVolume):
        return found
    if config.mode == "required":
        raise QuotaVolumeError(
            f"sandbox.quota_volume.mode is required but the quota volume at {config.path} cannot be used: "
            f"{found}. Run the gateway as root with btrfs-progs installed, or set sandbox.quota_volume.mode: auto"
        )
    if found not in _WARNED:
        _WARNED.add(found)
        log.warning(
            "quota_volume_unavailable",
            reason=found,
            consequence=NOT_ENFORCED,
            fix="run as root with btrfs-progs, see docs/security.md",
        )
    return None


def thread_owner(home: Path, thread_id: str, config: Any) -> Owner:
    """The owner of ``thread_id`` of ``home`` (``owners.py``) with the bound of all their threads,
    ``config.disk_quota_per_user_mb`` (the SandboxConfig)."""
    per_user = config.disk_quota_per_user_mb
    return Owner(owner_of(home, thread_id), per_user * 1024 * 1024 if per_user is not None else None)


def place_on_volume(volume: QuotaVolume | None, home: Path, thread_id: str, config: Any) -> None:
    """Put the thread's ``user-data`` on ``volume`` with ``config.disk_quota_mb`` (the
    SandboxConfig) as its limit, counted against its owner's ``disk_quota_per_user_mb``;
    nothing without a volume."""
    if volume is not None and config.disk_quota_mb is not None:
        volume.place(home, thread_id, config.disk_quota_mb * 1024 * 1024, thread_owner(home, thread_id, config))
