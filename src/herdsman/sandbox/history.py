"""Versions of a thread's files, one per checkpoint: time travel brings the files back too.

Layout, under ``<home>/threads/<id>/history/`` (beside ``user-data``, never mounted in a sandbox):

- ``objects/ab/<sha256>``: file contents and folder listings, content-addressed: written once,
  never changed, shared by every version that has them.
- the index: the version of each checkpoint (``checkpoint_id -> root``), in order. A thread's
  history made by :func:`thread_history` keeps it in the home's one index (``<home>/file-versions.sqlite``,
  its rows under the id written in ``history/index-scope``); a history made with no home index, or
  whose folder holds an ``index.sqlite`` already (made before the home index), keeps its own.

A folder listing is JSON ``{name: entry}``, an entry being ``["f", mode, digest, size]``,
``["l", target]`` or ``["d", mode, digest]`` (the sub-folder's listing): git's layout, so a step
that changed one file stores that file and the listings on its path, nothing more. A version is
the digest of the listing of ``/mnt/user-data``; a step that changed nothing has the version of
the step before.

Cost: a step that changed nothing costs no walk at all, and a step that changed a few files
looks only at them: the kernel's change journal (:mod:`~herdsman.sandbox.change_journal`, inotify
watches on every folder) names the entries changed since the last capture, whoever wrote them (a
tool, a command's leftover process, an upload through another process), and only those entries
and the listings on their paths are stored again. The listings of the folders and their digests
are kept in memory from the last capture. When the journal cannot vouch for the tree (first
capture in this process, a folder moved or removed, lost events, a file with several links or
written through a name gone since, a file system it cannot see, or ``TRUST_SECONDS`` since the
last whole walk) :meth:`FileHistory.capture` walks the tree and ``lstat``s each entry; a file whose
``(size, mtime_ns, ctime_ns, inode)`` is the one seen last time at its path, and that no event
named, is not read again (ctime cannot be set from the sandbox, so ``touch -d`` does not hide a
change). :attr:`FileHistory.capture_counts` counts each kind of capture and the files read.

Why by hand: git, restic and rsync open a tree's files by path name; code in the sandbox can
swap a folder for a symlink between their check and their open, and they would copy ``/etc`` or
another thread's folder into a version, which a restore then hands to the agent. Every read and
write here goes through :class:`~herdsman.sandbox.fs.ThreadFiles` descriptors, links are kept as
links (their target as text) and never followed. Contents are copied, not hard-linked: a hard
link shares the inode, so the next in-place write in the sandbox would change the version too.

Sparse files are stored by their data (``SEEK_DATA``/``SEEK_HOLE``), holes kept as holes, and
counted by it: a 1 GB file of 12 KB of data costs a version 12 KB, not 1 GB.

Why one index per home: a SQLite file of its own cost each new thread ~8 ms of CPU and ~50 ms
of fsyncs (the file, its switch to WAL, its tables) before its first checkpoint, and a burst of
runs on many threads closed and opened indexes as they went past the open-index bound. In the
home's index a new thread costs its rows. Whose rows they are is the id in ``index-scope``, made
with the thread's history folder and deleted with it: a thread deleted and made again with the same
id (by any process, on any code) gets a new id, and never the versions of the one before, which
are deleted when the new id is made.

Bounds: a file larger than ``max_bytes`` is never read (that capture fails with a message and
its checkpoint has no files to restore); past ``max_bytes`` of stored contents or ``keep_last``
versions, the oldest versions are dropped, and objects no kept version uses are deleted.
"""

from __future__ import annotations

import os
import resource
import shutil
import sqlite3
import stat
import tempfile
import threading
import time
import weakref
from collections import Counter, OrderedDict
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from herdsman.config.schema import SnapshotsConfig
from herdsman.logs import get_logger
from herdsman.sandbox.base import USER_DATA_ROOT, SandboxError
from herdsman.sandbox.change_journal import ChangeJournal, Changes, is_local, process_journal
from herdsman.sandbox.fs import MAX_DEPTH, MAX_PATH_CHARS, FileTooLargeError, ThreadFiles, copy_sparse
from herdsman.sandbox.fs_walk import WalkStop
from herdsman.sandbox.history_objects import Entry, ObjectStore
from herdsman.sandbox.history_objects import HistoryError as HistoryError  # part of this module's API
from herdsman.sandbox.history_restore import RestoreReport as RestoreReport  # part of this module's API
from herdsman.sandbox.history_restore import restore_version, revert_paths
from herdsman.sandbox.paths import normalize_virtual

log = get_logger(__name__)

WALK_LIMIT = 200_000
ENTRIES_CACHED = 8  # versions whose entries a history keeps read
WALK_SECONDS = 60.0


class _Moved(Exception):
    """What changed cannot be told folder by folder (a folder swapped for something else
    meanwhile, a file with several links): walk the whole tree."""


def _parent(vpath: str) -> str:
    return vpath.rsplit("/", 1)[0]


def addressable(vpath: str) -> bool:
    """Whether ``vpath`` names exactly this entry through the virtual paths: a name that
    normalizing would change (trailing spaces, a newline at the end), that is not UTF-8, or that
    is too deep or too long is left out of versions, and so never touched by a restore."""
    if len(vpath) > MAX_PATH_CHARS or vpath.count("/") > MAX_DEPTH:
        return False
    try:
        vpath.encode("utf-8")
        return normalize_virtual(vpath) == vpath
    except (UnicodeEncodeError, SandboxError):
        return False


_SHARED: dict[Path, FileHistory] = {}
_SHARED_LOCK = threading.Lock()


def _open_index_limit() -> int:
    """How many indexes may stay open: enough for a burst of runs on new threads (a hundred at
    once, each using its index at every step: with 32, every use closed another thread's index,
    a WAL checkpoint, and opened its own again), within a small share of the descriptors the
    process may open (three each with WAL) and well under select()'s 1024."""
    try:
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (OSError, ValueError):
        return 32
    if soft == resource.RLIM_INFINITY:
        return 128
    return max(32, min(128, soft // 24))


# the indexes whose connection is open, least recently used first: at most MAX_OPEN_INDEXES stay
# open (three descriptors each with WAL), so a process that saw many threads keeps few files open
MAX_OPEN_INDEXES = _open_index_limit()
_OPEN: OrderedDict[_Index, None] = OrderedDict()
_OPEN_LOCK = threading.Lock()
SWEEP_GRACE = 600.0  # seconds a new object is safe from a sweep (another process may still be recording it)


INDEX_SCHEMA = 1  # PRAGMA user_version of an index whose tables are all there


HOME_INDEX = "file-versions.sqlite"  # the home's index of every thread's versions (see the module docstring)
SCOPE_FILE = "index-scope"  # in a history's folder: the id its rows in the home's index are kept under


def _make_index(db: sqlite3.Connection) -> None:
    """Make (or bring up to date) a thread's own index's tables in ONE transaction: a new thread's
    index cost a commit per statement (five), and reading ``user_version`` spares all of it once done."""
    db.execute("BEGIN IMMEDIATE")  # DDL does not open the transaction of ``with db`` by itself
    db.execute(
        "CREATE TABLE IF NOT EXISTS versions (checkpoint_id TEXT PRIMARY KEY, root TEXT, "
        "created REAL NOT NULL, seq INTEGER NOT NULL, message_id TEXT)"
    )
    db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)")
    if "message_id" not in {row[1] for row in db.execute("PRAGMA table_info(versions)")}:  # made before it
        db.execute("ALTER TABLE versions ADD COLUMN message_id TEXT")
    db.execute("CREATE INDEX IF NOT EXISTS versions_seq ON versions (seq)")  # MAX(seq) per record
    db.execute(f"PRAGMA user_version = {INDEX_SCHEMA}")


def _make_home_index(db: sqlite3.Connection) -> None:
    """Make the home index's tables: a thread's own index's, each row under its thread and scope."""
    db.execute("BEGIN IMMEDIATE")
    db.execute(
        "CREATE TABLE IF NOT EXISTS versions (thread TEXT NOT NULL, scope TEXT NOT NULL, checkpoint_id TEXT NOT NULL, "
        "root TEXT, created REAL NOT NULL, seq INTEGER NOT NULL, message_id TEXT, PRIMARY KEY (scope, checkpoint_id))"
    )
    db.execute(
        "CREATE TABLE IF NOT EXISTS meta (thread TEXT NOT NULL, scope TEXT NOT NULL, key TEXT NOT NULL, "
        "value INTEGER NOT NULL, PRIMARY KEY (scope, key))"
    )
    db.execute("CREATE INDEX IF NOT EXISTS versions_seq ON versions (scope, seq)")
    db.execute("CREATE INDEX IF NOT EXISTS versions_thread ON versions (thread)")
    db.execute("CREATE INDEX IF NOT EXISTS meta_thread ON meta (thread)")
    db.execute(f"PRAGMA user_version = {INDEX_SCHEMA}")


class _Index:
    """One index file and the connection to it, kept open between uses (closed when
    MAX_OPEN_INDEXES other indexes were used since, or when the index goes): opening one per read
    or write cost more than the writes (measured: 72 per run of five steps). One caller at a time:
    the connection is shared by the threads, and for the home's index by the histories, that use it."""

    def __init__(self, path: Path, make: Any) -> None:
        """The index at ``path``, its tables made by ``make`` (in a transaction) when it has none."""
        self.path = path
        self._make = make
        self._lock = threading.RLock()
        self._held: list[sqlite3.Connection | None] = [None]
        self._in_use = 0
        weakref.finalize(self, _close_held, self._held)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(
                "PRAGMA synchronous=NORMAL"
            )  # WAL: consistent after any crash; a power cut may lose the last versions
            if db.execute("PRAGMA user_version").fetchone()[0] < INDEX_SCHEMA:
                with db:
                    self._make(db)
        except BaseException:
            db.close()
            raise
        return db

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """The index in a transaction (committed at the end, rolled back on an error)."""
        with self._lock:
            held = self._held[0]
            if held is None:
                held = self._held[0] = self._connect()
            _used(self)
            self._in_use += 1
            try:
                with held as db:
                    yield db
            finally:
                self._in_use -= 1

    def try_hold(self) -> bool:
        """Hold the index for this thread if no other thread does (then :meth:`transaction`
        waits for nothing); False when another does. Give it back with :meth:`release`."""
        return self._lock.acquire(blocking=False)

    def release(self) -> None:
        """Give back what :meth:`try_hold` took."""
        self._lock.release()

    def close(self) -> bool:
        """Close the connection unless another thread is using it; False when busy."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            if self._in_use:  # this thread is inside a transaction on it (the lock is reentrant)
                return False
            _close_held(self._held)
            return True
        finally:
            self._lock.release()


_HOME_INDEXES: weakref.WeakValueDictionary[Path, _Index] = weakref.WeakValueDictionary()
_HOME_LOCK = threading.Lock()


def _home_index(path: Path) -> _Index:
    """The process's one :class:`_Index` of the home index at ``path``."""
    path = Path(os.path.abspath(path))  # one connection for the file, however the home was written
    with _HOME_LOCK:
        index = _HOME_INDEXES.get(path)
        if index is None:
            index = _HOME_INDEXES[path] = _Index(path, _make_home_index)
        return index


def _scope_of(directory: Path) -> tuple[str, bool]:
    """The id of the history in ``directory`` in the home index, and whether it was just made
    (written whole before it shows: two processes making it at once agree on one)."""
    path = str(directory / SCOPE_FILE)
    scope = os.urandom(16).hex()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        for _ in range(100):  # another process made it a moment ago: its one write may still be coming
            with open(path, "rb") as file:
                if len(kept := file.read().strip()) == len(scope):
                    return kept.decode(), False
            time.sleep(0.01)
        raise HistoryError(
            f"{path} does not hold a history id; delete it (the thread's versions then start again)"
        ) from None
    try:
        os.write(fd, scope.encode())
    finally:
        os.close(fd)
    return scope, True


class _Rows:
    """The SQL for one history's rows: its own index's tables, or its share of the home's (every
    statement limited to its scope, every row made with its thread and scope)."""

    def __init__(self, index: _Index, thread: str | None = None, scope: str | None = None) -> None:
        """``thread`` and ``scope`` for the home's index; neither for a history's own."""
        self.index = index
        self._where = "scope = ? AND " if scope else ""
        self._columns = "thread, scope, " if scope else ""
        self._marks = "?, ?, " if scope else ""
        self._key = "scope, " if scope else ""
        self._scope: tuple[str, ...] = (scope,) if scope else ()
        self._made: tuple[str, ...] = (thread or "", scope) if scope else ()

    def record(self, db: sqlite3.Connection, checkpoint_id: str, root: str | None, message_id: str | None) -> None:
        """Add (or update the root of) the row of ``checkpoint_id``, after every other."""
        db.execute(
            f"INSERT INTO versions ({self._columns}checkpoint_id, root, created, seq, message_id) "
            f"SELECT {self._marks}?, ?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM versions WHERE {self._where}1), ? "
            f"WHERE 1 ON CONFLICT({self._key}checkpoint_id) DO UPDATE SET root = excluded.root",
            (*self._made, checkpoint_id, root, time.time(), *self._scope, message_id),
        )

    def root_of(self, db: sqlite3.Connection, checkpoint_id: str) -> Any:
        """The row ``(root,)`` of ``checkpoint_id``, or None."""
        return db.execute(
            f"SELECT root FROM versions WHERE {self._where}checkpoint_id = ?", (*self._scope, checkpoint_id)
        ).fetchone()

    def rows(self, db: sqlite3.Connection) -> list[tuple[str, str | None, float, str | None]]:
        """Every (checkpoint id, root, time, message id), oldest first."""
        return list(
            db.execute(
                f"SELECT checkpoint_id, root, created, message_id FROM versions WHERE {self._where}1 ORDER BY seq",
                self._scope,
            )
        )

    def set_bytes(self, db: sqlite3.Connection, value: int, *, add: bool) -> None:
        """Set the stored bytes to ``value``, or (``add``) add it to them."""
        new = "value + excluded.value" if add else "excluded.value"
        db.execute(
            f"INSERT INTO meta ({self._columns}key, value) VALUES ({self._marks}'bytes', ?) "
            f"ON CONFLICT({self._key}key) DO UPDATE SET value = {new}",
            (*self._made, value),
        )

    def stored_bytes(self, db: sqlite3.Connection) -> int:
        """The stored bytes (0 when none were counted)."""
        row = db.execute(f"SELECT value FROM meta WHERE {self._where}key = 'bytes'", self._scope).fetchone()
        return int(row[0]) if row else 0

    def drop_root(self, db: sqlite3.Connection, root: str) -> None:
        """Mark the checkpoints of version ``root`` as keeping no files."""
        db.execute(f"UPDATE versions SET root = NULL WHERE {self._where}root = ?", (*self._scope, root))

    def delete(self, db: sqlite3.Connection, checkpoints: list[str]) -> None:
        """Delete the rows of ``checkpoints``."""
        db.executemany(
            f"DELETE FROM versions WHERE {self._where}checkpoint_id = ?", [(*self._scope, c) for c in checkpoints]
        )

    def forget_others(self, db: sqlite3.Connection) -> None:
        """Delete the rows the thread's earlier histories (deleted since) left in the home's index."""
        if (
            self._made
            and db.execute("SELECT 1 FROM versions WHERE thread = ? AND scope <> ? LIMIT 1", self._made).fetchone()
        ):
            for table in ("versions", "meta"):
                db.execute(f"DELETE FROM {table} WHERE thread = ? AND scope <> ?", self._made)


class FileHistory:
    """The versions of one thread's files (see the module docstring). Use :meth:`of` so every
    user in a process shares one instance per thread (its lock keeps a sweep from deleting what a
    capture is writing)."""

    @classmethod
    def of(
        cls, files: ThreadFiles, directory: Path, config: SnapshotsConfig, home_index: Path | None = None
    ) -> FileHistory:
        """The process's history kept in ``directory`` (made on first use)."""
        with _SHARED_LOCK:
            history = _SHARED.get(directory)
            # a history whose folder is gone (its thread was deleted) starts again, empty
            if history is None or history.files.paths != files.paths or not history.kept():
                history = _SHARED[directory] = cls(files, directory, config, home_index=home_index)
            return history

    def __init__(
        self,
        files: ThreadFiles,
        directory: Path,
        config: SnapshotsConfig,
        journal: ChangeJournal | Literal[False] | None = None,
        home_index: Path | None = None,
    ) -> None:
        """``files`` reaches the thread's files; versions are kept in ``directory``. ``journal``:
        the change journal that spares walks (None: the process's; False: none, every capture walks).
        ``home_index``: the home's index file, where the rows go (unless ``directory`` has an index
        of its own already); None: an index of its own in ``directory``."""
        self.files = files
        self.directory = directory
        self.config = config
        self.store = ObjectStore(directory / "objects")
        self.objects = self.store.root
        self._lock = threading.RLock()
        own = directory / "index.sqlite"
        made = not own.exists()
        if home_index is None or not made:
            self._rows = _Rows(_Index(own, _make_index))
        else:
            scope, made = _scope_of(directory)
            self._rows = _Rows(_home_index(home_index), files.paths.thread_id, scope)
            if made:
                with self._index() as db:
                    self._rows.forget_others(db)
        # vpath -> (size, mtime_ns, ctime_ns, ino, digest) of the last capture: unchanged files are not read
        self._seen: dict[str, tuple[int, int, int, int, str]] = {}
        # the last capture's folders (virtual path -> listing, sub-folder digests filled) and digests
        self._dirs: dict[str, dict[str, Entry]] = {}
        self._digests: dict[str, str] = {}
        self._root: str | None = None
        self._recorded: str | None = None  # the last version this instance recorded
        self._empty = made  # no version recorded yet (its rows were just made): the first needs no prune
        self._linked = False  # the walk under way met a file with several links
        self._journal = process_journal() if journal is None else (journal or None)
        self._journal_key = object()
        if self._journal is not None:
            weakref.finalize(self, self._journal.forget, self._journal_key)
        self._local = is_local(files.paths.user_data)
        #: how many captures found nothing changed ("skipped": no walk), listed only the folders
        #: that changed ("folders"), or walked the whole tree ("walked"); and how many files they read
        self.capture_counts: Counter[str] = Counter()
        self._capture_bytes = 0
        self._entries: OrderedDict[str, dict[str, Entry]] = OrderedDict()
        with self._index():
            pass  # made (or checked) now: an index that cannot be opened fails here, not at the first record

    @contextmanager
    def _index(self) -> Iterator[sqlite3.Connection]:
        """The index in a transaction (committed at the end, rolled back on an error), one caller
        at a time, while this history is held."""
        with self._lock, self._rows.index.transaction() as db:
            yield db

    # -- objects ----------------------------------------------------------------------------

    def kept(self) -> bool:
        """Whether this history's folder is still there (a thread deleted since has none)."""
        return self.store.kept()

    def _put_file(self, vpath: str, seen: os.stat_result) -> str | None:
        """Copy the file at ``vpath`` in (read by descriptor); its digest, or None when the file
        opened is not the one the walk saw (swapped meanwhile: left out of this version). Only
        the data of a sparse file is read and stored: its holes stay holes (``truncate -s 1G``
        costs a version nothing, as it cost the thread's quota nothing)."""
        size = min(seen.st_size, seen.st_blocks * 512)  # the bytes on disk: what a copy will store
        if self._capture_bytes + size > self.config.max_bytes:
            raise HistoryError(
                f"{vpath} ({size} bytes) would take this version past sandbox.snapshots.max_bytes "
                f"({self.config.max_bytes}); its checkpoint keeps no files. Raise the limit or keep "
                "such files out of the thread"
            )
        fd, name = tempfile.mkstemp(dir=self.objects)
        try:
            with os.fdopen(fd, "wb") as out, self.files.open_file(vpath) as (src, opened, _):
                if (opened.st_dev, opened.st_ino) != (seen.st_dev, seen.st_ino):
                    os.unlink(name)
                    return None
                hexd, copied = copy_sparse(
                    src, out.fileno(), opened.st_size, self.config.max_bytes - self._capture_bytes
                )
        except FileTooLargeError:
            os.unlink(name)
            raise HistoryError(f"{vpath} grew past sandbox.snapshots.max_bytes while it was copied") from None
        except BaseException:
            os.unlink(name)
            raise
        self._capture_bytes += copied
        self.capture_counts["files_read"] += 1
        self.store.keep(Path(name), hexd, copied)
        return hexd

    def _count_new_bytes(self) -> None:
        """Add the bytes of the objects stored since the last call to the running total."""
        n = self.store.take_new_bytes()
        if n:
            with self._index() as db:
                self._rows.set_bytes(db, n, add=True)

    def stored_bytes(self) -> int:
        """Bytes of objects kept (contents and listings)."""
        with self._index() as db:
            return self._rows.stored_bytes(db)

    # -- capture ----------------------------------------------------------------------------

    def capture(self) -> str:
        """A version of the thread's files as they are now; its root digest."""
        with self._lock:
            self._capture_bytes = 0
            try:
                return self._capture()
            except BaseException:
                self._root = None  # the folders kept in memory may be half updated: walk next time
                raise
            finally:
                self._count_new_bytes()

    def unchanged(self) -> str | None:
        """The last version when the change journal says nothing changed since, without waiting or
        walking (cheap enough for an event loop); None when a capture is due or the history is busy."""
        if self._journal is None or not self._lock.acquire(blocking=False):
            return None
        try:
            root = self._root
            if root is None or not self._journal.quiet(self._journal_key) or not self.store.has(root):
                return None
            self.capture_counts["skipped"] += 1
            return root
        finally:
            self._lock.release()

    def _capture(self) -> str:
        """The capture of :meth:`capture` (which holds the lock): none, the changed folders, or all."""
        changes = self._journal.take(self._journal_key) if self._journal is not None else Changes(trusted=False)
        untracked = (v for v in changes.names if _parent(v) not in self._dirs)  # below folders versions leave out
        if (
            changes.trusted
            and self._root is not None
            and self.store.has(self._root)
            and not any(changes.maybe_linked(v, present=False, tracked=False) for v in untracked)
        ):
            dirty = sorted((d for d in changes.dirs if d in self._dirs), key=lambda p: p.count("/"))
            if not dirty:  # nothing changed, or only in folders versions leave out
                self.capture_counts["skipped"] += 1
                return self._root
            try:
                root = self._capture_folders(dirty, changes)
                self.capture_counts["folders"] += 1
                return root
            except (_Moved, SandboxError, OSError):
                pass  # a folder became something else (or a link) meanwhile: walk from the root
        self.capture_counts["walked"] += 1
        return self._capture_all(changes.names)

    def _capture_all(self, names: Collection[str]) -> str:
        """Walk the whole tree (watching each folder before it is listed) and store what changed;
        the files ``names`` lists are read again whatever their stat says."""
        if self._journal is not None:
            self._journal.begin_walk(self._journal_key)
        seen: dict[str, tuple[int, int, int, int, str]] = {}
        self._linked, self._root = False, None
        self._dirs = self._scan(USER_DATA_ROOT, deep=True, forced=names, seen=seen)
        self._seen, self._digests = seen, {}
        root = self._hash(set(self._dirs))
        if self._journal is not None:
            self._journal.end_walk(self._journal_key, complete=not self._linked, local=self._local)
        return root

    def _capture_folders(self, dirty: list[str], changes: Changes) -> str:
        """Update only the folders in ``dirty`` (shallowest first): the entries an event named are
        looked at again (a folder with an event on itself is listed again whole), new sub-folders
        are walked whole; then hash the folders up to the root."""
        changed: set[str] = set()
        self._linked = False
        named: dict[str, set[str]] = {}
        for vpath in changes.names:
            named.setdefault(_parent(vpath), set()).add(vpath.rsplit("/", 1)[1])
        for vdir in dirty:
            old = self._dirs.get(vdir)
            if old is None:
                continue  # dropped with a folder above it
            seen: dict[str, tuple[int, int, int, int, str]] = {}
            if vdir in changes.whole:
                listing = self._scan(vdir, deep=False, forced=changes.names, seen=seen)[vdir]
                gone = list(old)
                present = {name for name, item in listing.items() if item[0] == "f"}
            else:
                gone = sorted(named.get(vdir, ()))
                stats = {
                    name: self.files.stat(f"{vdir}/{name}", follow=False) if addressable(f"{vdir}/{name}") else None
                    for name in gone
                }
                present = {name for name, st in stats.items() if st is not None and stat.S_ISREG(st.st_mode)}
            for name in named.get(vdir, ()):  # before any file is read: the capture may walk instead
                if changes.maybe_linked(f"{vdir}/{name}", present=name in present, tracked=name in old):
                    self._seen.update(seen)
                    raise _Moved(f"{vdir}/{name}")  # written through a name that is gone: its other name had no event
            if vdir not in changes.whole:
                listing = dict(old)
                for name, st in stats.items():
                    vpath = f"{vdir}/{name}"
                    item = self._item(vpath, st, changes.names, seen) if st is not None else None
                    listing.pop(name, None)
                    if item is not None:
                        listing[name] = item
            for name in gone:  # what was there before under the names looked at again
                vpath, was = f"{vdir}/{name}", old.get(name)
                if was is not None and was[0] == "f":
                    self._seen.pop(vpath, None)
                elif was is not None and was[0] == "d" and listing.get(name, [""])[0] != "d":
                    self._drop_tree(vpath)
            self._seen.update(seen)
            self._dirs[vdir] = listing
            changed.add(vdir)
            for name, item in listing.items():
                child = f"{vdir}/{name}"
                if item[0] == "d" and child not in self._dirs:  # a new folder: walked whole
                    seen = {}
                    folders = self._scan(child, deep=True, forced=changes.names, seen=seen)
                    self._dirs.update(folders)
                    self._seen.update(seen)
                    changed.update(folders)
        if self._linked:  # a file with another name, maybe in a folder with no event: look at everything
            raise _Moved("a file with several links")
        for vdir in list(changed):
            while vdir != USER_DATA_ROOT:
                vdir = _parent(vdir)
                changed.add(vdir)
        return self._hash(changed)

    def _drop_tree(self, vdir: str) -> None:
        """Forget the folder ``vdir`` and everything below it (it is gone or no longer a folder)."""
        prefix = vdir + "/"
        for kept in (self._dirs, self._digests, self._seen):
            for path in [p for p in kept if p == vdir or p.startswith(prefix)]:
                del kept[path]

    def _scan(
        self, top: str, *, deep: bool, forced: Collection[str], seen: dict[str, tuple[int, int, int, int, str]]
    ) -> dict[str, dict[str, Entry]]:
        """The listings of folder ``top`` (and, ``deep``, of every folder below it), sub-folder
        digests left None (see :meth:`_item`)."""
        stop = WalkStop()
        folders: dict[str, dict[str, Entry]] = {top: {}}
        journal, thread_key = self._journal, self._journal_key
        on_dir = (lambda fd, vdir: journal.watch(thread_key, fd, vdir)) if journal is not None else None
        walk = self.files.walk(
            top, limit=WALK_LIMIT, seconds=WALK_SECONDS, stop=stop, max_depth=(1 << 30) if deep else 1, on_dir=on_dir
        )
        for entry in walk:
            if entry.depth == 1 and _parent(entry.vpath) != top:
                raise _Moved(top)  # the folder was swapped for a link: what was listed is elsewhere
            if not addressable(entry.vpath) or _parent(entry.vpath) not in folders:
                continue  # see addressable(); below a folder left out
            item = self._item(entry.vpath, entry.st, forced, seen)
            if item is None:
                continue
            if item[0] == "d" and deep:
                folders[entry.vpath] = {}
            folders[_parent(entry.vpath)][entry.name] = item
        if stop.reason:
            raise HistoryError(
                f"the thread's files could not all be listed ({stop.reason}); this checkpoint keeps no files"
            )
        return folders

    def _item(
        self, vpath: str, st: os.stat_result, forced: Collection[str], seen: dict[str, tuple[int, int, int, int, str]]
    ) -> Entry | None:
        """The entry of a version for what is at ``vpath`` (``st``: its ``lstat``); None when
        versions leave it out (fifos, sockets, devices) or it went meanwhile. A file is read
        unless its stat is the one seen last time and ``forced`` does not name it; what was seen
        of it goes into ``seen``."""
        if stat.S_ISDIR(st.st_mode):
            return ["d", stat.S_IMODE(st.st_mode), None]
        if stat.S_ISLNK(st.st_mode):
            try:
                return ["l", self.files.read_link(vpath)]
            except SandboxError:
                return None  # gone meanwhile
        if not stat.S_ISREG(st.st_mode):
            return None
        if st.st_nlink > 1:
            self._linked = True  # it can be written through a name in a folder nobody watches
        key = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        known = self._seen.get(vpath)
        fresh = known is not None and known[:4] == key and vpath not in forced
        digest = known[4] if fresh and known is not None else self._put_file(vpath, st)
        if digest is None:
            return None  # swapped while it was read
        seen[vpath] = (*key, digest)
        return ["f", stat.S_IMODE(st.st_mode), digest, st.st_size]

    def _hash(self, changed: set[str]) -> str:
        """Store the listings of the folders in ``changed``, deepest first (each sub-folder entry
        takes its folder's digest); the root's digest."""
        for vdir in sorted(changed, key=lambda p: p.count("/"), reverse=True):
            listing = self._dirs[vdir]
            for name, item in listing.items():
                if item[0] == "d":
                    item[2] = self._digests[f"{vdir}/{name}"]
            self._digests[vdir] = self.store.put_listing(listing)
        self._root = self._digests[USER_DATA_ROOT]
        return self._root

    # -- the index --------------------------------------------------------------------------

    def record(self, checkpoint_id: str, root: str | None, message_id: str | None = None) -> bool:
        """Say that checkpoint ``checkpoint_id`` has version ``root`` (None: its files are not kept);
        ``message_id``: the id of the checkpoint's last message (what a trace step is found by).
        True when ``root`` is not the version this history recorded last (a prune may be due)."""
        with self._index() as db:
            self._rows.record(db, checkpoint_id, root, message_id)
        new, self._recorded, self._empty = root != self._recorded, root, False
        return new

    def record_again(self, checkpoint_id: str, root: str, message_id: str | None = None) -> bool:
        """:meth:`record` ``root`` for one more checkpoint when it is the version recorded last, or
        the first version of a history with none yet (no prune can be due: one version always
        stays), without waiting: False, having recorded nothing, when it is another version or
        this history or its index is in use by another thread (a capture, a prune)."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            if (root != self._recorded and not self._empty) or not self._rows.index.try_hold():
                return False
            try:
                self.record(checkpoint_id, root, message_id)
            finally:
                self._rows.index.release()
            return True
        finally:
            self._lock.release()

    def version_of(self, checkpoint_id: str) -> str:
        """The version of ``checkpoint_id``; HistoryError when its files are not kept."""
        with self._index() as db:
            row = self._rows.root_of(db, checkpoint_id)
        if row is None or row[0] is None:
            raise HistoryError(
                f"the files of checkpoint {checkpoint_id} are not kept (it is older than "
                "sandbox.snapshots.keep_last or max_bytes allow, or it was made before versions were on)"
            )
        return str(row[0])

    def versions(self) -> list[tuple[str, str | None, float]]:
        """Every (checkpoint id, version or None, time) recorded, oldest first."""
        return [(c, r, t) for c, r, t, _ in self.versions_with_messages()]

    def versions_with_messages(self) -> list[tuple[str, str | None, float, str | None]]:
        """Every (checkpoint id, version or None, time, id of its last message), oldest first."""
        with self._index() as db:
            return self._rows.rows(db)

    # -- reading a version ------------------------------------------------------------------

    def entries(self, root: str) -> dict[str, Entry]:
        """Every entry of version ``root`` by virtual path (folders included). A version never
        changes, so the last few read are kept (listing steps diffs each version twice)."""
        with self._lock:
            if root in self._entries:
                self._entries.move_to_end(root)
                return self._entries[root]
            out = self._read_entries(root)
            self._entries[root] = out
            while len(self._entries) > ENTRIES_CACHED:
                self._entries.popitem(last=False)
            return out

    def _read_entries(self, root: str) -> dict[str, Entry]:
        out: dict[str, Entry] = {}
        stack = [(USER_DATA_ROOT, root)]
        while stack:
            vdir, digest = stack.pop()
            for name, item in self.store.listing(digest).items():
                vpath = f"{vdir}/{name}"
                out[vpath] = item
                if item[0] == "d":
                    stack.append((vpath, item[2]))
        return out

    def diff(self, old: str, new: str) -> dict[str, list[str]]:
        """Files added, removed and changed from version ``old`` to version ``new``."""
        a, b = self.entries(old), self.entries(new)
        files_a = {p: e for p, e in a.items() if e[0] != "d"}
        files_b = {p: e for p, e in b.items() if e[0] != "d"}
        return {
            "added": sorted(p for p in files_b if p not in files_a),
            "removed": sorted(p for p in files_a if p not in files_b),
            "changed": sorted(p for p in files_b if p in files_a and files_a[p] != files_b[p]),
        }

    # -- restore ----------------------------------------------------------------------------

    def restore(self, root: str) -> RestoreReport:
        """Make the thread's files those of version ``root``. The files as they were just before
        are captured first, so a restore can itself be undone (see :func:`restore_version`)."""
        with self._lock:
            return restore_version(self, root)

    def revert(self, root: str, paths: list[str]) -> RestoreReport:
        """Put only ``paths`` back as they were in version ``root``: written back when the version
        has them, removed when it does not (see :func:`revert_paths`)."""
        with self._lock:
            return revert_paths(self, root, paths)

    def copy_into(self, other: FileHistory) -> None:
        """Give ``other`` (another thread's history) every version of this one: the objects
        (hard links where the filesystem allows: they never change) and the index rows."""
        with self._lock, other._lock:
            for path in list(self.store.paths()):
                target = other.store.path(path.parent.name + path.name)
                if target.exists():
                    continue
                target.parent.mkdir(exist_ok=True)
                try:
                    os.link(path, target)
                except OSError:
                    shutil.copyfile(path, target)
            for checkpoint_id, root, _created, message_id in self.versions_with_messages():
                other.record(checkpoint_id, root, message_id)
            other._sweep(list(dict.fromkeys(r for _, r, _ in other.versions() if r is not None)))

    # -- bounds -----------------------------------------------------------------------------

    def prune(self) -> int:
        """Drop the oldest versions past ``keep_last`` or ``max_bytes`` and delete the objects no
        kept version uses; how many versions were dropped."""
        with self._lock:
            rows = [(c, r) for c, r, _ in self.versions() if r is not None]
            roots = list(dict.fromkeys(r for _, r in rows))  # oldest first, each once
            dropped = 0
            while roots and (len(roots) > self.config.keep_last or self.stored_bytes() > self.config.max_bytes):
                if len(roots) == 1:
                    break  # the newest version stays
                gone = roots.pop(0)
                with self._index() as db:
                    self._rows.drop_root(db, gone)
                dropped += 1
                self._sweep(roots)
            return dropped

    def forget(self, live_checkpoints: set[str]) -> int:
        """Drop the versions of checkpoints that are no longer in the thread; how many."""
        with self._lock:
            stale = [
                c for c, _, _ in self.versions() if c not in live_checkpoints and not c.startswith("before-restore-")
            ]
            with self._index() as db:
                self._rows.delete(db, stale)
            self._sweep(list(dict.fromkeys(r for _, r, _ in self.versions() if r is not None)))
            return len(stale)

    def _reachable(self, roots: list[str]) -> set[str]:
        keep: set[str] = set(roots)
        stack = list(roots)
        while stack:
            try:
                listing = self.store.listing(stack.pop())
            except HistoryError:
                continue
            for item in listing.values():
                if item[0] in ("f", "d") and item[2] not in keep:
                    keep.add(item[2])
                    if item[0] == "d":
                        stack.append(item[2])
        return keep | {s[4] for s in self._seen.values()} | set(self._digests.values())

    def _sweep(self, roots: list[str]) -> None:
        """Delete the objects none of ``roots`` uses, and count what is left."""
        total = self.store.sweep(self._reachable(roots), SWEEP_GRACE)
        with self._index() as db:
            self._rows.set_bytes(db, total, add=False)


def _used(index: _Index) -> None:
    """Note that ``index`` was just used, and close the least recently used indexes past
    MAX_OPEN_INDEXES (one in use by another thread stays open and is tried again later)."""
    with _OPEN_LOCK:
        _OPEN[index] = None
        _OPEN.move_to_end(index)
        excess = [_OPEN.popitem(last=False)[0] for _ in range(max(0, len(_OPEN) - MAX_OPEN_INDEXES))]
    busy = [i for i in excess if not i.close()]
    if busy:
        with _OPEN_LOCK:
            for i in busy:
                _OPEN[i] = None


def _close_held(held: list[sqlite3.Connection | None]) -> None:
    """Close the connection an index held (when it is closed or dropped)."""
    if held[0] is not None:
        held[0].close()
        held[0] = None


def thread_history(provider: Any, config: Any, thread_id: str) -> FileHistory | None:
    """The shared history of ``thread_id`` (``config`` is the HerdsmanConfig), or None when
    ``sandbox.snapshots`` is off or the provider keeps the thread's files off this host."""
    from herdsman.sandbox.base import HostBackedSandbox
    from herdsman.sandbox.paths import thread_dir

    if not config.sandbox.snapshots.enabled:
        return None
    sandbox = provider.acquire(thread_id)
    if not isinstance(sandbox, HostBackedSandbox):
        return None
    return FileHistory.of(
        sandbox.files,
        thread_dir(config.home, thread_id) / "history",
        config.sandbox.snapshots,
        home_index=Path(config.home) / HOME_INDEX,
    )


def forget_thread(home: Path, thread_id: str) -> None:
    """Delete every row of ``thread_id`` from the home's index (its thread and files are being
    deleted: a stateless run's thread each time), so the index does not grow with deleted threads."""
    path = Path(home) / HOME_INDEX
    if not path.exists():
        return
    with _home_index(path).transaction() as db:
        for table in ("versions", "meta"):
            db.execute(f"DELETE FROM {table} WHERE thread = ?", (thread_id,))
