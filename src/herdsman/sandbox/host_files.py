"""A sandbox whose files are on this machine: the part the local, docker and kubernetes sandboxes share.

Every provider keeps a thread's files under ``<home>/threads/<id>/user-data`` (the docker engine
bind-mounts it, pods share the volume), so reading, writing, listing and searching them is the same
code everywhere, through :class:`~herdsman.sandbox.fs.ThreadFiles` (by descriptor, never by host
path) and charged to the thread's :class:`~herdsman.sandbox.quota.DiskQuota`. Only where commands
run differs: that is the :class:`Shell` a provider passes in.

Writes to one virtual path are serialized by a process-wide lock per thread and path, so parallel
tool calls appending to one file lose nothing.
"""

from __future__ import annotations

import os
import re
import socket
import stat
import threading
import time
import weakref
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from herdsman.config.schema import HerdsmanConfig, SandboxConfig
from herdsman.sandbox.background import BackgroundJob
from herdsman.sandbox.base import (
    USER_DATA_ROOT,
    CommandNotAllowedError,
    ExecResult,
    PathList,
    SandboxError,
    command_variables,
)
from herdsman.sandbox.fs import FileTooLargeError, NotFoundError, ThreadFiles
from herdsman.sandbox.fs_walk import WalkStop
from herdsman.sandbox.jail_ports import PortUnreachable
from herdsman.sandbox.paths import ThreadPaths
from herdsman.sandbox.quota import DiskQuota, Usage
from herdsman.sandbox.search import compile_glob
from herdsman.sandbox.skill_view import move_legacy_user_skills
from herdsman.sandbox.snapshot import FileSnapshot, take_snapshot

MAX_READ_BYTES = 50 * 1024 * 1024
MAX_LISTED = 10_000
MAX_WALKED = 100_000  # entries a glob looks at before it stops
WALK_SECONDS = 10.0  # time a listing or a glob may take before it stops
KERNEL_QUOTA_ERROR = "Disk quota exceeded"  # strerror(EDQUOT), as tools in the jail print it
STOP_WAIT_SECONDS = 30.0  # how long releasing a sandbox waits for its killed commands to end
_LOOPBACK_PORT = re.compile(r"(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\]):(\d{1,5})\b")
"""A port a command addresses on the loopback: the background servers of the thread it may reach."""


class Shell(Protocol):
    """Runs one command for one thread; the result may still contain host paths."""

    def run(
        self,
        paths: ThreadPaths,
        command: str,
        timeout: float,
        cancel: threading.Event | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        """Run ``command`` with bash in the thread's workspace; stop early when ``cancel`` is set;
        ``env``: extra variables of this command (already passed through ``command_variables``)."""
        ...


def skills_dir(config: HerdsmanConfig) -> Path | None:
    """The folder of skills every provider mounts read-only at ``/mnt/skills`` (None: skills off
    or no such folder); users' own skills left in ``custom/`` by an earlier Herdsman are moved
    out of it first (raises SandboxError when one cannot be)."""
    if not config.skills.enabled:
        return None
    skills = config.skills.path.expanduser()
    if not skills.is_absolute():
        skills = Path.cwd() / skills
    if not skills.is_dir():
        return None
    move_legacy_user_skills(skills)  # before any sandbox mounts custom/
    return skills


def release_if_deleted(provider: Any, sandboxes: Mapping[str, HostFilesSandbox], thread_id: str) -> None:
    """Release ``provider``'s sandbox of ``thread_id`` when its folder is gone: the thread was
    deleted (``DELETE /threads/{id}`` removes its files), by this process or another sharing the
    home, so the sandbox made next for the id starts with new, empty folders (a cached one kept
    answering that its folders were not available)."""
    cached = sandboxes.get(thread_id)
    if cached is not None and not cached.paths.user_data.is_dir():
        provider.release(thread_id)


def check_command(command: str) -> None:
    """Refuse a command no process can be given: a NUL byte, or text that is not valid (lone
    surrogates), with a message instead of an internal error."""
    if "\x00" in command:
        raise SandboxError("the command contains a NUL character; remove it and run it again")
    try:
        command.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise SandboxError(
            "the command holds characters that are not valid text (lone surrogates); write it in plain UTF-8"
        ) from None


class _PathLock:
    __slots__ = ("lock", "__weakref__")

    def __init__(self) -> None:
        self.lock = threading.Lock()


_locks: weakref.WeakValueDictionary[str, _PathLock] = weakref.WeakValueDictionary()
_locks_guard = threading.Lock()


@contextmanager
def path_lock(key: str) -> Iterator[None]:
    """Hold the process-wide lock named ``key`` (one lock per thread and virtual path)."""
    with _locks_guard:
        holder = _locks.get(key)
        if holder is None:
            holder = _PathLock()
            _locks[key] = holder
    with holder.lock:
        yield


def making_lock(provider: object, thread_id: str) -> AbstractContextManager[None]:
    """The lock under which ``provider`` makes and releases the sandbox of ``thread_id``: one per
    thread, so a slow making (the quota volume's lock, a container handed over) holds up no
    other thread's acquire."""
    return path_lock(f"sandbox-of:{id(provider)}:{thread_id}")


class HostFilesSandbox:
    """Files and a shell for one thread; the files kept on this machine under
    ``<home>/threads/<thread_id>``, the shell any :class:`Shell` (local, a container, a pod).

    Every host-side access to the thread's files goes through :class:`ThreadFiles` (by
    descriptors, never by host path) and is charged to the thread's :class:`DiskQuota`.
    """

    def __init__(
        self, paths: ThreadPaths, shell: Shell, config: SandboxConfig, owner: tuple[int, int] | None = None
    ) -> None:
        self.thread_id = paths.thread_id
        self.paths = paths
        self._shell = shell
        self._config = config
        self._running: set[threading.Event] = set()
        self._running_lock = threading.Lock()
        self._running_changed = threading.Condition(self._running_lock)
        self._jobs: list[BackgroundJob] = []
        self._announced: set[tuple[str, int]] = set()  # (job run id, port) already reported by new_listeners
        paths.ensure_dirs()
        self.quota = DiskQuota(
            self._measure,
            None if config.disk_quota_mb is None else config.disk_quota_mb * 1024 * 1024,
            config.max_files,
        )
        self.files = ThreadFiles(paths, owner=owner, quota=self.quota)

    def scrub(self, text: str) -> str:
        """``text`` with this thread's host paths replaced by virtual ones."""
        return self.paths.scrub(text)

    def _measure(self) -> Usage:
        """Bytes on disk and entries under ``/mnt/user-data`` (bounded walk, see quota.py)."""
        total = count = 0
        cap = (self._config.max_files or 10_000_000) + 1
        for entry in self.files.walk(USER_DATA_ROOT, limit=cap, seconds=30.0):
            count += 1
            total += entry.st.st_blocks * 512
        return Usage(total, count)

    def execute(
        self,
        command: str,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        *,
        cancel: threading.Event | None = None,
        run_id: str | None = None,
    ) -> ExecResult:
        """Run ``command`` with bash in the workspace; output is bounded and scrubbed; a command
        that takes the thread past its disk quota is stopped and says so. ``env``: extra
        variables of this command (:func:`~herdsman.sandbox.base.command_variables`); ``cancel``
        stops it early; ``run_id`` marks its processes (background jobs: a shell with
        ``background`` only)."""
        extra = command_variables(env)
        check_command(command)
        limit = timeout if timeout and timeout > 0 else self._config.command_timeout_seconds
        cancel = cancel or threading.Event()
        with self._running_lock:
            self._running.add(cancel)
        netns_fd = self._server_network(command) if run_id is None else None
        try:
            with self.quota.watch(cancel) as watch:
                if netns_fd is not None:
                    result = self._shell.run(self.paths, command, limit, cancel, extra, netns_fd=netns_fd)  # type: ignore[call-arg]  # only the bwrap shell takes netns_fd, and only it has a server network
                elif run_id is None:
                    result = self._shell.run(self.paths, command, limit, cancel, extra)
                else:
                    result = self._shell.run(self.paths, command, limit, cancel, extra, run_id=run_id)  # type: ignore[call-arg]  # a run_id comes only for a background job, run only by shells that take it (see background()); the Shell protocol leaves it out
        finally:
            if netns_fd is not None:
                os.close(netns_fd)
            with self._running_lock:
                self._running.discard(cancel)
                self._running_changed.notify_all()
        output = self.scrub(result.output)
        if watch.tripped is not None:
            output = f"{output.rstrip()}\n[{watch.message()}]".lstrip()
            result = replace(result, exit_code=result.exit_code or 1)
        elif KERNEL_QUOTA_ERROR in output and self.quota.enabled:  # the kernel refused a write (quota volume)
            note = self.quota.error("a write of the command was refused", self.quota.usage(fresh=True))
            output = f"{output.rstrip()}\n[{note}]"
        return replace(
            result,
            output=output,
            stdout=None if result.stdout is None else self.scrub(result.stdout),
            stderr=None if result.stderr is None else self.scrub(result.stderr),
        )

    # -- background servers ----------------------------------------------------------------

    def start_background(self, command: str) -> BackgroundJob:
        """Start ``command`` as a background job (``background.py``); it runs until it ends, is
        stopped, or ``sandbox.preview.server_seconds`` pass."""
        preview = self._config.preview
        if not getattr(self._shell, "background", False):
            raise CommandNotAllowedError(
                "Background servers need bubblewrap jails (sandbox.provider: local with bubblewrap installed) "
                "or a container sandbox (docker, kubernetes); run the command without background, or ask "
                "the user to enable it."
            )
        check_command(command)
        problem = getattr(self._shell, "background_problem", None)
        if problem is not None and (why := problem()):
            raise CommandNotAllowedError(f"{why}; run the command without background.")
        with self._running_lock:
            self._jobs = [job for job in self._jobs if job.running]
            if len(self._jobs) >= preview.max_servers_per_thread:
                running = ", ".join(f"{job.number}: {job.command[:60]}" for job in self._jobs)
                raise SandboxError(
                    f"{len(self._jobs)} background servers already run in this thread "
                    f"(sandbox.preview.max_servers_per_thread is {preview.max_servers_per_thread}): "
                    f"{running or 'none'}. "
                    "Reuse one, or wait until one ends."
                )
            number = max((job.number for job in self._jobs), default=0) + 1

            def run(run_id: str, cancel: threading.Event) -> ExecResult:
                return self.execute(command, preview.server_seconds, cancel=cancel, run_id=run_id)

            network = getattr(self._shell, "job_network", None)
            job = BackgroundJob(number, command, run, network) if network else BackgroundJob(number, command, run)
            self._jobs.append(job)
        return job

    @property
    def servers_reachable(self) -> bool:
        """Whether a later command reaches a background job's server of the thread at 127.0.0.1:PORT
        by joining the job's network (bubblewrap jails, run as root: see :meth:`_server_network`;
        a container's commands share its network without that)."""
        return bool(getattr(self._shell, "joins_networks", False)) and os.geteuid() == 0

    def _server_network(self, command: str) -> int | None:
        """The network namespace (a new descriptor) of the running background job of this thread
        that listens on a port ``command`` addresses on the loopback (``curl localhost:8000``,
        ``127.0.0.1:8000``), so the command reaches that server; None for any other command, which
        gets a namespace of its own as always. Only a jail of this same thread's job is joined, and
        only as root (see ``jail_ports.entering_network``); its namespace reaches nothing else."""
        ports = {int(p) for p in _LOOPBACK_PORT.findall(command)}
        if not ports or not self.servers_reachable:
            return None
        for job in self.background_jobs():
            if job.running and ports & set(job.ports()):
                return job.network_fd()
        return None

    def background_jobs(self) -> list[BackgroundJob]:
        """The thread's background jobs, those still running first (ended ones until the next start)."""
        with self._running_lock:
            jobs = list(self._jobs)
        return sorted(jobs, key=lambda job: (not job.running, job.number))

    def preview_connection(self, port: int) -> socket.socket:
        """A blocking socket connected to ``port`` inside the sandbox, on the loopback of the
        running job listening there; PortUnreachable saying why when none is."""
        jobs = [job for job in self.background_jobs() if job.running]
        for job in jobs:
            if port in job.ports():
                return job.connect(port)
        if not jobs:
            raise PortUnreachable(
                f"nothing is listening on port {port}: no background server runs in this "
                "thread (the agent starts one with bash and background=true)"
            )
        ports = sorted({p for job in jobs for p in job.ports()})
        raise PortUnreachable(
            f"nothing is listening on port {port} in this thread's sandbox"
            + (f"; listening: {', '.join(map(str, ports))}" if ports else " (yet)")
        )

    def new_listeners(self) -> list[tuple[BackgroundJob, int]]:
        """The (job, port) pairs that started listening since the last call: what a ``preview``
        event announces after a bash call. Cheap without a running background server (nothing
        is read then)."""
        with self._running_lock:
            jobs = [job for job in self._jobs if job.running]
        found = []
        for job in jobs:
            for port in job.ports():
                if (job.run_id, port) not in self._announced:
                    self._announced.add((job.run_id, port))
                    found.append((job, port))
        return found

    def listening_ports(self) -> list[int]:
        """Every port the thread's running background servers listen on, sorted (none without
        one: nothing is asked of the sandbox then)."""
        return sorted({port for job in self.background_jobs() if job.running for port in job.ports()})

    def snapshot(self) -> FileSnapshot:
        """Size and mtime of the files under ``/mnt/user-data`` (bounded; see ``snapshot.py``)."""
        return take_snapshot(self.files, USER_DATA_ROOT)

    def cancel_running(self) -> None:
        """Kill every command of this sandbox that is still running (they return at once)."""
        with self._running_lock:
            for event in self._running:
                event.set()

    def stop_running(self, timeout: float = STOP_WAIT_SECONDS) -> bool:
        """Kill every running command and wait until each has ended (at most ``timeout``
        seconds); whether none runs any more. Deleting a thread waits so: a command still
        writing while its folders were removed left them, and the next thread given the id
        (another user's too) was placed on what it wrote."""
        deadline = time.monotonic() + timeout
        with self._running_changed:
            for event in self._running:
                event.set()
            while self._running and (left := deadline - time.monotonic()) > 0:
                self._running_changed.wait(left)
            if self._running:
                return False
        # a background job's command has returned; its helper in the job's namespace goes next
        return all(job.wait_ended(deadline - time.monotonic()) for job in list(self._jobs))

    def read_text(self, path: str) -> str:
        """The text of the file at virtual ``path`` (UTF-8, undecodable bytes replaced)."""
        try:
            data = self.files.read_bytes(path, MAX_READ_BYTES)
        except FileTooLargeError:
            raise SandboxError(
                f"{path} is larger than {MAX_READ_BYTES // (1024 * 1024)} MB; "
                "use bash (head, tail, grep, sed -n) to look at parts of it"
            ) from None
        return data.decode("utf-8", errors="replace")

    def write_text(self, path: str, content: str, append: bool = False) -> int:
        """Write or append ``content`` at virtual ``path``, creating parent directories."""
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError:
            raise SandboxError(
                "the content holds characters that are not valid text (lone surrogates); write plain UTF-8"
            ) from None
        key = self.paths.normalize(path)
        with path_lock(f"{self.thread_id}:{key}"):
            self.files.write_bytes(path, data, append=append)
        return len(data)

    def list_dir(self, path: str, max_depth: int = 2) -> list[str]:
        """Virtual paths below ``path`` (symlinks not followed), directories ending in ``/``;
        a :class:`PathList` whose ``note`` says when the listing was cut."""
        stop = WalkStop()
        found = PathList()
        for entry in self.files.walk(path, max_depth=max_depth, limit=MAX_LISTED, seconds=WALK_SECONDS, stop=stop):
            found.append(entry.vpath + "/" if entry.is_dir else entry.vpath)
        found.note = stop.reason
        return found

    def glob(self, pattern: str, path: str) -> list[str]:
        """Virtual paths below ``path`` matching ``pattern`` (``**`` spans directories); a
        :class:`PathList` whose ``note`` says when the search was cut. Symlinked folders are
        not entered; a link that leaves the sandbox is not listed."""
        if not pattern:
            raise SandboxError("empty glob pattern; use for example **/*.py")
        base = path
        if pattern.startswith("/"):
            base, pattern = self._split_absolute_pattern(pattern)
        matcher = compile_glob(pattern)
        try:
            base_v = self.files.resolve_virtual(base)
            st = self.files.stat(base_v)
        except NotFoundError:
            return PathList()
        if st is None or not stat.S_ISDIR(st.st_mode):
            return PathList()
        stop = WalkStop()
        matches = PathList()
        prefix = len(base_v.rstrip("/")) + 1
        for entry in self.files.walk(
            base_v, max_depth=matcher.depth, limit=MAX_WALKED, seconds=WALK_SECONDS, stop=stop
        ):
            if not matcher.match(entry.vpath[prefix:]):
                continue
            if entry.is_link:
                try:
                    target = self.files.stat(entry.vpath)
                except SandboxError:
                    continue  # leaves the sandbox
                if target is None:
                    continue
                matches.append(entry.vpath + "/" if stat.S_ISDIR(target.st_mode) else entry.vpath)
            else:
                matches.append(entry.vpath + "/" if entry.is_dir else entry.vpath)
            if len(matches) >= MAX_LISTED:
                stop.reason = f"stopped after {MAX_LISTED} matches"
                break
        matches.sort()
        matches.note = stop.reason
        return matches

    def _split_absolute_pattern(self, pattern: str) -> tuple[str, str]:
        parts = pattern.split("/")
        base: list[str] = []
        for i, part in enumerate(parts):
            if any(ch in part for ch in "*?["):
                return "/".join(base) or "/", "/".join(parts[i:])
            base.append(part)
        raise SandboxError(f"glob pattern {pattern!r} has no wildcard; use read_file or ls")

    def exists(self, path: str) -> bool:
        """Whether virtual ``path`` exists (a dangling link inside the sandbox counts as not)."""
        return self.files.exists(path)
