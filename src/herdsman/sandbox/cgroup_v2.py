"""cgroup v2 groups for local commands: a delegated subtree of this process's own cgroup.

Used by :mod:`herdsman.sandbox.limits` where cgroup v1 hierarchies are absent (most current
distributions mount only the unified v2 hierarchy). The layout, under this process's own group
``G`` (the ``0::/path`` line of ``/proc/self/cgroup``)::

    G/                       cgroup.subtree_control: +memory +pids +cpu
    G/herdsman-main/         this process (and the others that were in G), when G is not the root
    G/herdsman-sandbox/      cgroup.subtree_control: +memory +pids +cpu
    G/herdsman-sandbox/cmd-<pid>-<hex>/   one command: memory.max, memory.swap.max, pids.max, cpu.max

cgroup v2's "no internal processes" rule forbids enabling controllers for the children of a
group that holds processes (the kernel answers EBUSY), so when enabling them in ``G`` fails that
way, the processes of ``G`` move into the leaf ``G/herdsman-main`` first, as systemd's delegation
documentation prescribes for a service with ``Delegate=yes``; only when ``G`` is ours to
reorganize (delegated, a container's cgroup namespace root, or holding this process alone), never
a shared group such as a login session's scope. A command joins its group before it
starts; when it ends, ``cgroup.kill`` (Linux 5.14+) kills whatever is left, or every pid is
SIGKILLed until the group is empty on older kernels.

Why a delegated subtree and not a systemd transient scope (``systemd-run --scope``) per command:
it needs no systemd and no D-Bus (containers have neither), costs a ``mkdir`` and a few writes per
command instead of a bus round trip, and groups are pooled like v1's. On a systemd host, run
Herdsman in a unit with ``Delegate=yes`` (or ``systemd-run --user --scope -p Delegate=yes
herdsman serve``) so that its own group is writable; without a writable group the limiter falls
back to rlimits and says which limits are then not enforced.

Written by hand because no maintained library manages cgroup v2 groups for a child process; every
path is a parameter, so the protocol can be tested on a directory that mimics cgroupfs.
"""

from __future__ import annotations

import errno
import functools
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from herdsman.logs import get_logger
from herdsman.sandbox.process import kill_until_gone

if TYPE_CHECKING:
    from herdsman.sandbox.limits import Limits

log = get_logger(__name__)

CONTROLLERS = ("memory", "pids", "cpu")
LEAF = "herdsman-main"
PARENT = "herdsman-sandbox"
CPU_PERIOD_US = 100_000
_MOVE_ATTEMPTS = 5


@dataclass(frozen=True)
class V2Delegation:
    """Where command groups go (``parent``) and the controllers enabled for them; ``reason`` says
    why none are when ``controllers`` is empty."""

    parent: Path | None
    controllers: frozenset[str]
    reason: str = ""


def _write(path: Path, value: str) -> None:
    with open(path, "w") as fh:
        fh.write(value)


def _words(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except OSError:
        return []


def v2_mount(mounts_file: str = "/proc/self/mounts") -> Path | None:
    """The mount point of the cgroup v2 (unified) hierarchy, if one is mounted."""
    try:
        with open(mounts_file) as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 3 and parts[2] == "cgroup2":
                    return Path(parts[1])
    except OSError:
        pass
    return None


def own_v2_path(cgroup_file: str = "/proc/self/cgroup") -> str | None:
    """This process's cgroup v2 path (the ``0::/path`` line), e.g. ``/system.slice/x.service``."""
    try:
        with open(cgroup_file) as fh:
            for line in fh:
                if line.startswith("0::"):
                    return line[3:].strip()
    except OSError:
        pass
    return None


def _enable(group: Path, controllers: list[str]) -> set[str]:
    """Enable each controller for the children of ``group``; the ones enabled. EBUSY propagates
    (the group holds processes: the no-internal-processes rule)."""
    enabled: set[str] = set()
    for name in controllers:
        try:
            _write(group / "cgroup.subtree_control", f"+{name}")
        except OSError as exc:
            if exc.errno == errno.EBUSY:
                raise
            log.debug("cgroup_controller_not_enabled", controller=name, error=str(exc))
            continue
        enabled.add(name)
    return enabled


def _ours_to_reorganize(base: Path, relative: str) -> bool:
    """Whether moving the processes of ``base`` into a leaf is ours to do: ``base`` is the root of
    this process's cgroup namespace (a container's own tree), systemd marked it delegated (the
    ``trusted.delegate``/``user.delegate`` attribute of ``Delegate=yes``), or this process is
    alone in it. A shared group, such as a login session's scope, is never reorganized."""
    if relative == "":
        return True
    for name in ("trusted.delegate", "user.delegate"):
        try:
            if os.getxattr(base, name).strip(b"\0") in (b"1", b"yes", b"true"):
                return True
        except OSError:
            continue
    return _words(base / "cgroup.procs") == [str(os.getpid())]


def _move_processes_to_leaf(base: Path) -> None:
    """Move every process of ``base`` into ``base/herdsman-main`` (a process that exits or forks
    meanwhile is caught by the caller's retry)."""
    leaf = base / LEAF
    leaf.mkdir(exist_ok=True)
    for pid in _words(base / "cgroup.procs"):
        try:
            _write(leaf / "cgroup.procs", pid)
        except ProcessLookupError:
            continue
        except OSError as exc:
            if exc.errno != errno.ESRCH:
                raise


def delegate(mount: Path, own: str, wanted: tuple[str, ...] = CONTROLLERS) -> V2Delegation:
    """Prepare ``<own group>/herdsman-sandbox`` with ``wanted`` controllers enabled for its children.

    ``own`` may already be ``.../herdsman-main`` (this process moved there earlier, or was forked
    by one that did): its parent is then the group we delegate from.
    """
    relative = own.strip("/")
    if relative.endswith(LEAF) and (relative == LEAF or relative.endswith("/" + LEAF)):
        relative = relative[: -len(LEAF)].rstrip("/")
    base = mount / relative if relative else mount
    available = [c for c in wanted if c in _words(base / "cgroup.controllers")]
    if not available:
        return V2Delegation(None, frozenset(), f"the cgroup v2 group /{relative} offers none of {', '.join(wanted)}")
    try:
        enabled = set()
        for attempt in range(_MOVE_ATTEMPTS):
            try:
                enabled = _enable(base, available)
                break
            except OSError as exc:
                if exc.errno != errno.EBUSY or attempt == _MOVE_ATTEMPTS - 1:
                    raise
                if not _ours_to_reorganize(base, relative):
                    return V2Delegation(
                        None,
                        frozenset(),
                        f"the cgroup v2 group /{relative} holds other processes "
                        "and is not delegated to Herdsman (Delegate=yes)",
                    )
                _move_processes_to_leaf(base)
        parent = base / PARENT
        parent.mkdir(exist_ok=True)
        enabled &= _enable(parent, sorted(enabled))
        probe = parent / f"probe-{uuid.uuid4().hex[:8]}"
        probe.mkdir()
        probe.rmdir()
    except OSError as exc:
        return V2Delegation(None, frozenset(), f"the cgroup v2 group /{relative} is not writable ({exc})")
    if not enabled:
        return V2Delegation(None, frozenset(), f"no controller could be enabled under the cgroup v2 group /{relative}")
    return V2Delegation(parent, frozenset(enabled))


@functools.cache
def host_delegation() -> V2Delegation:
    """This host's delegation, prepared once per process (it may move the process into a leaf)."""
    mount, own = v2_mount(), own_v2_path()
    if mount is None or own is None:
        return V2Delegation(None, frozenset(), "no cgroup v2 hierarchy is mounted")
    return delegate(mount, own)


class V2CommandGroup:
    """The cgroup v2 group of one command: created with limits, joined, emptied, removed."""

    def __init__(self, limits: Limits, delegation: V2Delegation) -> None:
        assert delegation.parent is not None
        wanted = {
            "memory": limits.memory_bytes is not None,
            "pids": limits.pids is not None,
            "cpu": limits.cpus is not None,
        }
        self.controllers = frozenset(c for c in delegation.controllers if wanted.get(c))
        self.directory = delegation.parent / f"cmd-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.directory.mkdir()
        try:
            self._configure(limits)
        except OSError:
            self.remove()
            raise

    def _configure(self, limits: Limits) -> None:
        if "memory" in self.controllers and limits.memory_bytes is not None:
            _write(self.directory / "memory.max", str(limits.memory_bytes))
            swap = self.directory / "memory.swap.max"
            if swap.exists():  # no swapping past the limit either (v1's memsw)
                _write(swap, "0")
        if "pids" in self.controllers and limits.pids is not None:
            _write(self.directory / "pids.max", str(limits.pids))
        if "cpu" in self.controllers and limits.cpus is not None:
            quota = max(1000, int(limits.cpus * CPU_PERIOD_US))
            _write(self.directory / "cpu.max", f"{quota} {CPU_PERIOD_US}")

    @property
    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` file a process writes its pid to, to join."""
        return [str(self.directory / "cgroup.procs")]

    def pids(self) -> list[int]:
        """Processes still in the group."""
        return sorted(int(p) for p in _words(self.directory / "cgroup.procs"))

    def kill_all(self) -> None:
        """Kill every process in the group: ``cgroup.kill`` when the kernel has it, then SIGKILL
        until the group is empty (also how it is done without ``cgroup.kill``)."""
        kill = self.directory / "cgroup.kill"
        if kill.exists() and self.pids():
            try:
                _write(kill, "1")
            except OSError as exc:
                log.debug("cgroup_kill_failed", group=self.directory.name, error=str(exc))
        kill_until_gone(self.pids, passes=50)

    def remove(self) -> None:
        """Kill what is left and remove the group (retrying while the kernel reaps)."""
        self.kill_all()
        for _ in range(50):
            try:
                self.directory.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.01)
        log.warning("cgroup_remove_failed", group=self.directory.name)
