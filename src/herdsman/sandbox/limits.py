"""Resource limits of sandboxed commands: one ``sandbox.limits`` section, read by every provider.

:class:`Limits` is the provider-neutral form of the config section. The docker and kubernetes
providers translate it into their engine's settings; for the local provider this module puts
each command in its own cgroup (memory, pids, cpu): cgroup v1 when its hierarchies are writable,
else a delegated cgroup v2 subtree (``cgroup_v2.py``), and falls back to rlimits otherwise:

=============  ==============================  =====================  ============================
limit          cgroup v1 (preferred)           cgroup v2              rlimit fallback
=============  ==============================  =====================  ============================
memory_mb      ``memory.limit_in_bytes``       ``memory.max``         ``RLIMIT_AS`` (address
               (+ ``memsw`` when present,      (+ ``swap.max`` 0;     space, per process)
               + ``kmem.tcp``: TCP buffers)    TCP buffers counted)
pids           ``pids.max``                    ``pids.max``           ``RLIMIT_NPROC`` (per user;
                                                                      root is exempt)
cpus           ``cpu.cfs_quota_us``            ``cpu.max``            none (the command timeout
                                                                      bounds CPU time)
file_size_mb   --                              --                     ``RLIMIT_FSIZE`` (always set)
=============  ==============================  =====================  ============================

The command joins its group before it starts (see :func:`launch_prefix`), so every process it
starts, bubblewrap's pid namespace included, is counted. When the command ends, whatever is
still in the group is killed, and the empty group goes back to a small pool for the next
command (a fresh group slows the start of a command by about 10 ms). When no cgroup can be used,
:func:`unenforced_limits` names the limits that are then weaker or absent; the limiter logs them
once per process and ``herdsman config check`` prints them. Written by hand because no
maintained library manages cgroup groups for a child process.
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from herdsman.config.schema import SandboxConfig
from herdsman.logs import get_logger
from herdsman.sandbox import cgroup_v2
from herdsman.sandbox.process import kill_until_gone

log = get_logger(__name__)

MIB = 1024 * 1024
CPU_PERIOD_US = 100_000
_CONTROLLERS = ("memory", "pids", "cpu")
_GROUP_PARENT = "herdsman-sandbox"
_POOL_SIZE = 8


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandbox; ``None`` means no limit."""

    memory_mb: int | None = None
    cpus: float | None = None
    pids: int | None = None
    file_size_mb: int | None = None
    output_chars: int = 20_000

    @classmethod
    def from_config(cls, config: SandboxConfig) -> Limits:
        """The limits of ``sandbox.limits`` (output falls back to ``sandbox.max_output_chars``)."""
        section = config.limits
        return cls(
            memory_mb=section.memory_mb,
            cpus=section.cpus,
            pids=section.pids,
            file_size_mb=section.file_size_mb,
            output_chars=section.output or config.max_output_chars,
        )

    @property
    def memory_bytes(self) -> int | None:
        """``memory_mb`` in bytes."""
        return self.memory_mb * MIB if self.memory_mb else None

    @property
    def file_size_bytes(self) -> int | None:
        """``file_size_mb`` in bytes."""
        return self.file_size_mb * MIB if self.file_size_mb else None


# -- cgroup v1 ----------------------------------------------------------------------------


def _v1_mounts() -> dict[str, Path]:
    """Mount points of the cgroup v1 hierarchies, by controller name."""
    mounts: dict[str, Path] = {}
    try:
        with open("/proc/self/mounts") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return mounts
    for line in lines:
        parts = line.split()
        if len(parts) < 4 or parts[2] != "cgroup":
            continue
        for option in parts[3].split(","):
            if option in _CONTROLLERS:
                mounts.setdefault(option, Path(parts[1]))
    return mounts


def _own_groups() -> dict[str, str]:
    """This process's cgroup v1 path for each controller (from ``/proc/self/cgroup``)."""
    own: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return own
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            if controller in _CONTROLLERS:
                own[controller] = path
    return own


@functools.cache
def cgroup_v1_parents() -> dict[str, Path]:
    """For each controller we can use, the writable directory under which command groups go.

    The directory is ``<mount>/<our own group>/herdsman-sandbox``, so limits nest under any
    limit this process already has. A controller that is missing or read-only is left out.
    """
    mounts, own = _v1_mounts(), _own_groups()
    usable: dict[str, Path] = {}
    for controller in _CONTROLLERS:
        if controller not in mounts or controller not in own:
            continue
        parent = mounts[controller] / own[controller].lstrip("/") / _GROUP_PARENT
        probe = parent / f"probe-{uuid.uuid4().hex[:8]}"
        try:
            parent.mkdir(exist_ok=True)
            probe.mkdir()
            probe.rmdir()
        except OSError:
            continue
        usable[controller] = parent
    return usable


def remove_stale_groups(parents: dict[str, Path]) -> None:
    """Remove empty command groups left by processes that are gone (``cmd-<pid>-...``)."""
    for parent in parents.values():
        try:
            entries = list(parent.iterdir())
        except OSError:
            continue
        for entry in entries:
            parts = entry.name.split("-")
            if len(parts) != 3 or parts[0] != "cmd" or not parts[1].isdigit():
                continue
            if int(parts[1]) == os.getpid() or os.path.exists(f"/proc/{parts[1]}"):
                continue
            try:
                entry.rmdir()
            except OSError:
                pass


def _write(path: Path, value: str) -> None:
    with open(path, "w") as fh:
        fh.write(value)


class CommandGroup:
    """The cgroup v1 groups of one command: created with limits, joined, emptied, removed."""

    def __init__(self, limits: Limits, parents: dict[str, Path]) -> None:
        name = f"cmd-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.dirs: dict[str, Path] = {}
        wanted = {
            "memory": limits.memory_bytes is not None,
            "pids": limits.pids is not None,
            "cpu": limits.cpus is not None,
        }
        try:
            for controller, parent in parents.items():
                if not wanted[controller]:
                    continue
                directory = parent / name
                directory.mkdir()
                self.dirs[controller] = directory
                self._configure(controller, directory, limits)
        except OSError:
            self.remove()
            raise

    @staticmethod
    def _configure(controller: str, directory: Path, limits: Limits) -> None:
        if controller == "memory" and limits.memory_bytes is not None:
            _write(directory / "memory.limit_in_bytes", str(limits.memory_bytes))
            memsw = directory / "memory.memsw.limit_in_bytes"
            if memsw.exists():  # no swapping past the limit either
                _write(memsw, str(limits.memory_bytes))
            tcp = directory / "memory.kmem.tcp.limit_in_bytes"
            if tcp.exists():  # v1 charges TCP buffers to a group only once this is set (v2 always does)
                _write(tcp, str(limits.memory_bytes))
        elif controller == "pids" and limits.pids is not None:
            _write(directory / "pids.max", str(limits.pids))
        elif controller == "cpu" and limits.cpus is not None:
            _write(directory / "cpu.cfs_period_us", str(CPU_PERIOD_US))
            _write(directory / "cpu.cfs_quota_us", str(max(1000, int(limits.cpus * CPU_PERIOD_US))))

    @property
    def controllers(self) -> frozenset[str]:
        """The controllers that limit this group's processes."""
        return frozenset(self.dirs)

    @property
    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files a process writes its pid to, to join."""
        return [str(d / "cgroup.procs") for d in self.dirs.values()]

    def pids(self) -> list[int]:
        """Processes still in the group."""
        found: set[int] = set()
        for directory in self.dirs.values():
            try:
                found.update(int(p) for p in (directory / "cgroup.procs").read_text().split())
            except OSError:
                continue
        return sorted(found)

    def kill_all(self) -> None:
        """SIGKILL every process in the group until it is empty (catches escaped daemons)."""
        kill_until_gone(self.pids, passes=50)

    def remove(self) -> None:
        """Kill what is left and remove the groups (retrying while the kernel reaps)."""
        self.kill_all()
        for directory in self.dirs.values():
            for _ in range(50):
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
            else:
                log.warning("cgroup_remove_failed", group=directory.name)


class Group(Protocol):
    """One command's cgroup(s), v1 (:class:`CommandGroup`) or v2 (``V2CommandGroup``)."""

    @property
    def controllers(self) -> frozenset[str]:
        """The controllers the group has (memory, pids, cpu...)."""

    @property
    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files a process is written into to join the group."""

    def pids(self) -> list[int]:
        """The processes in the group now."""

    def kill_all(self) -> None:
        """Kill every process in the group."""

    def remove(self) -> None:
        """Remove the group (after its processes are gone)."""


@dataclass(frozen=True)
class Groups:
    """Where this host's command groups come from: ``mechanism`` is ``cgroup-v1``, ``cgroup-v2``
    or ``rlimit`` (none); ``new`` makes one group; ``reason`` says why there is none."""

    mechanism: str
    controllers: frozenset[str]
    new: Callable[[Limits], Group] | None = None
    reason: str = ""
    stale_dirs: tuple[Path, ...] = ()


def host_groups() -> Groups:
    """cgroup v1 when any of its controllers is writable, else a delegated cgroup v2 subtree."""
    parents = cgroup_v1_parents()
    if parents:
        return Groups(
            "cgroup-v1",
            frozenset(parents),
            lambda limits: CommandGroup(limits, parents),
            stale_dirs=tuple(parents.values()),
        )
    delegation = cgroup_v2.host_delegation()
    if delegation.parent is not None:
        parent = delegation.parent
        return Groups(
            "cgroup-v2",
            delegation.controllers,
            lambda limits: cgroup_v2.V2CommandGroup(limits, delegation),
            stale_dirs=(parent,),
        )
    return Groups("rlimit", frozenset(), reason=f"no writable cgroup (v1 or v2; {delegation.reason})")


_FIX = (
    "run Herdsman where its cgroup is writable (a systemd unit with Delegate=yes, or "
    "systemd-run --user --scope -p Delegate=yes herdsman serve; a container with a writable cgroup)"
)


def unenforced_limits(limits: Limits, groups: Groups, root: bool | None = None) -> list[str]:
    """One sentence per limit of ``limits`` that this host cannot enforce as configured (empty when
    all are): what is missing, why, and what is used instead."""
    root = os.geteuid() == 0 if root is None else root
    why = groups.reason or f"the {groups.mechanism} hierarchy lacks the controller"
    found: list[str] = []
    if limits.pids is not None and "pids" not in groups.controllers:
        if root:
            found.append(f"sandbox.limits.pids is not enforced for root: {why}; RLIMIT_NPROC does not bind root")
        else:
            found.append(
                f"sandbox.limits.pids is enforced only per host user, not per command: {why}; "
                "RLIMIT_NPROC counts all the user's processes"
            )
    if limits.memory_mb is not None and "memory" not in groups.controllers:
        found.append(
            f"sandbox.limits.memory_mb is enforced only per process, as address space (RLIMIT_AS), "
            f"not for a command's processes together: {why}"
        )
    if limits.cpus is not None and "cpu" not in groups.controllers:
        found.append(f"sandbox.limits.cpus is not enforced: {why}; only the command timeout bounds CPU time")
    if found:
        found.append(f"to enforce them, {_FIX}")
    return found


_warned = False
_warned_lock = threading.Lock()


def _warn_once(messages: list[str], mechanism: str) -> None:
    """Log the unenforced limits once per process (every provider builds its own limiter)."""
    global _warned
    with _warned_lock:
        if _warned or not messages:
            return
        _warned = True
    log.warning(
        "sandbox_limits_unenforced",
        mechanism=mechanism,
        limits=messages,
        message="sandbox limits not enforced on this host: " + "; ".join(messages),
    )


def _rlimit_pairs(limits: Limits, with_cgroups: frozenset[str] | set[str]) -> list[tuple[int, int]]:
    pairs: list[tuple[int, int]] = []
    if limits.file_size_bytes is not None:
        pairs.append((resource.RLIMIT_FSIZE, limits.file_size_bytes))
    if limits.memory_bytes is not None and "memory" not in with_cgroups:
        pairs.append((resource.RLIMIT_AS, limits.memory_bytes))
    if limits.pids is not None and "pids" not in with_cgroups:
        pairs.append((resource.RLIMIT_NPROC, limits.pids))
    return pairs


_JOIN_SCRIPT = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
_PRLIMIT_FLAGS = {resource.RLIMIT_FSIZE: "--fsize", resource.RLIMIT_AS: "--as", resource.RLIMIT_NPROC: "--nproc"}


def launch_prefix(procs_files: list[str], rlimits: list[tuple[int, int]], prlimit: str | None) -> list[str] | None:
    """The argv that joins the groups and sets the rlimits before exec-ing the command.

    ``sh`` writes its own pid to each ``cgroup.procs`` with builtins only and ``exec`` s
    util-linux ``prlimit``, which sets the rlimits and ``exec`` s the command: no extra fork,
    and the parent can spawn with vfork (a ``preexec_fn`` would force a full fork of this
    process, which costs about 10 ms). None when ``prlimit`` is missing and rlimits are needed.
    """
    if rlimits and prlimit is None:
        return None
    argv: list[str] = []
    if procs_files:
        argv += ["/bin/sh", "-c", _JOIN_SCRIPT, "herdsman-limits", *procs_files, "--"]
    if rlimits:
        assert prlimit is not None
        argv += [prlimit, *(f"{_PRLIMIT_FLAGS[which]}={value}" for which, value in rlimits), "--"]
    return argv


def _preexec(procs_files: list[str], rlimits: list[tuple[int, int]]) -> Callable[[], None]:
    """The fallback without ``prlimit``: join the groups and set rlimits between fork and exec.

    It only makes system calls (no locks, no imports), as ``preexec_fn`` requires.
    """

    def apply() -> None:
        pid = str(os.getpid()).encode()
        for path in procs_files:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)
        for which, value in rlimits:
            soft, hard = resource.getrlimit(which)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(which, (value, value))

    return apply


@dataclass(frozen=True)
class Launch:
    """How to start one limited command: put ``prefix`` before its argv, pass ``preexec_fn``."""

    prefix: list[str]
    preexec_fn: Callable[[], None] | None = None
    kill_tree: Callable[[], None] | None = None  # kills every process through the cgroup, if one holds them

    def argv(self, command: list[str]) -> list[str]:
        """``command`` behind the prefix."""
        return [*self.prefix, *command]


class LocalLimiter:
    """Applies :class:`Limits` to local commands: cgroups where writable, rlimits otherwise."""

    def __init__(self, limits: Limits, use_cgroups: bool = True, groups: Groups | None = None) -> None:
        self.limits = limits
        if groups is None:
            groups = host_groups() if use_cgroups else Groups("rlimit", frozenset(), reason="cgroups are turned off")
        self.groups = groups
        self._prlimit = shutil.which("prlimit")
        self._idle: list[Group] = []
        self._idle_lock = threading.Lock()
        if groups.stale_dirs:
            remove_stale_groups({str(i): d for i, d in enumerate(groups.stale_dirs)})
        if use_cgroups:
            _warn_once(unenforced_limits(limits, groups), groups.mechanism)

    def _take_group(self) -> Group:
        """An emptied group from the pool, or a new one.

        Groups are reused because a fresh cpu or memory group makes the first process in it
        start about 10 ms slower (CFS bandwidth and memcg warm-up).
        """
        with self._idle_lock:
            if self._idle:
                return self._idle.pop()
        assert self.groups.new is not None
        return self.groups.new(self.limits)

    def _return_group(self, group: Group) -> None:
        group.kill_all()
        if group.pids():
            group.remove()
            return
        with self._idle_lock:
            if len(self._idle) < _POOL_SIZE:
                self._idle.append(group)
                return
        group.remove()

    def close(self) -> None:
        """Remove the pooled groups (each command's processes are already gone)."""
        with self._idle_lock:
            idle, self._idle = self._idle, []
        for group in idle:
            group.remove()

    @property
    def mechanism(self) -> str:
        """``cgroup-v1`` or ``cgroup-v2`` when at least one controller is used, else ``rlimit``."""
        return self.groups.mechanism

    @contextmanager
    def command(self, pool: bool = True) -> Iterator[Launch]:
        """For one command: how to launch it; afterwards its group is emptied and pooled (unless
        ``pool`` is false) or removed."""
        group: Group | None = None
        if self.groups.new is not None:
            try:
                group = self._take_group()
            except OSError as exc:
                log.warning("cgroup_limits_unavailable", error=str(exc), fallback="rlimits")
                group = None
        used = group.controllers if group else frozenset()
        rlimits = _rlimit_pairs(self.limits, used)
        procs = group.procs_files if group else []
        prefix = launch_prefix(procs, rlimits, self._prlimit)
        kill_tree = group.kill_all if group is not None and used & {"pids", "memory"} else None
        if prefix is not None:
            launch = Launch(prefix, kill_tree=kill_tree)
        else:
            launch = Launch([], _preexec(procs, rlimits), kill_tree=kill_tree)
        try:
            yield launch
        finally:
            if group is not None:
                if pool:
                    self._return_group(group)
                else:
                    group.remove()
