"""The local sandbox: each thread's files in a directory under ``<home>/threads/``.

File operations are :class:`~herdsman.sandbox.host_files.HostFilesSandbox`'s, shared with the
docker and kubernetes sandboxes. Shell commands run through one of three small ``Shell``
strategies, chosen once per provider from ``sandbox.isolation``:

- :class:`BwrapShell`: the command runs jailed by bubblewrap (see ``bwrap.py``);
- :class:`HostShell`: the command runs on the host in the thread's workspace, with virtual
  paths in the command rewritten to host paths (only with ``sandbox.allow_unisolated_bash``);
- :class:`RefusingShell`: bash is off, and the error says how to turn it on.

A thread's ``user-data`` lives on the quota volume when it can be had (``volume.py``: the kernel
holds the thread to ``sandbox.disk_quota_mb``). Both running shells apply ``sandbox.limits`` to each
command through a :class:`~herdsman.sandbox.limits.LocalLimiter` (cgroup v1 or v2 where writable,
rlimits otherwise).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from collections.abc import Mapping

from herdsman.config.schema import HerdsmanConfig, SandboxConfig
from herdsman.logs import get_logger
from herdsman.sandbox import bwrap as bwrap_module
from herdsman.sandbox import netns, seccomp
from herdsman.sandbox.base import CommandNotAllowedError, ExecResult
from herdsman.sandbox.bwrap import build_bwrap_argv, split_for_args_fd
from herdsman.sandbox.host_files import HostFilesSandbox, Shell, making_lock, release_if_deleted, skills_dir
from herdsman.sandbox.jail_ports import entering_network
from herdsman.sandbox.limits import Limits, LocalLimiter
from herdsman.sandbox.owners import thread_paths
from herdsman.sandbox.paths import ThreadPaths, secure_home, validate_thread_id
from herdsman.sandbox.process import new_run_id, run_process
from herdsman.sandbox.volume import place_on_volume, quota_volume

log = get_logger(__name__)


# -- shells -----------------------------------------------------------------------------


class BwrapShell:
    """Commands jailed by bubblewrap: only the thread's directories are visible and writable.

    bubblewrap starts with an empty environment (``env -i``) and reads its arguments and the
    seccomp program from descriptors, so nothing of the host shows in the jail's pid 1. With
    ``sandbox.network`` each command's jail gets its own network through ``slirp`` (the path of
    slirp4netns, see ``netns.py``), which lives exactly as long as the command. It can run
    background servers (``background.py``): each jail has a network namespace of its own.
    """

    background = True
    joins_networks = True  # run(netns_fd=...): a command can join a background job's network

    def __init__(
        self,
        bwrap: str,
        config: SandboxConfig,
        limiter: LocalLimiter | None = None,
        disable_userns: bool = False,
        slirp: str | None = None,
    ) -> None:
        self._bwrap = bwrap
        self._config = config
        self._slirp = slirp
        self._disable_userns = disable_userns
        self._env = shutil.which("env", path="/usr/bin:/bin") or "/usr/bin/env"
        self.limiter = limiter or LocalLimiter(Limits.from_config(config))
        tmp_mb = config.limits.tmp_mb
        self._tmp_bytes = tmp_mb * 1024 * 1024 if tmp_mb and bwrap_module.supports_tmpfs_size(bwrap) else None
        if tmp_mb and self._tmp_bytes is None:
            log.warning(
                "sandbox_limits_unenforced",
                limits=["tmp_mb"],
                message="sandbox.limits.tmp_mb is not enforced: this bubblewrap has no --size (0.8 or later "
                "needed); the jail's /tmp, /var/tmp and /dev/shm are unsized",
            )

    def run(
        self,
        paths: ThreadPaths,
        command: str,
        timeout: float,
        cancel: threading.Event | None = None,
        env: Mapping[str, str] | None = None,
        run_id: str | None = None,
        netns_fd: int | None = None,
    ) -> ExecResult:
        """Run ``command`` inside a fresh bubblewrap jail (its processes marked with ``run_id``);
        with ``netns_fd`` (a background job's network namespace, see
        :meth:`~herdsman.sandbox.host_files.HostBackedSandbox.execute`) the jail is launched in
        that namespace and keeps it, so ``curl localhost:PORT`` reaches the job's server."""
        run_id = run_id or new_run_id()
        filter_fd = seccomp.program_fd()
        arguments = -1
        joined = netns_fd is not None
        try:
            with contextlib.nullcontext() if joined else self._network() as network:
                argv = build_bwrap_argv(
                    self._bwrap,
                    paths,
                    command,
                    network=network is not None,
                    joined_network=joined,
                    network_args=network.bwrap_args if network else (),
                    read_only_paths=self._config.read_only_paths,
                    env={**(env or {}), "HERDSMAN_RUN_ID": run_id},
                    seccomp_fd=filter_fd,
                    disable_userns=self._disable_userns,
                    tmp_bytes=self._tmp_bytes,
                )
                arguments, short_argv = split_for_args_fd(argv)
                # a networked command's group is not pooled: slirp4netns's sockets to a peer that
                # stopped reading outlive it and stay charged to the group for minutes
                with self.limiter.command(pool=network is None) as launch:
                    if network:
                        network.start(launch.prefix, launch.preexec_fn)
                    result = run_process(
                        launch.argv([self._env, "-i", *short_argv]),
                        timeout=timeout,
                        max_output_chars=self.limiter.limits.output_chars,
                        env={},
                        run_id=run_id,
                        cancel=cancel,
                        preexec_fn=entering_network(netns_fd, launch.preexec_fn)
                        if netns_fd is not None
                        else launch.preexec_fn,
                        kill_tree=launch.kill_tree,
                        pass_fds=(filter_fd, arguments, *(network.pass_fds if network else ())),
                    )
                if network:
                    network.raise_if_failed()
                return result
        finally:
            os.close(filter_fd)
            if arguments >= 0:
                os.close(arguments)

    def _network(self) -> contextlib.AbstractContextManager[netns.JailNetwork | None]:
        """One command's network (its own namespace and slirp4netns), or none."""
        if not self._config.network:
            return contextlib.nullcontext()
        if self._slirp is None:  # choose_shell refuses this; never fall back to the host's network
            raise CommandNotAllowedError(netns.refusal(netns.stack_status()))
        return netns.JailNetwork(self._slirp)


class HostShell:
    """Commands run on the host, unisolated, in the thread's workspace (explicit opt-in only)."""

    def __init__(self, config: SandboxConfig, limiter: LocalLimiter | None = None) -> None:
        self._config = config
        self.limiter = limiter or LocalLimiter(Limits.from_config(config))

    def run(
        self,
        paths: ThreadPaths,
        command: str,
        timeout: float,
        cancel: threading.Event | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        """Run ``command`` with bash on the host; virtual paths in it become host paths."""
        variables = {
            **(env or {}),
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
                env=variables,
                cancel=cancel,
                preexec_fn=launch.preexec_fn,
                kill_tree=launch.kill_tree,
            )


class RefusingShell:
    """Bash is off: every command fails with a message saying how to enable it."""

    def __init__(self, message: str) -> None:
        self.message = message

    def run(
        self,
        paths: ThreadPaths,
        command: str,
        timeout: float,
        cancel: threading.Event | None = None,
        env: Mapping[str, str] | None = None,
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
        if not config.network:
            return BwrapShell(status.path, config, disable_userns=status.disable_userns)
        stack = netns.stack_status()
        if not stack.available:
            return RefusingShell(f"The bash tool is unavailable: {netns.refusal(stack)}")
        return BwrapShell(status.path, config, disable_userns=status.disable_userns, slirp=stack.path)
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


# -- sandbox ----------------------------------------------------------------------------


class LocalSandbox(HostFilesSandbox):
    """Files and a shell for one thread, kept under ``<home>/threads/<thread_id>``; commands run on
    this machine through one of the shells above (bubblewrap, or the host by explicit opt-in)."""


# -- provider ---------------------------------------------------------------------------


class LocalSandboxProvider:
    """Hands out :class:`LocalSandbox` instances, one per thread, safely across threads."""

    def __init__(self, config: HerdsmanConfig) -> None:
        self._config = config
        self._home = config.resolve_home()
        secure_home(self._home)
        self._skills = skills_dir(config)
        self._shell = choose_shell(config.sandbox, bwrap_module.bwrap_status())
        if config.sandbox.network and isinstance(self._shell, RefusingShell):
            log.warning("bash_tool_off", reason=self._shell.message)
        self.volume = quota_volume(config.sandbox.quota_volume, config.sandbox.disk_quota_mb)
        self._sandboxes: dict[str, LocalSandbox] = {}
        self._lock = threading.Lock()
        log.debug("local_sandbox_provider_ready", shell=type(self._shell).__name__)

    @property
    def isolation(self) -> str:
        """How commands run: ``bwrap``, ``host`` or ``off``."""
        return {BwrapShell: "bwrap", HostShell: "host"}.get(type(self._shell), "off")

    @property
    def serves_background(self) -> bool:
        """Whether the bash tool can start background servers the user previews (bubblewrap jails)."""
        return getattr(self._shell, "background", False) and self._config.sandbox.preview.max_servers_per_thread > 0

    def acquire(self, thread_id: str) -> LocalSandbox:
        """The sandbox of ``thread_id`` (directories created on first use)."""
        validate_thread_id(thread_id)
        release_if_deleted(self, self._sandboxes, thread_id)
        with self._lock:
            sandbox = self._sandboxes.get(thread_id)
        if sandbox is not None:
            return sandbox
        # made under the thread's own lock, not the provider's: a burst of new threads places
        # their folders on the volume side by side, not one after another
        with making_lock(self, thread_id):
            with self._lock:
                sandbox = self._sandboxes.get(thread_id)
            if sandbox is None:
                place_on_volume(self.volume, self._home, thread_id, self._config.sandbox)
                paths = thread_paths(self._home, thread_id, self._skills)
                sandbox = LocalSandbox(paths, self._shell, self._config.sandbox)
                with self._lock:
                    self._sandboxes[thread_id] = sandbox
            return sandbox

    def release(self, thread_id: str) -> None:
        """Kill the thread's running commands, wait until they have ended, and forget its sandbox
        object; files stay."""
        with making_lock(self, thread_id), self._lock:  # after a making under way
            sandbox = self._sandboxes.pop(thread_id, None)
        if sandbox is not None:
            sandbox.stop_running()

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
