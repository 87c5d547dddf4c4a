"""What changed in a thread's files since their last captured version: the kernel's change journal.

A version of the thread's files is captured after every checkpoint (:mod:`~herdsman.sandbox.history`).
Walking 10,000 files to learn that a step which only read them changed nothing cost tens of
milliseconds a step; with this journal the capture asks the kernel instead. Every folder the last
capture walked carries an inotify watch (one inotify instance per process, shared by every thread),
added *before* the folder is listed: a change made after the listing is in the journal, a change
made before it is in the listing. The capture drains the journal first (:meth:`ChangeJournal.take`):

- no event for the thread: nothing under ``/mnt/user-data`` changed, the version is the last one
  (no walk, not one ``stat``);
- events in some folders: only the entries the events name are looked at again (a folder with
  an event on itself is listed again whole), and a file an event names is read again even when
  its size and times look the same;
- anything the journal cannot vouch for (:attr:`Changes.trusted` is False): the whole tree is walked
  as before, and watched again.

Why the kernel and not the tool calls of the step: which tools ran (``read_file``, ``ls``, ``glob``
and ``grep`` cannot write; ``write_file``, ``str_replace``, ``bash`` and uploads can) tells what
*this step* did, not what else writes the thread's files: a process a command left behind (the
docker provider sweeps those only once the container is idle; an unisolated host shell cannot kill
one that left its session and cleared its marker), an upload through another gateway process, a
restore or a copy made by another worker, a middleware writing an output. The kernel queues an event
for every write by every process, in the jail or not, in this process or not, before the write
returns, so whatever was written before the capture drains the journal is in it: a background
writer's or a middleware's files are versioned by the next checkpoint that can be restored.

Seen, and how (the attacker's view):

- a rewrite of the same size, ``touch -d`` to an old time, ``chmod``: ``IN_MODIFY``/``IN_ATTRIB``
  on the folder's watch whatever times the writer sets (and the file is read again, so a rewrite
  within the file system's timestamp tick is not missed either, as a stat comparison could);
- create, delete, rename within, into or out of the tree: ``IN_CREATE``/``IN_DELETE``/``IN_MOVED_*``;
  a folder removed or moved, or a watch lost (``IN_IGNORED``, ``IN_DELETE_SELF``, ``IN_MOVE_SELF``),
  makes the next capture walk everything;
- hard links: ``ln`` sends ``IN_CREATE`` for the new name and nothing to the other name's folder,
  and a write through one name is reported to that name's folder only. So a capture that meets a
  regular file with more than one link walks everything (and so does every capture while one
  exists); a name made or moved in, written, and gone or replaced before the capture (``ln a t;
  echo x > t; rm t``, or a write through a descriptor of a name deleted since) makes the capture
  walk (:meth:`Changes.maybe_linked`), while a new file moved over another (``sed -i``, atomic
  writes) is followed to where it went. A link from the tree to a name outside every watched folder,
  written through and removed between two captures, stays unseen until a walk; bubblewrap and
  containers mount the thread's folders on mounts of their own, where such a link fails (``EXDEV``,
  tested); an unisolated host shell could make one (that mode can write the history itself: it
  isolates nothing);
- writes through a shared memory mapping send no event: one made after the capture that follows
  the mapping's ``close`` can only come from a process that outlives its command (bubblewrap kills
  the command's whole pid namespace; the docker provider sweeps leftovers once idle); the walk of
  every :data:`TRUST_SECONDS` bounds the rest, and so any other blind spot;
- lost events: a queue overflow distrusts every thread; a process forked after the journal opened
  opens its own (the parent's descriptor is not shared); a thread whose watches do not fit in
  :attr:`ChangeJournal.max_watches` (least recently captured threads lose theirs first) walks;
- file systems where the kernel does not see every writer (NFS, CIFS, FUSE, overlay, ...) are never
  trusted: only the local types in :data:`LOCAL_FILESYSTEMS`, read from ``/proc/self/mountinfo``.

Built on ``inotify_simple`` (a thin ctypes wrapper): watchdog and watchfiles run their own threads
and report paths later, debounced; a capture needs "any event before this instant", which is one
non-blocking read of the descriptor.
"""

from __future__ import annotations

import os
import select
import threading
import time
from collections import OrderedDict
from ctypes import c_int
from dataclasses import dataclass, field
from fcntl import ioctl
from pathlib import Path
from termios import FIONREAD

from herdsman.logs import get_logger

log = get_logger(__name__)

try:
    from inotify_simple import INotify
except ImportError:  # pragma: no cover - a dependency; without it every capture walks
    INotify = None  # type: ignore[assignment,misc]  # the optional import's fallback: callers check for None

# the kernel ABI values of <sys/inotify.h> (inotify_simple.flags has the same)
IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_UNMOUNT, IN_Q_OVERFLOW, IN_IGNORED = 0x400, 0x800, 0x2000, 0x4000, 0x8000
IN_ONLYDIR, IN_ISDIR = 0x01000000, 0x40000000
WATCH_MASK = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
)
_WATCH_LOST = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED
_FOLDER_GONE = IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO  # with IN_ISDIR: a sub-folder left or came whole

TRUST_SECONDS = 60.0  # the whole tree is walked at least this often, whatever the journal says
LOCAL_FILESYSTEMS = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs", "bcachefs", "zfs", "jfs", "reiserfs"}
)
DEFAULT_MAX_WATCHES = 65_536
QUIET_READ_BYTES = 4096  # events :meth:`ChangeJournal.quiet` reads at most (about 100): it may run on an event loop

Key = object


@dataclass
class Changes:
    """What happened to one thread's files since the last :meth:`ChangeJournal.take`."""

    trusted: bool  # False: the journal cannot vouch for the folders below; walk them all
    dirs: set[str] = field(default_factory=set)  # folders (virtual paths) whose entries changed
    names: dict[str, int] = field(default_factory=dict)  # entries (virtual paths) an event named -> its events
    whole: set[str] = field(default_factory=set)  # folders with an event on themselves: list them again whole
    unpaired: set[str] = field(default_factory=set)  # entries moved to where no watch of the thread saw them arrive

    def maybe_linked(self, vpath: str, *, present: bool, tracked: bool) -> bool:
        """Whether the entry ``vpath`` may have been a second name of another file, written
        through while it lasted: an event changed what it named (or moved it in or on), it is gone
        or was replaced since (``present``: a regular file is there now), and it was made in the
        meantime or was not in the last version (``tracked``). ``ln`` sends no event to the other
        name's folder, so the capture must then walk. A name moved on to a name of the thread is
        followed there instead (``sed -i``, atomic writes), unless it was also deleted."""
        mask = self.names.get(vpath, 0)
        born = mask & (IN_CREATE | IN_MOVED_TO) or not tracked
        touched = mask & (IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB | IN_MOVED_TO)
        left = not present or mask & (IN_DELETE | IN_MOVED_FROM)
        followed = mask & IN_MOVED_FROM and not mask & IN_DELETE and vpath not in self.unpaired
        return bool(born and touched and left and not followed)


class _Watched:
    """The journal's record of one thread."""

    def __init__(self) -> None:
        self.wds: dict[int, str] = {}  # watch descriptor -> folder
        self.trusted = False
        self.walk_ok = False  # the walk under way was not disturbed (no watch lost or refused meanwhile)
        self.fresh: set[int] | None = None  # watches added by the walk under way
        self.walked = 0.0  # monotonic time of the last whole walk
        self.dirs: set[str] = set()
        self.names: dict[str, int] = {}
        self.whole: set[str] = set()
        self.unpaired: set[str] = set()

    def distrust(self) -> None:
        self.trusted = False
        self.walk_ok = False


class ChangeJournal:
    """One process's inotify watches over the folders of the threads it captures (see the module
    docstring). Thread-safe; every method is cheap and none raises: when inotify is missing or
    refuses, the threads concerned are simply not trusted."""

    def __init__(self, max_watches: int | None = None) -> None:
        """``max_watches``: bound on this process's watches (default: half the user's limit)."""
        self.max_watches = max_watches or _default_max_watches()
        self._lock = threading.RLock()
        self._inotify: INotify | None = None
        self._pid = -1
        self._threads: OrderedDict[Key, _Watched] = OrderedDict()  # least recently captured first
        self._owners: dict[int, Key] = {}

    def _open(self) -> INotify | None:
        if self._pid != os.getpid():  # first use, or a child forked after: the parent's queue is not ours
            if self._inotify is not None:
                self._inotify.close()
            self._threads.clear()
            self._owners.clear()
            self._pid = os.getpid()
            try:
                self._inotify = INotify(nonblocking=True) if INotify is not None else None
            except (OSError, AttributeError) as exc:  # no inotify (not Linux, limit of instances reached)
                log.warning("change_journal_unavailable", error=str(exc))
                self._inotify = None
        return self._inotify

    def _drain(self, inotify: INotify) -> None:
        try:
            events = inotify.read(timeout=0)
        except OSError:  # pragma: no cover - the descriptor is ours; treat as lost events
            events = [None]
        for i, event in enumerate(events):
            if event is None or event.mask & IN_Q_OVERFLOW:
                for each in self._threads.values():
                    each.distrust()
                continue
            key = self._owners.get(event.wd)
            watched = self._threads.get(key) if key is not None else None
            if watched is None:
                continue  # a watch removed on purpose
            if event.mask & IN_IGNORED:
                self._owners.pop(event.wd, None)
                watched.wds.pop(event.wd, None)
            if event.mask & _WATCH_LOST or (event.mask & IN_ISDIR and event.mask & _FOLDER_GONE):
                watched.distrust()
                continue
            folder = watched.wds.get(event.wd)
            if folder is None:
                continue
            watched.dirs.add(folder)
            if not event.name:
                watched.whole.add(folder)
                continue
            vpath = f"{folder}/{event.name}"
            watched.names[vpath] = watched.names.get(vpath, 0) | event.mask
            if event.mask & IN_MOVED_FROM:  # its pair comes next, when it stays in the thread's folders
                after = events[i + 1] if i + 1 < len(events) else None
                if not (
                    after
                    and after.mask & IN_MOVED_TO
                    and after.cookie == event.cookie
                    and self._owners.get(after.wd) is key
                ):
                    watched.unpaired.add(vpath)

    def take(self, key: Key) -> Changes:
        """The changes to ``key``'s files since the last call; the next call reports those after this one."""
        with self._lock:
            inotify = self._open()
            watched = self._threads.get(key)
            if inotify is None or watched is None:
                return Changes(trusted=False)
            self._drain(inotify)
            self._threads.move_to_end(key)
            trusted = watched.trusted and time.monotonic() - watched.walked < TRUST_SECONDS
            changes = Changes(trusted, watched.dirs, watched.names, watched.whole, watched.unpaired)
            watched.dirs, watched.names, watched.whole, watched.unpaired = set(), {}, set(), set()
            return changes

    def quiet(self, key: Key) -> bool:
        """Whether nothing changed in ``key``'s files since the last :meth:`take`, without waiting
        (False when another thread holds the journal or many events wait to be read: a capture
        off the event loop reads them). Nothing is consumed."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            inotify = self._open()
            watched = self._threads.get(key)
            if inotify is None or watched is None or not watched.trusted:
                return False
            queued = c_int()
            ioctl(inotify.fileno(), FIONREAD, queued)
            if queued.value > QUIET_READ_BYTES:
                return False
            if queued.value:
                self._drain(inotify)
            return watched.trusted and not watched.dirs and time.monotonic() - watched.walked < TRUST_SECONDS
        finally:
            self._lock.release()

    def begin_walk(self, key: Key) -> None:
        """A whole walk of ``key``'s files starts: the folders it meets are watched (:meth:`watch`)."""
        with self._lock:
            if self._open() is None:
                return
            watched = self._threads.get(key)
            if watched is None:
                watched = self._threads[key] = _Watched()
            self._threads.move_to_end(key)
            watched.trusted, watched.walk_ok, watched.fresh = False, True, set()

    def watch(self, key: Key, fd: int, folder: str) -> None:
        """Watch the open folder ``fd`` (virtual path ``folder``) for ``key``, before it is listed."""
        with self._lock:
            watched = self._threads.get(key)
            if self._inotify is None or watched is None:
                return
            if len(self._owners) >= self.max_watches and not self._evict(key):
                watched.distrust()
                return
            try:
                wd = self._inotify.add_watch(f"/proc/self/fd/{fd}", WATCH_MASK)
            except OSError as exc:  # the user's max_user_watches, or no /proc
                log.info("change_journal_watch_refused", folder=folder, error=str(exc))
                watched.distrust()
                return
            owner = self._owners.get(wd)
            if owner is not None and owner is not key and owner in self._threads:
                self._threads[owner].distrust()  # one folder in two threads: neither can read its events alone
                watched.distrust()
            self._owners[wd] = key
            watched.wds[wd] = folder
            if watched.fresh is not None:
                watched.fresh.add(wd)

    def end_walk(self, key: Key, *, complete: bool, local: bool) -> None:
        """The whole walk ended: ``key`` is trusted when every folder was watched, the walk was
        ``complete`` (no file with several links, nothing cut) and the files are on a ``local``
        file system. Watches of folders the walk no longer met are removed."""
        with self._lock:
            watched = self._threads.get(key)
            if self._inotify is None or watched is None or watched.fresh is None:
                return
            for wd in [wd for wd in watched.wds if wd not in watched.fresh]:
                self._remove(wd, key)
                del watched.wds[wd]
            watched.fresh = None
            watched.trusted = watched.walk_ok and complete and local
            watched.walked = time.monotonic()

    def distrust(self, key: Key) -> None:
        """Make the next capture of ``key`` walk everything (a file with several links was met)."""
        with self._lock:
            if (watched := self._threads.get(key)) is not None:
                watched.distrust()

    def forget(self, key: Key) -> None:
        """Drop ``key``'s watches (its history is gone)."""
        with self._lock:
            watched = self._threads.pop(key, None)
            if watched is not None and self._pid == os.getpid():
                for wd in watched.wds:
                    self._remove(wd, key)

    def watches(self, key: Key | None = None) -> int:
        """How many watches the journal holds (for ``key`` only, when given)."""
        with self._lock:
            if key is None:
                return len(self._owners)
            watched = self._threads.get(key)
            return len(watched.wds) if watched is not None else 0

    def _remove(self, wd: int, key: Key) -> None:
        """Remove watch ``wd`` unless another key owns it now (the same folder watched again by a
        newer history of the thread: removing it would leave that one blind)."""
        if self._owners.get(wd) is not key:
            return
        del self._owners[wd]
        if self._inotify is not None:
            try:
                self._inotify.rm_watch(wd)
            except OSError:
                pass  # gone with its folder already

    def _evict(self, keep: Key) -> bool:
        """Drop the least recently captured other thread (its next capture walks and watches
        again); False when there is none."""
        for key in self._threads:
            if key is not keep:
                for wd in self._threads.pop(key).wds:
                    self._remove(wd, key)
                return True
        return False


def _default_max_watches() -> int:
    try:
        limit = int(Path("/proc/sys/fs/inotify/max_user_watches").read_text())
    except (OSError, ValueError):
        return DEFAULT_MAX_WATCHES
    return max(1, min(DEFAULT_MAX_WATCHES, limit // 2))


class _MountTable:
    """``/proc/self/mountinfo`` as (mount point, file system type) pairs, read again only when the
    kernel says the mounts changed: the file is pollable, and a mount or unmount marks it
    (``POLLPRI``/``POLLERR``, see proc(5)). Each thread's folders are a subvolume of their own on
    the quota volume (a device of its own), so :func:`is_local` met a new device with every new
    thread and read and parsed the whole table each time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._mounts: list[tuple[str, str]] | None = None
        self._poll: select.poll | None = None
        self._fd: int | None = None

    def _changed(self) -> bool:
        if self._poll is None:
            return True
        try:
            return bool(self._poll.poll(0))
        except OSError:
            return True

    def _read(self) -> list[tuple[str, str]] | None:
        if self._fd is None:
            try:
                self._fd = os.open("/proc/self/mountinfo", os.O_RDONLY | os.O_CLOEXEC)
                self._poll = select.poll()
                self._poll.register(self._fd, select.POLLPRI | select.POLLERR)
            except OSError:
                self._fd, self._poll = None, None
                return None
        try:  # a poll reports a change once (it clears the mark): the read comes after it
            os.lseek(self._fd, 0, os.SEEK_SET)
            chunks = []
            while chunk := os.read(self._fd, 65536):
                chunks.append(chunk)
        except OSError:
            return None
        mounts = []
        for line in b"".join(chunks).decode(errors="replace").splitlines():
            left, _, right = line.partition(" - ")
            fields = left.split()
            if len(fields) >= 5 and right:
                mounts.append((fields[4].replace("\\040", " "), right.split()[0]))
        return mounts

    def mounts(self) -> list[tuple[str, str]] | None:
        """The mounts, read again when they changed since the last read (None: unreadable)."""
        with self._lock:
            if self._mounts is None or self._changed():
                self._mounts = self._read()
            return self._mounts


_MOUNTS = _MountTable()


def filesystem_type(path: str) -> str | None:
    """The type of the file system ``path`` (a real path) is on, from ``/proc/self/mountinfo``."""
    best, kind = "", None
    mounts = _MOUNTS.mounts()
    if mounts is None:
        return None
    for point, fstype in mounts:
        if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
            best, kind = point, fstype
    return kind


def is_local(path: Path) -> bool:
    """Whether the kernel sees every write to ``path``'s file system (see :data:`LOCAL_FILESYSTEMS`);
    asked once per device (a thread's folders are on its home's)."""
    try:
        device = os.stat(path).st_dev
    except OSError:
        return False
    local = _LOCAL_DEVICES.get(device)
    if local is None:
        local = _LOCAL_DEVICES[device] = filesystem_type(os.path.realpath(path)) in LOCAL_FILESYSTEMS
    return local


_LOCAL_DEVICES: dict[int, bool] = {}


_JOURNAL: ChangeJournal | None = None
_JOURNAL_LOCK = threading.Lock()


def process_journal() -> ChangeJournal:
    """The journal every history of this process shares (made on first use)."""
    global _JOURNAL
    with _JOURNAL_LOCK:
        if _JOURNAL is None:
            _JOURNAL = ChangeJournal()
        return _JOURNAL
