"""Local limits on cgroup v2 hosts, and the warning when no cgroup can be used.

Found in issue #30: the local provider knew only cgroup v1, so on cgroup v2 hosts (most current
distributions) its limits fell back to rlimits: 1,000 processes under ``pids: 256`` as root
(RLIMIT_NPROC does not bind root), memory counted per process only, no CPU limit, and nothing
said so. Now a delegated v2 subtree carries ``memory.max``/``memory.swap.max``, ``pids.max``
and ``cpu.max``, what is left in a command's group is killed (``cgroup.kill``), and a host with
neither v1 nor v2 gets one warning naming each unenforced limit (also in ``herdsman config check``).

Three layers of test: the file protocol on a directory that mimics cgroupfs (runs anywhere); the
delegation protocol (no internal processes, moving into a leaf, a shared group left alone,
joining, ``cgroup.kill``) on the real v2 hierarchy with whichever controller it offers (needs
root and a writable cgroup2 mount); bombs under real v2 memory/pids (only where v2 has them).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from herdsman.sandbox import cgroup_v2, limits
from herdsman.sandbox.limits import Groups, Limits, LocalLimiter, unenforced_limits
from tests.support import logged_events

REPO = Path(__file__).resolve().parents[2]
MIB = 1024 * 1024


def _fake_cgroupfs(root: Path, controllers: str = "cpuset cpu io memory pids") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "cgroup.controllers").write_text(controllers + "\n")
    (root / "cgroup.subtree_control").write_text("")
    (root / "cgroup.procs").write_text("")
    return root


def test_v2_group_files_carry_the_limits(tmp_path: Path) -> None:
    """On a cgroupfs-like tree: the controllers are enabled for herdsman-sandbox's children, and a
    command's group gets memory.max, pids.max and cpu.max; its cgroup.procs is what a command joins."""
    mount = _fake_cgroupfs(tmp_path / "cg")
    service = _fake_cgroupfs(mount / "system.slice" / "herdsman.service")
    delegation = cgroup_v2.delegate(mount, "/system.slice/herdsman.service")
    assert delegation.controllers == {"memory", "pids", "cpu"}, delegation.reason
    assert delegation.parent == service / "herdsman-sandbox"
    assert (service / "cgroup.subtree_control").read_text() == "+cpu"  # the last write of +memory, +pids, +cpu
    group = cgroup_v2.V2CommandGroup(Limits(memory_mb=64, pids=32, cpus=0.5), delegation)
    assert group.directory.parent == service / "herdsman-sandbox"
    assert (group.directory / "memory.max").read_text() == str(64 * MIB)
    assert (group.directory / "pids.max").read_text() == "32"
    assert (group.directory / "cpu.max").read_text() == "50000 100000"
    limiter = LocalLimiter(Limits(memory_mb=64, pids=32, cpus=0.5),
                           groups=Groups("cgroup-v2", delegation.controllers, lambda lim: group))  # fmt: skip
    with limiter.command() as launch:
        argv = launch.argv(["true"])
    assert str(group.directory / "cgroup.procs") in argv
    assert "--nproc" not in " ".join(argv) and "--as" not in " ".join(argv)  # no rlimit stands in


def test_a_group_offering_no_controller_is_not_used(tmp_path: Path) -> None:
    mount = _fake_cgroupfs(tmp_path / "cg", controllers="hugetlb")
    delegation = cgroup_v2.delegate(mount, "/")
    assert delegation.parent is None and "offers none of memory, pids, cpu" in delegation.reason


def test_own_group_already_a_leaf_delegates_from_its_parent(tmp_path: Path) -> None:
    """A process (or its child) already moved into herdsman-main delegates from the group above."""
    mount = _fake_cgroupfs(tmp_path / "cg")
    service = _fake_cgroupfs(mount / "app.service")
    delegation = cgroup_v2.delegate(mount, "/app.service/herdsman-main")
    assert delegation.parent == service / "herdsman-sandbox"


# -- the warning -----------------------------------------------------------------------------

NONE = Groups("rlimit", frozenset(), reason="no writable cgroup (v1 or v2; no cgroup v2 hierarchy is mounted)")


def test_the_warning_names_each_unenforced_limit() -> None:
    found = unenforced_limits(Limits(memory_mb=1024, pids=256, cpus=1), NONE, root=True)
    text = "\n".join(found)
    assert "sandbox.limits.pids is not enforced for root: no writable cgroup (v1 or v2; " in text
    assert "sandbox.limits.memory_mb is enforced only per process" in text
    assert "sandbox.limits.cpus is not enforced" in text
    assert "Delegate=yes" in found[-1]
    assert "per host user" in "\n".join(unenforced_limits(Limits(pids=256), NONE, root=False))
    assert (
        unenforced_limits(
            Limits(memory_mb=1, pids=8, cpus=1), Groups("cgroup-v2", frozenset({"memory", "pids", "cpu"}))
        )
        == []
    )
    assert unenforced_limits(Limits(), NONE) == []  # limits turned off are not "unenforced"


def test_the_warning_is_logged_once_per_process(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(limits, "_warned", False)
    with caplog.at_level(logging.WARNING, logger="herdsman.sandbox.limits"):
        LocalLimiter(Limits(pids=256), groups=NONE)
        LocalLimiter(Limits(pids=256), groups=NONE)
    events = [e for e in logged_events(caplog.records) if e["event"] == "sandbox_limits_unenforced"]
    assert len(events) == 1 and "sandbox.limits.pids" in events[0]["message"]


def test_config_check_prints_the_warning(tmp_path: Path) -> None:
    """``herdsman config check`` on a host without usable cgroups names the unenforced limits."""
    config = tmp_path / "config.yaml"
    config.write_text(f"home: {tmp_path / 'home'}\nsandbox:\n  limits: {{pids: 256}}\n")
    script = textwrap.dedent(f"""
        import sys
        from herdsman.sandbox import limits
        limits.host_groups = lambda: limits.Groups("rlimit", frozenset(), reason="no writable cgroup (v1 or v2; test)")
        from herdsman.cli import app
        sys.argv = ["herdsman", "config", "check", "--offline", "--config", {str(config)!r}]
        app()
    """)
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}:{REPO}"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    said = " ".join((done.stdout + done.stderr).split())
    if os.geteuid() == 0:
        assert "warning: sandbox.limits.pids is not enforced for root: no writable cgroup (v1 or v2; test)" in said, (
            said
        )
    else:
        assert "warning: sandbox.limits.pids is enforced only per host user" in said, said
    assert "sandbox.limits.cpus is not enforced" in said, said


# -- the real cgroup v2 hierarchy ----------------------------------------------------------------


def _writable_v2() -> tuple[Path, list[str]] | None:
    mount = cgroup_v2.v2_mount()
    if mount is None or os.geteuid() != 0 or not os.access(mount / "cgroup.subtree_control", os.W_OK):
        return None
    if cgroup_v2.own_v2_path() != "/":
        return None  # the protocol test builds its groups under the root it can see
    return mount, (mount / "cgroup.controllers").read_text().split()


_PROTOCOL = r"""
import json, os, subprocess, sys, time
from pathlib import Path
from herdsman.sandbox import cgroup_v2
from herdsman.sandbox.limits import Limits, LocalLimiter, Groups
mount, name, controller = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
out = {}
shared, mine = mount / f"{name}-shared", mount / f"{name}-mine"
# a group holding another process is never reorganized
sleeper = subprocess.Popen(["sleep", "60"])
(shared / "cgroup.procs").write_text(str(sleeper.pid))
out["shared"] = cgroup_v2.delegate(mount, f"/{name}-shared", (controller,)).reason
sleeper.kill(); sleeper.wait()
# this process alone in its group: it moves into the leaf, the controller is enabled below
(mine / "cgroup.procs").write_text(str(os.getpid()))
delegation = cgroup_v2.delegate(mount, f"/{name}-mine", (controller,))
out["controllers"] = sorted(delegation.controllers)
out["own_after"] = cgroup_v2.own_v2_path()
out["sandbox_subtree"] = (mine / "herdsman-sandbox" / "cgroup.subtree_control").read_text().split()
group = cgroup_v2.V2CommandGroup(Limits(), delegation)
limiter = LocalLimiter(Limits(), use_cgroups=False, groups=Groups("cgroup-v2", delegation.controllers, lambda l: group))
with limiter.command() as launch:
    proc = subprocess.Popen(launch.argv(["sh", "-c", "sleep 300 & sleep 300 & setsid sleep 300 & echo started; wait"]),
                            stdout=subprocess.PIPE, text=True)
    proc.stdout.readline()
    out["in_group"] = len(group.pids())
    group.kill_all()  # cgroup.kill: every process, the setsid one too
    out["after_kill"] = len(group.pids())
    proc.wait(5)
group.remove()
out["removed"] = not group.directory.exists()
print(json.dumps(out))
"""


def test_delegation_protocol_on_the_real_v2_hierarchy(tmp_path: Path) -> None:
    """Real kernel semantics: a shared group is left alone; a group holding only this process
    answers EBUSY to +controller (no internal processes) until the process moves into
    herdsman-main; a command joins its group before it starts; cgroup.kill empties it."""
    found = _writable_v2()
    if found is None:
        pytest.skip("needs root and a writable cgroup v2 hierarchy with this process at its root")
    mount, offered = found
    if not offered:
        pytest.skip("the cgroup v2 hierarchy offers no controller (all bound to v1)")
    controller = offered[0]
    name = f"herdsman-test-{uuid.uuid4().hex[:8]}"
    enabled_before = (mount / "cgroup.subtree_control").read_text().split()
    (mount / "cgroup.subtree_control").write_text(f"+{controller}")
    made = [mount / f"{name}-shared", mount / f"{name}-mine"]
    for directory in made:
        directory.mkdir()
    try:
        env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}:{REPO}"}
        done = subprocess.run([sys.executable, "-c", _PROTOCOL, str(mount), name, controller],
                              capture_output=True, text=True, env=env, timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout.splitlines()[-1])
    finally:
        for directory in made:
            for sub in sorted(directory.rglob("*"), key=lambda p: len(p.parts), reverse=True):
                if sub.is_dir():
                    sub.rmdir()
            directory.rmdir()
        if controller not in enabled_before:
            (mount / "cgroup.subtree_control").write_text(f"-{controller}")
    assert "holds other processes and is not delegated" in out["shared"], out
    assert out["controllers"] == [controller], out
    assert out["own_after"] == f"/{name}-mine/herdsman-main", out
    assert controller in out["sandbox_subtree"], out
    assert out["in_group"] >= 4 and out["after_kill"] == 0 and out["removed"], out


def _v2_has_pids() -> bool:
    """Whether this host's limiter would use a cgroup v2 pids controller (v1 absent)."""
    return not limits.cgroup_v1_parents() and "pids" in cgroup_v2.host_delegation().controllers


@pytest.mark.skipif(
    not _v2_has_pids(), reason="cgroup v1 is in use here, or cgroup v2 offers no pids controller to this process"
)
@pytest.mark.bwrap
def test_fork_bomb_as_root_is_held_by_v2_pids(tmp_path: Path) -> None:
    """On a real v2 host: 1,000 processes under pids: 64 are not reached, nothing survives."""
    from herdsman.config.schema import HerdsmanConfig
    from herdsman.sandbox import LocalSandboxProvider

    config = HerdsmanConfig.model_validate(
        {
            "home": str(tmp_path / "home"),
            "sandbox": {"isolation": "bwrap", "command_timeout_seconds": 20, "limits": {"pids": 64, "memory_mb": 256}},
        }
    )
    provider = LocalSandboxProvider(config)
    assert provider._shell.limiter.mechanism == "cgroup-v2"
    sandbox = provider.acquire("t1")
    result = sandbox.execute(
        "n=0; for i in $(seq 1000); do sleep 30 & n=$((n+1)); done 2>/dev/null; echo started=$(jobs -p | wc -l)",
        timeout=15,
    )
    assert int(result.output.split("started=")[1].split()[0]) < 64, result.output
    memory = sandbox.execute("python3 -c \"b = b'x' * (512 * 1024 * 1024); print('allocated')\"")
    assert "allocated" not in memory.output
    provider.close()
