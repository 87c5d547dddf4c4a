"""The jail's scratch space is sized: 1 GB written into /tmp, /var/tmp or /dev/shm stops at
``sandbox.limits.tmp_mb`` with ENOSPC, and /dev itself is read-only.

Found in issue #30: the jail's /tmp and /var/tmp were unsized tmpfs mounts and /dev/shm lived in
bubblewrap's writable /dev tmpfs, so a command wrote 6 GB of host memory into them under
``memory_mb: 1024`` wherever no memory cgroup counted it (every cgroup v2 host before v2 support).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from herdsman.config.schema import HerdsmanConfig
from herdsman.sandbox import LocalSandboxProvider
from herdsman.sandbox.bwrap import bwrap_status

pytestmark = pytest.mark.bwrap

GB = 1024 * 1024 * 1024


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory):
    if not bwrap_status().available:
        pytest.skip(f"bubblewrap unusable here: {bwrap_status().reason}")
    root: Path = tmp_path_factory.mktemp("scratch")
    config = HerdsmanConfig.model_validate(
        {"home": str(root / "home"), "sandbox": {"isolation": "bwrap", "command_timeout_seconds": 60}}
    )  # the default limits: tmp_mb 256, memory_mb 2048
    provider = LocalSandboxProvider(config)
    yield provider.acquire("t1")
    provider.close()


def _shmem_kb() -> str:
    return "awk '/^Shmem:/ {print $2}' /proc/meminfo"


@pytest.mark.parametrize("folder", ["/tmp", "/var/tmp", "/dev/shm"])
def test_a_gigabyte_into_scratch_space_fails_with_enospc(sandbox, folder: str) -> None:
    """The write fails with "No space left on device" at 256 MiB, and the host's shared memory
    (what tmpfs files take) does not grow by the gigabyte while the jail still holds the file."""
    command = (
        f"before=$({_shmem_kb()}); head -c {GB} /dev/zero > {folder}/fill; echo rc=$?; "
        f"echo size=$(stat -c %s {folder}/fill); echo grew_kb=$(( $({_shmem_kb()}) - before ))"
    )
    result = sandbox.execute(command)
    out = result.output
    assert "No space left on device" in out and "rc=0" not in out, out
    size = int(out.split("size=")[1].split()[0])
    assert size <= 256 * 1024 * 1024, out
    grew_kb = int(out.split("grew_kb=")[1].split()[0])
    assert grew_kb < 768 * 1024, out  # the 1 GB is not in host memory (other processes' noise allowed)
    assert sandbox.execute("echo alive").output == "alive\n"


def test_fallocate_past_the_size_fails(sandbox) -> None:
    """fallocate of 1 GB (no data written) is refused too."""
    result = sandbox.execute("fallocate -l 1G /tmp/big; echo rc=$?")
    assert "rc=0" not in result.output, result.output


def test_dev_is_read_only(sandbox) -> None:
    """/dev is no longer a writable tmpfs of its own (it held /dev/shm, unsized); its devices work."""
    result = sandbox.execute(f"head -c {GB} /dev/zero > /dev/fill; echo rc=$?; echo ok > /dev/null && echo null-ok")
    assert "rc=0" not in result.output and "null-ok" in result.output, result.output
