"""Resource limits of the local provider: cgroup v1 where writable, rlimits otherwise.

The bombs run for real, under bubblewrap, with small limits; what a user checks is that the
command fails, the sandbox keeps working, and nothing is left running on the host.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from herdsman.config.schema import HerdsmanConfig, SandboxConfig
from herdsman.sandbox import LocalSandboxProvider
from herdsman.sandbox.limits import CommandGroup, Limits, LocalLimiter, cgroup_v1_parents

HAVE_CGROUPS = {"memory", "pids"} <= set(cgroup_v1_parents())
needs_cgroups = pytest.mark.skipif(
    not HAVE_CGROUPS, reason="cgroup v1 memory and pids hierarchies are not writable here"
)

SMALL = {"memory_mb": 64, "pids": 32, "cpus": 1, "file_size_mb": 8}


@pytest.fixture
def limited(make_config: Callable[..., HerdsmanConfig]) -> Callable[..., LocalSandboxProvider]:
    """``limited(isolation, **limits)``: a local provider with small limits."""

    def factory(isolation: str = "bwrap", **limits: object) -> LocalSandboxProvider:
        extra = {"allow_unisolated_bash": True} if isolation == "none" else {}
        config = make_config(isolation=isolation, command_timeout_seconds=20, limits={**SMALL, **limits}, **extra)
        return LocalSandboxProvider(config)

    return factory


def test_limits_come_from_one_config_section() -> None:
    config = SandboxConfig.model_validate({"limits": {"memory_mb": 100, "cpus": 0.5, "pids": 10, "output": 5000}})
    assert Limits.from_config(config) == Limits(memory_mb=100, cpus=0.5, pids=10, file_size_mb=1024, output_chars=5000)
    assert Limits.from_config(SandboxConfig()).output_chars == 20_000  # falls back to max_output_chars
    off = SandboxConfig.model_validate(
        {"limits": {"memory_mb": None, "pids": None, "cpus": None, "file_size_mb": None}}
    )
    assert Limits.from_config(off).memory_bytes is None


@needs_cgroups
def test_a_command_group_carries_the_limits_and_is_removed() -> None:
    group = CommandGroup(Limits(memory_mb=64, cpus=0.5, pids=32), cgroup_v1_parents())
    try:
        assert (group.dirs["memory"] / "memory.limit_in_bytes").read_text().strip() == str(64 * 1024 * 1024)
        assert (group.dirs["pids"] / "pids.max").read_text().strip() == "32"
        if "cpu" in group.dirs:
            assert (group.dirs["cpu"] / "cpu.cfs_quota_us").read_text().strip() == "50000"
    finally:
        group.remove()
    assert not any(d.exists() for d in group.dirs.values())


@needs_cgroups
@pytest.mark.bwrap
def test_memory_bomb_is_killed_under_bwrap(limited) -> None:
    provider = limited("bwrap")
    assert provider.isolation == "bwrap"
    sandbox = provider.acquire("t1")
    result = sandbox.execute("python3 -c \"b = b'x' * (512 * 1024 * 1024); print('allocated')\"")
    assert "allocated" not in result.output
    assert result.exit_code != 0 and not result.timed_out
    assert sandbox.execute("echo alive").output == "alive\n"


@needs_cgroups
@pytest.mark.bwrap
def test_fork_bomb_is_contained_under_bwrap(limited, find_pids) -> None:
    sandbox = limited("bwrap").acquire("t1")
    token = f"bomb{uuid.uuid4().hex[:8]}"
    # the shell waits with builtins only: a 'sleep' would itself need a fork while the bomb holds
    # every pid, and bash's fork retries could outlast the timeout on a loaded machine (seen in CI)
    wait = "SECONDS=0; while [ $SECONDS -lt 2 ]; do :; done"
    result = sandbox.execute(f"{token}() {{ {token} | {token} & }}; {token}; {wait}; echo survived", timeout=10)
    assert "survived" in result.output
    assert "Resource temporarily unavailable" in result.output
    assert find_pids(token) == []
    assert sandbox.execute("echo alive").output == "alive\n"


@pytest.mark.bwrap
def test_disk_fill_stops_at_the_file_size_limit(limited) -> None:
    sandbox = limited("bwrap").acquire("t1")
    result = sandbox.execute("head -c 100000000 /dev/zero > big.bin; echo rc=$?")
    assert "rc=0" not in result.output
    assert "File size limit exceeded" in result.output
    assert (sandbox.paths.workspace / "big.bin").stat().st_size <= 8 * 1024 * 1024


def test_rlimits_are_the_fallback(limited, monkeypatch: pytest.MonkeyPatch) -> None:
    provider = limited("none")
    shell = provider._shell
    shell.limiter = LocalLimiter(shell.limiter.limits, use_cgroups=False)
    assert shell.limiter.mechanism == "rlimit"
    sandbox = provider.acquire("t1")
    out = sandbox.execute("ulimit -v; ulimit -f").output.split()
    assert out[0] == str(64 * 1024)  # KiB of address space
    assert out[1] == str(8 * 1024)  # bash counts KiB
    bomb = sandbox.execute("python3 -c \"b = b'x' * (512 * 1024 * 1024)\"")
    assert bomb.exit_code != 0 and "MemoryError" in bomb.output


@needs_cgroups
def test_commands_run_in_their_own_group(limited) -> None:
    provider = limited("none")
    assert provider._shell.limiter.mechanism == "cgroup-v1"
    out = provider.acquire("t1").execute("cat /proc/self/cgroup; sleep 0.2 & wait").output
    memory = next(line for line in out.splitlines() if ":memory:" in line)
    assert f"/herdsman-sandbox/cmd-{os.getpid()}-" in memory
    again = provider.acquire("t1").execute("cat /proc/self/cgroup").output
    assert memory in again.splitlines()  # the emptied group is reused
    provider.close()
    name = memory.rsplit("/", 1)[1]
    assert not any((Path(parent) / name).exists() for parent in cgroup_v1_parents().values())


def test_output_limit_comes_from_the_limits_section(limited) -> None:
    sandbox = limited("none", output=1000).acquire("t1")
    result = sandbox.execute("yes y | head -c 50000")
    assert result.truncated_chars == 49_000
