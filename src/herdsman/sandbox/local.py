"""The local sandbox: each thread's files in a directory under ``<home>/threads/``.

File operations run in this process on host paths from :class:`ThreadPaths` (which refuses
escapes). Shell commands run through one of three small ``Shell`` strategies, chosen once per
provider from ``sandbox.isolation``:

- :class:`BwrapShell`: the command runs jailed by bubblewrap (see ``bwrap.py``);
- :class:`HostShell`: the command runs on the host in the thread's workspace, with virtual
  paths in the command rewritten to host paths (only with ``sandbox.allow_unisolated_bash``);
- :class:`RefusingShell`: bash is off, and the error says how to turn it on.

Both running shells apply ``sandbox.limits`` to each command through a
:class:`~herdsman.sandbox.limits.LocalLimiter` (cgroup v1 where writable, rlimits otherwise).

Writes to one host path are serialized by a process-wide lock per resolved path, so parallel
tool calls appending to one file lose nothing.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import threading
import weakref
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Iterator, Protocol

from herdsman.config.schema import HerdsmanConfig, SandboxConfig
from herdsman.sandbox import bwrap as bwrap_module
from herdsman.sandbox import seccomp
from herdsman.sandbox.base import (
    USER_DATA_ROOT,
    CommandNotAllowedError,
    ExecResult,
    PathList,
    SandboxError,
)
from herdsman.sandbox.bwrap import build_bwrap_argv, split_for_args_fd
from herdsman.sandbox.fs import FileTooLargeError, NotFoundError, ThreadFiles, WalkStop
from herdsman.sandbox.limits import Limits, LocalLimiter
from herdsman.sandbox.paths import ThreadPaths, validate_thread_id
from herdsman.sandbox.process import new_run_id, run_process
from herdsman.sandbox.quota import DiskQuota, Usage
from herdsman.sandbox.search import compile_glob
from herdsman.sandbox.snapshot import FileSnapshot, take_snapshot

log = logging.getLogger(__name__)

MAX_READ_BYTES = 50 * 1024 * 1024
MAX_LISTED = 10_000
MAX_WALKED = 100_000  # entries a glob looks at before it stops
WALK_SECONDS = 10.0  # time a listing or a glob may take before it stops

# -- shells -----------------------------------------------------------------------------


class Shell(Protocol):
    """Runs one command for one thread; the result may still contain host paths."""

    def run(
        self, paths: ThreadPaths, command: str, timeout: float, cancel: threading.Event | None = None
    ) -> ExecResult:
        """Run ``command`` with bash in the thread's workspace; stop early when ``cancel`` is set."""
        ...


class BwrapShell:
    """Commands jailed by bubblewrap: only the thread's directories are visible and writable.

    bubblewrap starts with an empty environment (``env -i``) and reads its arguments and the
    seccomp program from descriptors, so nothing of the host shows in the jail's pid 1.
    """

    def __init__(
        self, bwrap: str, config: SandboxConfig, limiter: LocalLimiter | None = None, disable_userns: bool = False
    ) -> None:
        self._bwrap = bwrap
        self._config = config
        self._disable_userns = disable_userns
        self._env = shutil.which("env", path="/usr/bin:/bin") or "/usr/bin/env"
        self.limiter = limiter or LocalLimiter(Limits.from_config(config))

    def run(
        self, paths: ThreadPaths, command: str, timeout: float, cancel: threading.Event | None = None
    ) -> ExecResult:
        """Run ``command`` inside a fresh bubblewrap jail."""
        run_id = new_run_id()
        filter_fd = seccomp.program_fd()
        arguments = -1
        try:
            argv = build_bwrap_argv(
                self._bwrap,
                paths,
                command,
                network=self._config.network,
                read_only_paths=self._config.read_only_paths,
                env={"HERDSMAN_RUN_ID": run_id},
                seccomp_fd=filter_fd,
                disable_userns=self._disable_userns,
            )
            arguments, short_argv = split_for_args_fd(argv)
            with self.limiter.command() as launch:
                return run_process(
                    launch.argv([self._env, "-i", *short_argv]),
                    timeout=timeout,
                    max_output_chars=self.limiter.limits.output_chars,
                    env={},
                    run_id=run_id,
                    cancel=cancel,
                    preexec_fn=launch.preexec_fn,
                    kill_tree=launch.kill_tree,
                    pass_fds=(filter_fd, arguments),
                )
        finally:
            os.close(filter_fd)
            if arguments >= 0:
                os.close(arguments)


class HostShell:
    """Commands run on the host, unisolated, in the thread's workspace (explicit opt-in only)."""

    def __init__(self, config: SandboxConfig, limiter: LocalLimiter | None = None) -> None:
        self._config = config
        self.limiter = limiter or LocalLimiter(Limits.from_config(config))

    def run(
        self, paths: ThreadPaths, command: str, timeout: float, cancel: threading.Event | None = None
    ) -> ExecResult:
        """Run ``command`` with bash on the host; virtual paths in it become host paths."""
        env = {
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "HOME": str(paths.workspace),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "TERM": "dumb",
        }
        bash = shutil.which("bash") or "/bin/sh"
        with self.limiter.command() as launch:
            return run_process(
                launch.argv([bash, "-c", paths.to_host_text(command)]),
                timeout=timeout,
                max_output_chars=self.limiter.limits.output_chars,
                cwd=paths.workspace,
                env=env,
                cancel=cancel,
                preexec_fn=launch.preexec_fn,
                kill_tree=launch.kill_tree,
            )


class RefusingShell:
    """Bash is off: every command fails with a message saying how to enable it."""

    def __init__(self, message: str) -> None:
        self.message = message

    def run(
        self, paths: ThreadPaths, command: str, timeout: float, cancel: threading.Event | None = None
    ) -> ExecResult:
        """Always raise CommandNotAllowedError."""
        raise CommandNotAllowedError(self.message)


_ENABLE_HINT = (
    "To enable it, install bubblewrap (apt-get install bubblewrap) so commands run isolated, "
    "or set sandbox.allow_unisolated_bash: true in config.yaml to run them on the host "
    "without isolation."
)


def choose_shell(config: SandboxConfig, status: bwrap_module.BwrapStatus) -> Shell:
    """The shell strategy for ``sandbox.isolation`` given what bubblewrap can do here."""
    if config.isolation in ("auto", "bwrap") and status.available and status.path:
        return BwrapShell(status.path, config, disable_userns=status.disable_userns)
    if config.isolation == "bwrap":
        return RefusingShell(
            f"The bash tool is unavailable: sandbox.isolation is bwrap but {status.reason}. "
            "Install bubblewrap (apt-get install bubblewrap), or set sandbox.isolation: auto "
            "and sandbox.allow_unisolated_bash: true in config.yaml to run commands on the host."
        )
    if config.allow_unisolated_bash:
        return HostShell(config)
    if config.isolation == "none":
        why = "sandbox.isolation is none and sandbox.allow_unisolated_bash is false"
        if not status.available:
            why += f" ({status.reason})"
        return RefusingShell(
            f"The bash tool is unavailable: {why}. Set sandbox.isolation: auto with bubblewrap "
            "installed (apt-get install bubblewrap), or set sandbox.allow_unisolated_bash: true "
            "in config.yaml to run commands on the host without isolation."
        )
    return RefusingShell(f"The bash tool is unavailable: {status.reason}. {_ENABLE_HINT}")


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


# -- write locks ------------------------------------------------------------------------


class _PathLock:
    __slots__ = ("lock", "__weakref__")

    def __init__(self) -> None:
        self.lock = threading.Lock()


_locks: "weakref.WeakValueDictionary[str, _PathLock]" = weakref.WeakValueDictionary()
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


# -- sandbox ----------------------------------------------------------------------------


class LocalSandbox:
    """Files and a shell for one thread, kept under ``<home>/threads/<thread_id>``.

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

    def execute(self, command: str, timeout: float | None = None) -> ExecResult:
        """Run ``command`` with bash in the workspace; output is bounded and scrubbed; a command
        that takes the thread past its disk quota is stopped and says so."""
        check_command(command)
        limit = timeout if timeout and timeout > 0 else self._config.command_timeout_seconds
        cancel = threading.Event()
        with self._running_lock:
            self._running.add(cancel)
        try:
            with self.quota.watch(cancel) as watch:
                result = self._shell.run(self.paths, command, limit, cancel)
        finally:
            with self._running_lock:
                self._running.discard(cancel)
        output = self.scrub(result.output)
        if watch.tripped is not None:
            output = f"{output.rstrip()}\n[{watch.message()}]".lstrip()
            result = replace(result, exit_code=result.exit_code or 1)
        return replace(
            result,
            output=output,
            stdout=None if result.stdout is None else self.scrub(result.stdout),
            stderr=None if result.stderr is None else self.scrub(result.stderr),
        )

    def snapshot(self) -> FileSnapshot:
        """Size and mtime of the files under ``/mnt/user-data`` (bounded; see ``snapshot.py``)."""
        return take_snapshot(self.files, USER_DATA_ROOT)

    def cancel_running(self) -> None:
        """Kill every command of this sandbox that is still running (they return at once)."""
        with self._running_lock:
            for event in self._running:
                event.set()

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


# -- provider ---------------------------------------------------------------------------


def _skills_dir(config: HerdsmanConfig) -> Path | None:
    if not config.skills.enabled:
        return None
    skills = config.skills.path.expanduser()
    if not skills.is_absolute():
        skills = Path.cwd() / skills
    return skills if skills.is_dir() else None


class LocalSandboxProvider:
    """Hands out :class:`LocalSandbox` instances, one per thread, safely across threads."""

    def __init__(self, config: HerdsmanConfig) -> None:
        self._config = config
        self._home = config.resolve_home()
        self._skills = _skills_dir(config)
        self._shell = choose_shell(config.sandbox, bwrap_module.bwrap_status())
        self._sandboxes: dict[str, LocalSandbox] = {}
        self._lock = threading.Lock()
        log.debug("local sandbox provider ready", extra={"shell": type(self._shell).__name__})

    @property
    def isolation(self) -> str:
        """How commands run: ``bwrap``, ``host`` or ``off``."""
        return {BwrapShell: "bwrap", HostShell: "host"}.get(type(self._shell), "off")

    def acquire(self, thread_id: str) -> LocalSandbox:
        """The sandbox of ``thread_id`` (directories created on first use)."""
        validate_thread_id(thread_id)
        with self._lock:
            sandbox = self._sandboxes.get(thread_id)
            if sandbox is None:
                paths = ThreadPaths.for_thread(self._home, thread_id, self._skills)
                sandbox = LocalSandbox(paths, self._shell, self._config.sandbox)
                self._sandboxes[thread_id] = sandbox
            return sandbox

    def release(self, thread_id: str) -> None:
        """Kill the thread's running commands and forget its sandbox object; files stay."""
        with self._lock:
            sandbox = self._sandboxes.pop(thread_id, None)
        if sandbox is not None:
            sandbox.cancel_running()

    def close(self) -> None:
        """Release every sandbox (running commands are killed)."""
        with self._lock:
            sandboxes = list(self._sandboxes.values())
            self._sandboxes.clear()
        for sandbox in sandboxes:
            sandbox.cancel_running()
        limiter = getattr(self._shell, "limiter", None)
        if limiter is not None:
            limiter.close()
