"""The disk quota of one thread: bytes and entries under its ``/mnt/user-data``.

``sandbox.disk_quota_mb`` and ``sandbox.max_files`` bound what one thread may keep. Two kinds
of writers are held to them:

- the host-side writers (file tools, uploads) go through :meth:`DiskQuota.charge`, which
  refuses a write that would pass the quota *before* anything is written, one write at a time
  per thread, so parallel tool calls cannot together pass it;
- shell commands write from inside the jail. Where the thread lives on the quota volume
  (``volume.py``: the gateway runs as root) the kernel refuses the write that passes
  ``disk_quota_mb`` (``EDQUOT``), fallocate, sparse files and files deleted while open
  included. A :class:`CommandWatch` also measures the tree while the command runs and kills the
  command's process tree as soon as the thread is over its quota: the only bound on
  ``max_files``, and on bytes without the volume, where the slack is what a command manages to
  write between two measurements (each file is also capped by ``sandbox.limits.file_size_mb``);
  a command that starts while the thread is already over may delete files but is stopped as
  soon as the usage grows.

Measuring is an ``lstat`` walk of the tree through :class:`~herdsman.sandbox.fs.ThreadFiles`
(about 3 microseconds a file); the watch measures again every ``max(0.1 s, 2 x the last walk)``
so a large tree costs at most about a third of a core while a command runs; folders the jail
closed are opened on the way (``tree.py``). No library measures a tree with a bound on the work,
hence this module.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from herdsman.sandbox.base import SandboxError

MIB = 1024 * 1024
_CACHE_SECONDS = 2.0
_MIN_POLL = 0.1


class QuotaExceededError(SandboxError):
    """A write (or a command) would take the thread past its disk quota."""


@dataclass(frozen=True)
class Usage:
    """Bytes on disk and entries (files, folders, links) of a thread's files."""

    bytes: int
    files: int


def _mib(n: int) -> str:
    return f"{n / MIB:.1f} MiB" if n < 10 * MIB else f"{n // MIB} MiB"


class DiskQuota:
    """The quota of one thread; ``measure`` walks its files and returns their usage."""

    def __init__(self, measure: Callable[[], Usage], max_bytes: int | None, max_files: int | None) -> None:
        self._measure = measure
        self.max_bytes = max_bytes
        self.max_files = max_files
        self._lock = threading.Lock()
        self._cached: Usage | None = None
        self._cached_at = 0.0

    @property
    def enabled(self) -> bool:
        """Whether any limit is set."""
        return self.max_bytes is not None or self.max_files is not None

    def usage(self, *, fresh: bool = False) -> Usage:
        """The current usage (measured at most every two seconds unless ``fresh``)."""
        now = time.monotonic()
        if fresh or self._cached is None or now - self._cached_at > _CACHE_SECONDS:
            self._cached = self._measure()
            self._cached_at = time.monotonic()
        return self._cached

    def over(self, usage: Usage) -> bool:
        """Whether ``usage`` is past a limit."""
        return (self.max_bytes is not None and usage.bytes > self.max_bytes) or (
            self.max_files is not None and usage.files > self.max_files
        )

    def describe(self, usage: Usage) -> str:
        """The limits and the usage, for an error message."""
        parts = []
        if self.max_bytes is not None:
            parts.append(f"{_mib(self.max_bytes)} (sandbox.disk_quota_mb; {_mib(usage.bytes)} used)")
        if self.max_files is not None:
            parts.append(f"{self.max_files} files and folders (sandbox.max_files; {usage.files} used)")
        return " and ".join(parts)

    def error(self, what: str, usage: Usage) -> QuotaExceededError:
        """The error for ``what`` passing the quota at ``usage``."""
        return QuotaExceededError(
            f"{what}: disk quota exceeded; this thread may keep {self.describe(usage)}. Delete files that "
            "are no longer needed (for example with bash rm) and try again, or ask the operator to raise "
            "sandbox.disk_quota_mb / sandbox.max_files in config.yaml"
        )

    @contextmanager
    def charge(self, what: str, grow_bytes: int, new_files: int) -> Iterator[None]:
        """Hold the thread's write lock while a write of ``grow_bytes`` more bytes and
        ``new_files`` more entries happens; refuse it first if it would pass the quota."""
        if not self.enabled:
            yield
            return
        with self._lock:
            usage = self.usage()
            after = Usage(usage.bytes + max(grow_bytes, 0), usage.files + new_files)
            if self.over(after) and (grow_bytes > 0 or new_files > 0):
                usage = self.usage(fresh=True)  # the cache may be stale after deletions
                after = Usage(usage.bytes + max(grow_bytes, 0), usage.files + new_files)
                if self.over(after):
                    raise self.error(f"cannot write {what}", usage)
            yield
            self._cached = Usage(usage.bytes + grow_bytes, usage.files + new_files)

    def watch(self, cancel: threading.Event) -> CommandWatch:
        """A watch that sets ``cancel`` when a running command takes the thread past the quota."""
        return CommandWatch(self, cancel)


class CommandWatch:
    """Measures the thread's files while one command runs; use it as a context manager.

    ``tripped`` is the usage that stopped the command, or None.
    """

    def __init__(self, quota: DiskQuota, cancel: threading.Event) -> None:
        self._quota = quota
        self._cancel = cancel
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self.tripped: Usage | None = None
        self._start: Usage | None = None

    def _limit_passed(self, usage: Usage) -> bool:
        if not self._quota.over(usage):
            return False
        start = self._start
        if start is not None and self._quota.over(start):
            # Already over when it started: it may delete, but not grow.
            return usage.bytes > start.bytes or usage.files > start.files
        return True

    def _loop(self) -> None:
        interval = _MIN_POLL
        while not self._done.wait(interval):  # a short command ends before the first walk
            began = time.monotonic()
            usage = self._quota.usage(fresh=True)
            if self._limit_passed(usage):
                self.tripped = usage
                self._cancel.set()
                return
            interval = max(_MIN_POLL, 2 * (time.monotonic() - began))

    def __enter__(self) -> CommandWatch:
        if self._quota.enabled:
            self._start = self._quota.usage()  # the cached figure (at most two seconds old)...
            if self._quota.over(self._start):  # ...unless over: a command that frees space is held to
                self._start = self._quota.usage(fresh=True)  # what is there now, not a stale figure
            self._thread = threading.Thread(target=self._loop, name="herdsman-quota-watch", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
            if self.tripped is None:
                usage = self._quota.usage(fresh=True)
                if self._limit_passed(usage):
                    self.tripped = usage

    def message(self) -> str:
        """What to tell the model when the watch stopped the command."""
        assert self.tripped is not None
        return str(self._quota.error("the command was stopped", self.tripped))
