"""A sandbox whose files are on this machine and whose commands run elsewhere (container, pod).

The docker and kubernetes providers keep a thread's files where the local provider does
(``<home>/threads/<id>/user-data``, a directory the engine bind-mounts or a volume the gateway
shares with the pods), so the file tools are :class:`~herdsman.sandbox.host_files.HostFilesSandbox`'s,
the local sandbox's too, with the same escape rules. Only the shell differs.

One wrinkle: the command runs as a non-root uid. When this process runs as root, files and
directories the file tools create would be root's and read-only to the command, so they are
handed to the sandbox's uid:gid.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Protocol

from herdsman.config.schema import SandboxConfig
from herdsman.logs import get_logger
from herdsman.sandbox.host_files import HostFilesSandbox, Shell, making_lock
from herdsman.sandbox.paths import ThreadPaths

log = get_logger(__name__)


class Box(Protocol):
    """Where a thread's commands run (a container, a pod)."""

    busy: int
    last_used: float

    @property
    def started(self) -> bool:
        """Whether a container or pod is running for the thread now."""
        ...

    def ensure_id(self) -> str:
        """Start it when needed; its id or name."""
        ...

    def forget(self) -> None:
        """Remove the container or pod (files stay); the next command starts a new one."""
        ...


class BoxUsage:
    """How many commands a box runs now and when it was last used (read by the idle reaper)."""

    def __init__(self) -> None:
        self._busy_lock = threading.Lock()
        self.busy = 0
        self.last_used = time.monotonic()

    def use(self, delta: int) -> None:
        """Count a command in (+1) or out (-1), and note the time for the idle reaper."""
        with self._busy_lock:
            self.busy += delta
            self.last_used = time.monotonic()


def file_owner(user: str | None) -> tuple[int, int] | None:
    """The uid:gid new files must get, when we run as root and the sandbox user differs; else None."""
    if os.geteuid() != 0 or not user:
        return None
    try:
        uid, gid = (int(part) for part in user.split(":", 1))
    except ValueError:
        return None
    return None if (uid, gid) == (0, 0) else (uid, gid)


class RemoteSandbox(HostFilesSandbox):
    """Host-side files as every sandbox has them; commands go to ``shell`` (a container or pod).

    New files and folders the host writes are handed to ``owner`` (the container user) through
    :class:`~herdsman.sandbox.fs.ThreadFiles`, by descriptor, never following a link.
    """

    def __init__(
        self, paths: ThreadPaths, shell: Shell, config: SandboxConfig, box: Box, owner: tuple[int, int] | None
    ) -> None:
        self.box = box
        self._owner = owner
        super().__init__(paths, shell, config, owner=owner)
        if owner is not None:
            for directory in (paths.workspace, paths.uploads, paths.outputs):
                try:  # the harness's own folders, created just above; not reachable by the agent
                    os.chown(directory, *owner, follow_symlinks=False)
                except OSError:
                    pass

    def ensure_running(self) -> str:
        """Start the container or pod now (normally the first command does); its id or name."""
        return self.box.ensure_id()


class Reaper:
    """A daemon thread calling ``reap()`` every ``interval`` seconds until :meth:`stop`."""

    def __init__(self, reap: Callable[[], object], interval: float, name: str) -> None:
        self._reap = reap
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._reap()
            except Exception:  # noqa: BLE001 - the reaper must survive engine hiccups
                log.exception("sandbox_reaper_failed")

    def stop(self) -> None:
        """Stop the thread (it ends within one interval)."""
        self._stop.set()


def reaper_interval(idle_timeout: float) -> float:
    """How often to look for idle sandboxes: a quarter of the timeout, between 1 s and 60 s."""
    return max(1.0, min(60.0, idle_timeout / 4))


class RemoteSandboxes:
    """The sandboxes a remote provider handed out, by thread: release, close and idle reaping.

    Shared by the docker and kubernetes providers, which set ``_sandboxes``, ``_lock`` and
    ``_reaper`` and say how long a box may sit idle.
    """

    _sandboxes: dict[str, RemoteSandbox]
    _lock: threading.Lock
    _reaper: Reaper | None
    _sandbox_config: SandboxConfig

    @property
    def serves_background(self) -> bool:
        """Whether the bash tool can start background servers the user previews (a container or
        pod runs them; ``sandbox.preview.max_servers_per_thread`` above 0)."""
        return self._sandbox_config.preview.max_servers_per_thread > 0

    def idle_timeout(self) -> float:
        """Seconds a container or pod may sit unused before the reaper removes it."""
        raise NotImplementedError

    def release(self, thread_id: str) -> None:
        """Kill the thread's commands (waiting until they have ended) and remove its container or
        pod; its files stay."""
        with making_lock(self, thread_id), self._lock:  # after a making under way
            sandbox = self._sandboxes.pop(thread_id, None)
        if sandbox is not None:
            sandbox.stop_running()
            sandbox.box.forget()

    def release_all(self) -> None:
        """Stop the reaper and release every sandbox."""
        if self._reaper is not None:
            self._reaper.stop()
        with self._lock:
            thread_ids = list(self._sandboxes)
        for thread_id in thread_ids:
            self.release(thread_id)

    def reap_idle(self, max_idle_seconds: float | None = None) -> list[str]:
        """Remove the containers or pods unused for ``max_idle_seconds`` (default the config); thread ids."""
        limit = self.idle_timeout() if max_idle_seconds is None else max_idle_seconds
        now = time.monotonic()
        with self._lock:
            sandboxes = list(self._sandboxes.values())
        reaped = []
        for sandbox in sandboxes:
            box = sandbox.box
            if not box.started or box.busy or now - box.last_used < limit:
                continue
            box.forget()
            reaped.append(sandbox.thread_id)
        if reaped:
            log.info("idle_sandboxes_removed", count=len(reaped))
        return reaped
