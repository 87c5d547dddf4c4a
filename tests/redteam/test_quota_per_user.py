"""Red team: one user's threads together cannot fill the quota volume (issue #30).

The attack, on the code before this change: each thread's subvolume had its own limit
(``disk_quota_mb``, 2 GiB) and nothing more, and a user may have 1,000 threads: ~33 threads of one
user filled the 64 GiB volume, and every other user's thread on the machine then failed its
writes. Here, with 100 MiB a thread and 150 MiB a user, two threads of one user wrote 180 MiB
together before; now the second one's ``fallocate`` fails with "Disk quota exceeded" at the
user's bound, while another user's thread still writes its 90 MiB.

What a user checks: the command's own error, and the bytes on disk under each thread's folder.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from herdsman.config.schema import HerdsmanConfig
from herdsman.sandbox import LocalSandboxProvider
from herdsman.sandbox.bwrap import bwrap_status
from herdsman.sandbox.owners import record_owner
from tests.gateway.gateway_support import running_gateway
from tests.redteam.test_quota_kernel import MIB, _on_disk
from tests.support import make_config

pytestmark = pytest.mark.skipif(not bwrap_status().available, reason=f"bubblewrap unusable: {bwrap_status().reason}")
FILL = "fallocate -l 90M fill && echo wrote=$?"
SANDBOX = {"isolation": "bwrap", "disk_quota_mb": 100, "disk_quota_per_user_mb": 150, "max_files": 1000}


def _provider(home: Path) -> LocalSandboxProvider:
    config = HerdsmanConfig.model_validate({"home": str(home), "skills": {"enabled": False}, "sandbox": SANDBOX})
    provider = LocalSandboxProvider(config)
    if provider.volume is None:
        provider.close()
        pytest.skip("no quota volume here (needs root and btrfs-progs: scripts/install-system.sh)")
    return provider


def test_one_users_threads_share_one_bound(tmp_path: Path) -> None:
    home = tmp_path / "home"
    provider = _provider(home)
    try:
        for thread_id, user in (("ana-1", "ana"), ("ana-2", "ana"), ("bo-1", "bo")):
            record_owner(home, thread_id, user)
        first = provider.acquire("ana-1").execute(FILL).output
        assert "wrote=0" in first, first
        second = provider.acquire("ana-2")
        out = second.execute(FILL).output
        assert "Disk quota exceeded" in out and "wrote=0" not in out, out
        used = _on_disk(provider.acquire("ana-1").paths.user_data) + _on_disk(second.paths.user_data)
        assert used <= 151 * MIB, f"{used // MIB} MiB on disk for ana's 150 MiB bound"
        other = provider.acquire("bo-1")
        out = other.execute(FILL).output
        assert "wrote=0" in out, f"another user's thread could not write its 90 MiB:\n{out}"
        assert _on_disk(other.paths.user_data) >= 90 * MIB
    finally:
        provider.close()


def test_threads_without_a_user_share_the_local_bound(tmp_path: Path) -> None:
    provider = _provider(tmp_path / "home")  # the CLI and the embedded client name no user
    try:
        assert "wrote=0" in provider.acquire("cli-1").execute(FILL).output
        out = provider.acquire("cli-2").execute(FILL).output
        assert "Disk quota exceeded" in out and "wrote=0" not in out, out
    finally:
        provider.close()


def test_a_thread_whose_group_note_was_lost_still_counts_against_its_user(tmp_path: Path) -> None:
    """The note that a thread's subvolume joined its user's group is written without waiting for
    the disk (volume.py): when an OS crash loses it, the next placement joins again, and the
    user's bound still holds."""
    home = tmp_path / "home"
    provider = _provider(home)
    try:
        for thread_id in ("ana-1", "ana-2"):
            record_owner(home, thread_id, "ana")
        first = provider.acquire("ana-1")
        marker = provider.volume.thread_data(home, "ana-1").parent / "qgroup"
        group = marker.read_text()
        marker.unlink()
        provider.release("ana-1")
    finally:
        provider.close()
    provider = _provider(home)  # as after a restart
    try:
        assert "wrote=0" in provider.acquire("ana-1").execute(FILL).output
        assert marker.read_text() == group
        out = provider.acquire("ana-2").execute(FILL).output
        assert "Disk quota exceeded" in out and "wrote=0" not in out, out
        assert first.paths.user_data == provider.acquire("ana-1").paths.user_data
    finally:
        provider.close()


async def test_threads_made_through_the_gateway_count_against_their_key_user(tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = make_config(home, gateway={"api_keys": ["key-ana", "key-bo"]}, sandbox=SANDBOX)
    with running_gateway(config) as served:
        threads = {}
        async with httpx.AsyncClient(base_url=served.url) as http:
            for name, key in (("ana-1", "key-ana"), ("ana-2", "key-ana"), ("bo-1", "key-bo")):
                res = await http.post("/threads", json={"thread_id": name}, headers={"x-api-key": key})
                assert res.status_code == 200, res.text
                threads[name] = res.json()["thread_id"]
        provider = served.app.state.gateway.sandbox
        if provider.volume is None:
            pytest.skip("no quota volume here (needs root and btrfs-progs: scripts/install-system.sh)")
        assert "wrote=0" in provider.acquire(threads["ana-1"]).execute(FILL).output
        out = provider.acquire(threads["ana-2"]).execute(FILL).output
        assert "Disk quota exceeded" in out and "wrote=0" not in out, out
        out = provider.acquire(threads["bo-1"]).execute(FILL).output
        assert "wrote=0" in out, out


def test_a_docker_threads_pooled_container_counts_against_its_user(tmp_path: Path) -> None:
    """The docker provider's warm pool makes a thread's subvolume before the thread exists; the
    thread that takes it joins its user's group then."""
    from herdsman.sandbox.docker import DockerSandboxProvider
    from tests.sandbox.podman_engine import engine_or_skip
    from tests.sandbox.test_sandbox_docker import _wait_until

    engine = engine_or_skip()
    home = tmp_path / "home"
    config = HerdsmanConfig.model_validate({
        "home": str(home), "skills": {"enabled": False},
        "sandbox": {"provider": "docker", "disk_quota_mb": 100, "disk_quota_per_user_mb": 150, "max_files": 1000,
                    "command_timeout_seconds": 60,
                    "docker": {"base_url": engine.base_url, "image": engine.image, "pull": "never", "warm_pool": 2}},
    })  # fmt: skip
    provider = DockerSandboxProvider(config)
    try:
        if provider.volume is None:
            pytest.skip("no quota volume here (needs root and btrfs-progs: scripts/install-system.sh)")
        assert _wait_until(lambda: provider.pool_ready == 2)
        record_owner(home, "ana-1", "ana")
        record_owner(home, "ana-2", "ana")
        first = provider.acquire("ana-1")
        assert first.box.container_id is not None  # a pooled container, adopted
        fill = "fallocate -l 90M fill 2>&1 || head -c 94371840 /dev/zero > fill; echo wrote=$?"
        assert "wrote=0" in first.execute(fill).output
        assert _wait_until(lambda: provider.pool_ready == 2)
        second = provider.acquire("ana-2")
        assert second.box.container_id is not None
        out = second.execute(fill).output
        assert "Disk quota exceeded" in out and "wrote=0" not in out, out
    finally:
        provider.cleanup()
        provider.close()
