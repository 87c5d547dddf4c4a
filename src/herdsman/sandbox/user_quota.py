"""One user's threads together held to ``sandbox.disk_quota_per_user_mb`` by the kernel.

Each thread's subvolume on the quota volume has its own quota group (``0/<subvolume id>``,
limited to ``disk_quota_mb``), but a user may have a thousand threads: 33 threads of 2 GiB fill
a 64 GiB volume, and every other user's writes then fail. btrfs groups quota groups in levels:
each user of a home gets a level-1 group ``1/<n>`` with its own limit, and each of the user's
thread subvolumes is assigned to it when it is made (empty, so the kernel's accounting stays
exact without a rescan). A write that would take the user's group past its limit fails with
``EDQUOT`` like one past the thread's own.

``n`` comes from a table on the volume (``users.json``, ``{"<home id>/<user>": n}``, changed
under a lock): ids are handed out in order and never reused while their home exists, so two
users never share a group (a hash into the 48-bit range could collide). A home's users are
keyed by the home's id, so the same user name in two homes gets two bounds. Threads with no
known user are the local user, keyed ``<home id>/`` (an empty name, which no API key's user has).
Groups of homes gone from the volume are dropped by :func:`drop_gone_groups` (the sweep).

Hand-written on ``fcntl.ioctl`` like ``volume.py``: no Python binding of btrfs's exists. The
struct layouts are those of ``linux/btrfs.h``.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import structlog

log = structlog.get_logger(__name__)

# _IOW(0x94, 41, struct btrfs_ioctl_qgroup_assign_args {u64 assign, src, dst})
QGROUP_ASSIGN = 0x40189429
# _IOW(0x94, 42, struct btrfs_ioctl_qgroup_create_args {u64 create, qgroupid})
QGROUP_CREATE = 0x4010942A
# _IOR(0x94, 43, struct btrfs_ioctl_qgroup_limit_args {u64 qgroupid; struct btrfs_qgroup_limit})
QGROUP_LIMIT = 0x8030942B
# _IOWR(0x94, 18, struct btrfs_ioctl_ino_lookup_args {u64 treeid, objectid; char name[4080]})
INO_LOOKUP = 0xD0009412
LIMIT_MAX_RFER = 1
NO_LIMIT = 2**64 - 1  # the kernel's "clear this limit"
FIRST_FREE_OBJECTID = 256  # the root directory of every subvolume
TABLE = "users.json"
MAX_INDEX = 2**48 - 1


def qgroup(level: int, index: int) -> int:
    """The 64-bit id of quota group ``<level>/<index>``."""
    return (level << 48) | index


def subvolume_id(fd: int) -> int:
    """The id of the subvolume the open directory ``fd`` is in (its level-0 group's index)."""
    args = bytearray(struct.pack("QQ4080s", 0, FIRST_FREE_OBJECTID, b""))
    fcntl.ioctl(fd, INO_LOOKUP, args, True)
    return struct.unpack_from("Q", args)[0]


def set_limit(fd: int, group: int, limit_bytes: int | None) -> None:
    """Limit the bytes quota group ``group`` references (None: no limit); ``fd`` is any
    directory on the volume (group 0 means the subvolume of ``fd``)."""
    args = bytearray(struct.pack("6Q", group, LIMIT_MAX_RFER, NO_LIMIT if limit_bytes is None else limit_bytes, 0, 0, 0))
    fcntl.ioctl(fd, QGROUP_LIMIT, args, True)


def _create(fd: int, group: int, create: bool) -> None:
    fcntl.ioctl(fd, QGROUP_CREATE, bytearray(struct.pack("QQ", int(create), group)), True)


def _assign(fd: int, member: int, group: int) -> None:
    fcntl.ioctl(fd, QGROUP_ASSIGN, bytearray(struct.pack("QQQ", 1, member, group)), True)


def _key(home_id: str, user: str | None) -> str:
    return f"{home_id}/{user or ''}"


class UserGroups:
    """The level-1 quota groups of the users of the volume at ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _edit(self, change: Callable[[dict[str, int]], bool]) -> dict[str, int]:
        """Run ``change(table)`` on the table under its lock; write it back when it returns True."""
        lock = os.open(self.root / f".{TABLE}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            path = self.root / TABLE
            try:
                table = json.loads(path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                table = {}
            except ValueError:
                table = None
            if not isinstance(table, dict) or not all(isinstance(n, int) for n in table.values()):
                raise OSError(errno.EIO, f"the user quota group table {path} is damaged; restore it, or remove it "
                              "and every 1/<n> quota group (btrfs qgroup destroy) before the next start")
            if change(table):
                temporary = path.with_name(f".{TABLE}.{os.getpid()}")
                fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
                try:
                    os.write(fd, json.dumps(table, sort_keys=True).encode())
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.replace(temporary, path)
            return table
        finally:
            os.close(lock)

    def index_of(self, home_id: str, user: str | None) -> int:
        """The index ``n`` of the group ``1/n`` of ``user`` of the home ``home_id`` (handed out
        on first use)."""
        key = _key(home_id, user)

        def add(table: dict[str, int]) -> bool:
            if key in table:
                return False
            table[key] = max(table.values(), default=0) + 1
            return True

        index = self._edit(add)[key]
        if not 0 < index <= MAX_INDEX:
            raise OSError(errno.EIO, f"the user quota group table {self.root / TABLE} holds a bad index for {key!r}")
        return index

    def join(self, fd: int, home_id: str, user: str | None, limit_bytes: int | None) -> str:
        """Assign the subvolume open as ``fd`` to the group of ``user`` of ``home_id`` (made
        when missing), and set that group's limit; the group's name, ``1/<n>``."""
        index = self.index_of(home_id, user)
        group = qgroup(1, index)
        try:
            _create(fd, group, True)
        except FileExistsError:
            pass
        try:
            _assign(fd, qgroup(0, subvolume_id(fd)), group)
        except FileExistsError:
            pass  # assigned already (another process placed the thread at once)
        set_limit(fd, group, limit_bytes)
        return f"1/{index}"

    def limit(self, fd: int, home_id: str, user: str | None, limit_bytes: int | None) -> None:
        """Set the limit of the group of ``user`` of ``home_id`` again (a changed setting
        applies after a restart)."""
        set_limit(fd, qgroup(1, self.index_of(home_id, user)), limit_bytes)

    def drop_gone_groups(self) -> int:
        """Remove the groups of homes whose folder is gone from the volume (a group whose
        subvolumes are not dropped yet is kept for the next sweep); how many went."""
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        dropped: list[str] = []

        def drop(table: dict[str, int]) -> bool:
            for key, index in list(table.items()):
                if (self.root / key.split("/", 1)[0]).exists():
                    continue
                try:
                    _create(fd, qgroup(1, index), False)
                except OSError as exc:
                    if exc.errno != errno.ENOENT:
                        continue  # EBUSY: members left until the cleaner drops them
                del table[key]
                dropped.append(key)
            return bool(dropped)

        try:
            self._edit(drop)
        finally:
            os.close(fd)
        if dropped:
            log.info("quota_volume_user_groups_dropped", count=len(dropped))
        return len(dropped)


@dataclass(frozen=True)
class Owner:
    """Whose bound a thread's subvolume counts against: ``user`` (None: the local user) and
    the bound of all that user's threads (None: none)."""

    user: str | None
    limit_bytes: int | None
