"""Red team: the disk quota is a limit the kernel holds, not a poll (item 5 of issue #30), and the
host walks and deletes what a jail wrote whatever modes it set (item 1).

The attacks, each on the code before this change:

- under a 100 MiB quota six ``fallocate -l 1000M`` wrote 6 GB in 0.2 s, and the files stayed
  after the command was stopped;
- files deleted while a process held them open were never counted (6 GB written that way);
- ``truncate -s 1G`` (12 KB of quota) then a checkpoint stored 1 GB in the thread's versions;
- a gateway that is not root could not list a ``chmod 300`` folder: 60 MiB hidden from the
  quota; a ``chmod 500`` folder survived the thread's deletion and the next thread with the id
  found it.

The same fallocate attack runs in a docker (podman) container: 6000 MiB before, at most 100 after.

What a user checks: the bytes on disk under the thread's folder (``st_blocks``), the command's
own error (``Disk quota exceeded``), what the versions hold, and what a new thread finds.

Every provider here places its threads on a quota volume of the test's own (a folder of the
machine's volume, removed at the end: ``tests/sandbox/volume_support.py``), and a sweep sweeps
only that: a sweep of the machine's volume with no grace removed other processes' threads while
they were being placed.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from herdsman.config.schema import HerdsmanConfig, SnapshotsConfig
from herdsman.sandbox import LocalSandboxProvider
from herdsman.sandbox.bwrap import bwrap_status
from herdsman.sandbox.history import FileHistory
from herdsman.sandbox.volume import QuotaVolume
from tests.redteam.test_jail_bwrap import NOBODY, ROOT, _python_for_nobody, _skip_unless_readable
from tests.sandbox.volume_support import own_quota_volume

MIB = 1024 * 1024
pytestmark = pytest.mark.skipif(not bwrap_status().available, reason=f"bubblewrap unusable: {bwrap_status().reason}")


def _on_disk(folder: Path) -> int:
    """Bytes the files under ``folder`` really take (what ``du`` counts)."""
    total = 0
    for base, dirs, files in os.walk(folder):
        for name in dirs + files:
            total += os.lstat(os.path.join(base, name)).st_blocks * 512
    return total


@pytest.fixture
def own_volume():
    """A quota volume of the test's own; the test is skipped without the machine's."""
    with own_quota_volume() as own:
        yield own


def _on_own_volume(provider, own: QuotaVolume):
    """``provider``, placing its threads on ``own`` instead of the machine's volume (skipped
    when it would place them on none)."""
    if provider.volume is None:
        provider.close()
        pytest.skip("no quota volume here (needs root and btrfs-progs: scripts/install-system.sh)")
    provider.volume = own
    return provider


@pytest.fixture
def provider(tmp_path: Path, own_volume: QuotaVolume):
    config = HerdsmanConfig.model_validate(
        {
            "home": str(tmp_path / "home"),
            "skills": {"enabled": False},
            "sandbox": {"isolation": "bwrap", "disk_quota_mb": 100, "max_files": 1000},
        }
    )
    provider = _on_own_volume(LocalSandboxProvider(config), own_volume)
    yield provider
    provider.close()


def test_fallocate_cannot_pass_the_quota(provider: LocalSandboxProvider) -> None:
    sandbox = provider.acquire("t1")
    result = sandbox.execute("for i in 1 2 3 4 5 6; do fallocate -l 1000M big$i; done; ls -s --block-size=M; echo end")
    assert "Disk quota exceeded" in result.output
    used = _on_disk(sandbox.paths.user_data)
    assert used <= 101 * MIB, f"{used // MIB} MiB on disk for a 100 MiB quota"


def test_files_deleted_while_open_still_count(provider: LocalSandboxProvider) -> None:
    holder = (
        "import os, time\n"
        "fds, held = [], 0\n"
        "try:\n"
        "    for i in range(6):\n"
        "        fd = os.open(f'u{i}', os.O_CREAT | os.O_WRONLY); os.unlink(f'u{i}'); fds.append(fd)\n"
        "        for _ in range(50):\n"
        "            held += os.write(fd, bytes(1 << 20))\n"
        "except OSError as exc:\n"
        "    print('writer:', exc.strerror, flush=True)\n"
        "print('held', held >> 20, flush=True)\n"
        "with open('sync', 'w') as fifo:\n"
        "    fifo.write('x')\n"
        "time.sleep(60)\n"
    )
    command = (
        "mkfifo sync\n"  # made before the disk fills; the holder reports on the command's output, not a file
        f"python3 -c {shlex.quote(holder)} &\n"
        "read -r _ < sync\n"
        "head -c 20971520 /dev/zero > visible.bin; echo visible=$?"
    )
    sandbox = provider.acquire("t1")
    out = sandbox.execute(command, timeout=60).output
    assert "held " in out, out
    held = int(out.split("held ")[1].split()[0])
    assert held <= 100, f"{held} MiB held in deleted files under a 100 MiB quota:\n{out}"
    assert "Disk quota exceeded" in out and "visible=1" in out, out


def test_a_sparse_file_costs_a_version_its_data(provider: LocalSandboxProvider, tmp_path: Path) -> None:
    sandbox = provider.acquire("t1")
    out = sandbox.execute(
        "truncate -s 1000M sparse.bin && printf tail >> sparse.bin && printf head | dd of=sparse.bin conv=notrunc status=none && du -k sparse.bin"
    ).output
    assert int(out.split()[0]) < 1024, out  # the thread's quota pays a few KiB
    history = FileHistory.of(sandbox.files, tmp_path / "history", SnapshotsConfig())
    version = history.capture()
    stored = _on_disk(history.objects)
    assert stored < MIB, f"{stored // MIB} MiB stored in the versions for a file of a few KiB of data"
    (sandbox.paths.workspace / "sparse.bin").unlink()
    history.restore(version)
    back = sandbox.paths.workspace / "sparse.bin"
    assert back.stat().st_size == 1000 * MIB + 4 and back.stat().st_blocks * 512 < MIB
    with back.open("rb") as fh:
        assert fh.read(4) == b"head"
        fh.seek(1000 * MIB)
        assert fh.read() == b"tail"


def test_a_new_subvolume_cannot_leave_the_quota(provider: LocalSandboxProvider) -> None:
    sandbox = provider.acquire("t1")
    probe = (
        "import fcntl, os, struct\n"
        "fd = os.open('.', os.O_RDONLY)\n"
        "for request in (0x5000940E, 0x50009401):\n"
        "    try:\n"
        "        fcntl.ioctl(fd, request, bytearray(struct.pack('q4088s', fd, b'escape')), True); print('made')\n"
        "    except OSError as exc:\n"
        "        print(exc.strerror)\n"
    )
    out = sandbox.execute(f"python3 -c {shlex.quote(probe)}").output
    assert "made" not in out and out.count("Operation not permitted") == 2, out


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to become nobody")
def test_folders_the_jail_closed_are_measured_and_deleted_by_a_non_root_gateway() -> None:
    base = Path(tempfile.mkdtemp(prefix="herdsman-quota-"))  # pytest's own tmp is root-only
    try:
        os.chmod(base, 0o755)
        os.chown(base, NOBODY, NOBODY)
        python = _python_for_nobody()
        site = next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "HOME": str(base),
            "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT), site]),
        }
        prefix = [shutil.which("setpriv") or "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        _skip_unless_readable(prefix, python, env)
        done = subprocess.run(
            [*prefix, python, "-m", "tests.redteam.quota_probe", str(base / "home")],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        found = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        subprocess.run(["chmod", "-R", "u+rwx", str(base)], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)
    assert found["uid"] == NOBODY and not found["volume"]
    assert found["measured"] >= 60 * MIB, f"the quota measured {found['measured'] // MIB} MiB of 61 MiB written"
    assert found["keep"] == "kept"
    assert found["thread_dir_left"] is False, "the thread's folder survived its deletion"
    assert found["after"] == "end", f"the next thread t1 found: {found['after']!r}"


# -- the docker provider: the container writes the same bind-mounted subvolume ----------------


@pytest.fixture
def docker_provider(tmp_path: Path, own_volume: QuotaVolume):
    from herdsman.sandbox.docker import DockerSandboxProvider
    from tests.sandbox.podman_engine import engine_or_skip

    engine = engine_or_skip()
    config = HerdsmanConfig.model_validate({
        "home": str(tmp_path / "home"), "skills": {"enabled": False},
        "sandbox": {"provider": "docker", "disk_quota_mb": 100, "max_files": 1000, "command_timeout_seconds": 60,
                    "docker": {"base_url": engine.base_url, "image": engine.image, "pull": "never"}},
    })  # fmt: skip
    provider = _on_own_volume(DockerSandboxProvider(config), own_volume)
    yield provider
    provider.cleanup()
    provider.close()


def test_a_container_cannot_pass_the_quota(docker_provider) -> None:
    sandbox = docker_provider.acquire("t1")
    result = sandbox.execute(
        "for i in 1 2 3 4 5 6; do fallocate -l 1000M big$i 2>&1 || head -c 1048576000 /dev/zero > big$i; done; echo end"
    )
    assert "Disk quota exceeded" in result.output, result.output
    used = _on_disk(sandbox.paths.user_data)
    assert used <= 101 * MIB, f"{used // MIB} MiB on disk for a 100 MiB quota"


def test_a_moved_home_keeps_its_threads_files(tmp_path: Path, own_volume: QuotaVolume) -> None:
    """Found by the red team: the volume named a home's data by the home's path, so a project
    folder that was moved or renamed could not open its threads any more ("its user-data link
    does not lead to the quota volume"), and the next process's sweep deleted their files."""

    def config(home: Path) -> HerdsmanConfig:
        return HerdsmanConfig.model_validate(
            {
                "home": str(home),
                "skills": {"enabled": False},
                "sandbox": {"isolation": "bwrap", "disk_quota_mb": 100, "max_files": 1000},
            }
        )

    first = _on_own_volume(LocalSandboxProvider(config(tmp_path / "project" / "home")), own_volume)
    first.acquire("t1").write_text("/mnt/user-data/workspace/notes.md", "keep me")
    link = tmp_path / "project" / "home" / "threads" / "t1" / "user-data"
    assert os.readlink(link) == str(own_volume.thread_data(tmp_path / "project" / "home", "t1"))  # not the machine's
    first.close()
    os.rename(tmp_path / "project", tmp_path / "moved")
    own_volume.sweep(grace=0.0)  # the sweep of the next process, at once (of the test's own volume only)

    moved = _on_own_volume(LocalSandboxProvider(config(tmp_path / "moved" / "home")), own_volume)
    try:
        assert moved.acquire("t1").read_text("/mnt/user-data/workspace/notes.md") == "keep me"
        result = moved.acquire("t1").execute("cat /mnt/user-data/workspace/notes.md; echo ok > more.txt")
        assert result.exit_code == 0 and "keep me" in result.output
    finally:
        moved.close()

    # a new home where the old one was
    fresh = _on_own_volume(LocalSandboxProvider(config(tmp_path / "project" / "home")), own_volume)
    try:
        listing = fresh.acquire("t1").execute("ls -A /mnt/user-data/workspace")
        assert listing.exit_code == 0 and listing.output.strip() == ""
    finally:
        fresh.close()


@pytest.mark.parametrize("kind", ["provider", "docker_provider"])
def test_a_thread_held_at_its_placement_holds_up_no_other_threads_acquire(
    kind: str, own_volume: QuotaVolume, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A thread's placement on the volume waits while a sweep holds its folder (an exclusive
    flock). The docker provider placed it under its own lock, so every other thread's acquire
    (another user's file listing, through the gateway) waited for that sweep too. Checked by
    order: the other thread's sandbox comes while the held one is still being placed."""
    provider = request.getfixturevalue(kind)
    folder = own_volume.thread_data(tmp_path / "home", "held").parent
    folder.mkdir(parents=True)
    sweep = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(sweep, fcntl.LOCK_EX)  # what a sweep holds while it looks at the folder
    let_go = threading.Event()

    def end_sweep() -> None:
        let_go.set()
        fcntl.flock(sweep, fcntl.LOCK_UN)

    watchdog = threading.Timer(60, end_sweep)  # a provider that blocks fails the test, not hangs it
    held: list[object] = []
    placing = threading.Thread(target=lambda: held.append(provider.acquire("held")), daemon=True)
    try:
        watchdog.start()
        placing.start()
        home_note = folder.parents[1] / "home"  # written by the placement just before it takes the folder's lock
        assert _until(home_note.exists), "the held thread's placement never began"
        other = provider.acquire("other")
        came_while_held = not let_go.is_set()
        assert came_while_held, "another thread's sandbox came only after the held thread's placement"
        assert placing.is_alive(), "the held thread was placed through the sweep's lock"
        other.write_text("/mnt/user-data/workspace/notes.md", "mine")
    finally:
        watchdog.cancel()
        end_sweep()
        placing.join(60)
        os.close(sweep)
    assert held, "the held thread was not placed once the sweep let its folder go"
    held[0].write_text("/mnt/user-data/workspace/notes.md", "placed")  # type: ignore[attr-defined]
    assert os.readlink(tmp_path / "home" / "threads" / "held" / "user-data") == str(folder / "user-data")


def _until(test, seconds: float = 60.0) -> bool:
    """Whether ``test()`` came true within ``seconds`` (polled)."""
    deadline = time.monotonic() + seconds
    while not test():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True
