"""One user's threads together held to ``sandbox.disk_quota_per_user_mb`` by the kernel.

Each thread's subvolume on the quota volume has its own quota group (``0/<subvolume id>``,
limited to ``disk_quota_mb``), but a user may have a thousand threads: 33 threads of 2 GiB fill
a 64 GiB volume, and every other user's writes then fail. btrfs groups quota groups in levels:
each user of a home gets a level-1 group ``1/<n>`` with its own limit, and each of the user's
thread subvolumes is assigned to it when it is made (empty, so the kernel's accounting stays
exact without a rescan). A write that would take the user's group past its limit fails with
``EDQUOT`` like one past the thread's own.

``n`` comes from an index on the volume, one small file a user of a home
(``.user-groups/<home id>/<sha-256 of the user>``, holding ``{"user": ..., "index": n}``), so a
new thread's sandbox reads one file whatever the number of homes and users on the machine (a
single table of every user of every home, read and checked whole for each new thread, grew with
each home, test homes included, and let anyone's growth slow everyone's). Ids are handed out
under a lock (``.user-groups.lock``, ``flock``, so every process of the machine agrees) from a
counter that only goes up (``.user-groups/.next``, written before the entry it numbers: a crash
leaves a hole, never a reuse), so two users never share a group (a hash into the 48-bit range
could collide). An entry is written to a temporary name and renamed into place, so a reader
without the lock sees it whole or not at all; a missing entry is looked up again under the lock
before one is made. A home's users are keyed by the home's id, so the same user name in two homes
gets two bounds. Threads with no known user are the local user (an empty name, which no API key's
user has). Entries and groups of homes gone from the volume are dropped by
:func:`UserGroups.drop_gone_groups` (the sweep).

The table of earlier versions (``users.json``, ``{"<home id>/<user>": n}``) is read once, under
the lock, when the index has no counter yet: its entries are copied, and the counter starts
:data:`LEGACY_GAP` past its largest id, because a process of the earlier version still running
against the same volume keeps handing out ids after that largest one from the table it alone
still writes. Once no such process runs, the table can be deleted.

Hand-written on ``fcntl.ioctl`` like ``volume.py``: no Python binding of btrfs's exists. The
struct layouts are those of ``linux/btrfs.h``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from herdsman.logs import get_logger

log = get_logger(__name__)

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
TABLE = "users.json"  # the table of earlier versions, read once to carry its ids over
INDEX = ".user-groups"  # <volume>/.user-groups/<home id>/<sha-256 of the user>
COUNTER = ".next"  # in INDEX: the next id to hand out
LOCK = ".user-groups.lock"
LEGACY_GAP = 2**32  # ids a process of an earlier version may still hand out from TABLE
MAX_INDEX = 2**48 - 1


def qgroup(level: int, index: int) -> int:
    """The 64-bit id of quota group ``<level>/<index>``."""
    return (level << 48) | index


def subvolume_id(fd: int) -> int:
    """The id of the subvolume the open directory ``fd`` is in (its level-0 group's index)."""
    args = bytearray(struct.pack("QQ4080s", 0, FIRST_FREE_OBJECTID, b""))
    fcntl.ioctl(fd, INO_LOOKUP, args, True)
    return int(struct.unpack_from("Q", args)[0])


def set_limit(fd: int, group: int, limit_bytes: int | None) -> None:
    """Limit the bytes quota group ``group`` references (None: no limit); ``fd`` is any
    directory on the volume (group 0 means the subvolume of ``fd``)."""
    args = bytearray(
        struct.pack("6Q", group, LIMIT_MAX_RFER, NO_LIMIT if limit_bytes is None else limit_bytes, 0, 0, 0)
    )
    fcntl.ioctl(fd, QGROUP_LIMIT, args, True)


def _create(fd: int, group: int, create: bool) -> None:
    fcntl.ioctl(fd, QGROUP_CREATE, bytearray(struct.pack("QQ", int(create), group)), True)


def _assign(fd: int, member: int, group: int, assign: bool = True) -> None:
    fcntl.ioctl(fd, QGROUP_ASSIGN, bytearray(struct.pack("QQQ", int(assign), member, group)), True)


def _parse_group(name: str | None) -> int | None:
    """The id of the level-1 group named ``1/<n>`` (None: not such a name)."""
    level, _, index = (name or "").partition("/")
    if level != "1" or not index.isdigit() or not 0 < int(index) <= MAX_INDEX:
        return None
    return qgroup(1, int(index))


def _key(home_id: str, user: str | None) -> str:
    return f"{home_id}/{user or ''}"


def _entry_name(user: str | None) -> str:
    """The file name of ``user``'s entry in a home's folder of the index (any user name, fixed length)."""
    return hashlib.sha256((user or "").encode("utf-8", "surrogatepass")).hexdigest()


def _parse(raw: bytes) -> tuple[str, int] | None:
    """The user and id an entry holds (None: not an entry)."""
    try:
        entry = json.loads(raw)
        user, index = entry["user"], entry["index"]
    except (ValueError, TypeError, KeyError):
        return None
    if not isinstance(user, str) or type(index) is not int or not 0 < index <= MAX_INDEX:
        return None
    return user, index


def _write_whole(path: Path, data: bytes, sync: bool = True) -> None:
    """Write ``data`` to ``path`` under a temporary name, then rename it there: a reader sees the
    old file or the new one, never a part (under the index's lock, so the pid names it alone)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, path)


def _listdir(path: Path) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


class UserGroups:
    """The level-1 quota groups of the users of the volume at ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.index = self.root / INDEX

    @contextlib.contextmanager
    def _locked(self, exclusive: bool) -> Iterator[None]:
        """Hold the index's lock, shared to read an entry, exclusive to change the index (every
        process of the machine takes the same ``flock``)."""
        lock = os.open(self.root / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            yield
        finally:
            os.close(lock)

    def _entry(self, home_id: str, user: str | None) -> Path:
        if not home_id or home_id.startswith(".") or "/" in home_id or "\0" in home_id:
            raise OSError(errno.EINVAL, f"not a home id: {home_id!r}")
        return self.index / home_id / _entry_name(user)

    def _read(self, path: Path, user: str | None) -> int | None:
        """The id the entry at ``path`` gives ``user`` (None: no entry yet)."""
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        found = _parse(raw)
        if found is None or found[0] != (user or ""):
            raise OSError(
                errno.EIO,
                f"the user quota group entry {path} is damaged; restore it (the user's 1/<n> "
                "quota group: btrfs qgroup show -p), or remove it and that group (btrfs qgroup destroy)",
            )
        return found[1]

    def index_of(self, home_id: str, user: str | None) -> int:
        """The index ``n`` of the group ``1/n`` of ``user`` of the home ``home_id`` (handed out
        on first use): one entry read, whatever the number of homes and users."""
        with self._held(home_id, user) as index:
            return index

    @contextlib.contextmanager
    def _held(self, home_id: str, user: str | None) -> Iterator[int]:
        """The index of ``user``'s group (handed out on first use), the index's lock held until
        the block ends: shared when the entry was there, exclusive when it is made. The sweep
        (:meth:`drop_gone_groups`) takes the lock exclusive, so it never drops a group between
        the lookup and what the block does with the group."""
        path = self._entry(home_id, user)
        with self._locked(exclusive=False):
            index = self._read(path, user)
            if index is not None:
                yield index
                return
        with self._locked(exclusive=True):
            counter = self._counter()  # the earlier versions' table carried over first: it may hold the entry
            index = self._read(path, user)  # or another process made it meanwhile
            if index is None:
                index = self._next(counter)
                path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                _write_whole(path, json.dumps({"user": user or "", "index": index}).encode())
            yield index

    def _counter(self) -> Path:
        """The counter's file (under the exclusive lock), made on first use from the table of
        earlier versions (see the module docstring)."""
        counter = self.index / COUNTER
        if not counter.exists():
            _write_whole(counter, str(self._carry_over()).encode())
        return counter

    @staticmethod
    def _next(counter: Path) -> int:
        """A new id, the counter moved past it first (under the exclusive lock)."""
        text = counter.read_text(encoding="ascii")
        if not text.isdigit() or not 0 < int(text) <= MAX_INDEX:
            raise OSError(
                errno.EIO,
                f"the user quota group counter {counter} is damaged; write into it a number "
                "past every 1/<n> quota group of the volume (btrfs qgroup show)",
            )
        index = int(text)
        _write_whole(counter, str(index + 1).encode())
        return index

    def _carry_over(self) -> int:
        """Copy the entries of the earlier versions' table into the index; the first id to hand
        out after them (1 without one)."""
        path = self.root / TABLE
        try:
            table = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            table = {}
        except ValueError:
            table = None
        if not isinstance(table, dict) or not all(type(n) is int and 0 < n <= MAX_INDEX for n in table.values()):
            raise OSError(
                errno.EIO,
                f"the user quota group table {path} is damaged; restore it, or remove it "
                "and every 1/<n> quota group (btrfs qgroup destroy) before the next start",
            )
        self.index.mkdir(mode=0o700, exist_ok=True)
        for key, index in table.items():
            home_id, _, user = key.partition("/")
            entry = self._entry(home_id, user)
            entry.parent.mkdir(mode=0o700, exist_ok=True)
            _write_whole(entry, json.dumps({"user": user, "index": index}).encode(), sync=False)
        if table:
            os.sync()  # every copied entry on disk before the counter says they are all there
            log.info("quota_volume_user_table_carried_over", entries=len(table))
            return int(max(table.values())) + 1 + LEGACY_GAP
        return 1

    def join(self, fd: int, home_id: str, user: str | None, limit_bytes: int | None, noted: str | None = None) -> str:
        """Count the subvolume open as ``fd`` against the group of ``user`` of ``home_id`` and
        set that group's limit; the group's name, ``1/<n>``. ``noted``: the group the subvolume
        was assigned to before (the thread's note). When that is still the user's group and it
        exists, only its limit is set again; otherwise the group is made when missing and the
        subvolume assigned to it (and taken out of the noted group): a thread whose owner was
        noted after its files were placed, or whose group is gone, is counted again, never
        refused."""
        with self._held(home_id, user) as index:
            group, name = qgroup(1, index), f"1/{index}"
            if noted == name:
                try:
                    set_limit(fd, group, limit_bytes)
                    return name
                except FileNotFoundError:
                    log.warning("quota_volume_user_group_made_again", group=name, home=home_id)
            with contextlib.suppress(FileExistsError):
                _create(fd, group, True)
            member = qgroup(0, subvolume_id(fd))
            with contextlib.suppress(FileExistsError):  # assigned already (another process placed the thread at once)
                _assign(fd, member, group)
            set_limit(fd, group, limit_bytes)
        old = _parse_group(noted)
        if old is not None and old != group:
            with contextlib.suppress(OSError):  # gone already, or never joined: nothing to leave
                _assign(fd, member, old, assign=False)
        return name

    def drop_gone_groups(self) -> int:
        """Remove the groups and entries of homes whose folder is gone from the volume (a group
        whose subvolumes are not dropped yet is kept for the next sweep); how many went."""
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        dropped = 0
        try:
            with self._locked(exclusive=True):
                for home in _listdir(self.index):
                    folder = self.index / home
                    if home.startswith(".") or (self.root / home).exists():
                        continue
                    for name in _listdir(folder):
                        if name.startswith("."):  # a write cut short
                            with contextlib.suppress(OSError):
                                (folder / name).unlink()
                            continue
                        try:
                            found = _parse((folder / name).read_bytes())
                        except OSError:
                            continue
                        if found is None:
                            continue  # damaged: left for a person to look at
                        try:
                            _create(fd, qgroup(1, found[1]), False)
                        except OSError as exc:
                            if exc.errno != errno.ENOENT:
                                continue  # EBUSY: members left until the cleaner drops them
                        (folder / name).unlink()
                        dropped += 1
                    with contextlib.suppress(OSError):
                        folder.rmdir()  # empty once every group went
        finally:
            os.close(fd)
        if dropped:
            log.info("quota_volume_user_groups_dropped", count=dropped)
        return dropped


@dataclass(frozen=True)
class Owner:
    """Whose bound a thread's subvolume counts against: ``user`` (None: the local user) and
    the bound of all that user's threads (None: none)."""

    user: str | None
    limit_bytes: int | None
