"""Red team: the docker provider's container holds (finding 11 of the hardening issue).

Against podman's Docker-compatible service with the provider's own settings: user namespaces
were allowed (the engine's default profile), ``/var/tmp`` and ``/run`` were unsized tmpfs whose
filling left every later command answering 137, processes that cleared their environment
outlived their command, orphaned containers were adopted with their leftover processes, and a
command whose container died said only ``(no output) [exit code 137]``.

Issue 30, item 1: files the container writes land in the thread's folder on the host, owned by
the container's user (uid 1000 when the gateway runs as root); ``chmod 4755`` on a copy of a
program there left a setuid program any local user could run as that uid. The profile refuses
the setuid and setgid bits, and the home and thread folders are 0700 while the container user
still reaches its mounts.
"""

from __future__ import annotations

import io
import os
import signal
import stat
import subprocess
import sys
import tarfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from herdsman.config.schema import HerdsmanConfig
from herdsman.sandbox.docker import LABEL_CREATOR, SWEEP_DELAY, DockerSandboxProvider
from tests.redteam.jail_probe import folder_modes, privileged_files
from tests.sandbox.podman_engine import PodmanEngine, engine_or_skip

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def engine() -> PodmanEngine:
    return engine_or_skip()


def _config(home: Path, engine: PodmanEngine) -> HerdsmanConfig:
    return HerdsmanConfig.model_validate({
        "home": str(home), "skills": {"enabled": False},
        "sandbox": {"provider": "docker", "command_timeout_seconds": 20,
                    "docker": {"base_url": engine.base_url, "image": engine.image, "pull": "never"},
                    "limits": {"memory_mb": 256, "pids": 64, "cpus": 1, "file_size_mb": 64}},
    })  # fmt: skip


@pytest.fixture
def provider(tmp_path: Path, engine: PodmanEngine) -> Iterator[DockerSandboxProvider]:
    built = DockerSandboxProvider(_config(tmp_path / "home", engine))
    yield built
    built.cleanup()
    built.close()


def test_user_namespaces_and_denied_calls_fail(provider: DockerSandboxProvider) -> None:
    sandbox = provider.acquire("t1")
    out = sandbox.execute("unshare -U true; echo rc=$?; unshare -r true; echo rc=$?; grep Seccomp: /proc/self/status")
    assert out.output.count("rc=1") == 2, out.output
    assert out.output.count("Operation not permitted") == 2
    assert "Seccomp:\t2" in out.output


def test_filled_scratch_space_leaves_the_sandbox_usable(provider: DockerSandboxProvider) -> None:
    sandbox = provider.acquire("t1")
    fill = "; ".join(
        f"cat /dev/zero > {d}/fill 2>/dev/null; echo {d} done" for d in ("/tmp", "/var/tmp", "/run", "/dev/shm")
    )
    sandbox.execute(fill, timeout=60)
    sizes = sandbox.execute("df -m /tmp /var/tmp /run /dev/shm | tail -n +2").output
    for line in sizes.splitlines():  # every scratch mount is sized, none reaches the memory limit
        assert int(line.split()[1]) <= 256, line
    after = sandbox.execute("echo still-working")
    assert after.exit_code == 0 and "still-working" in after.output


def test_processes_that_clear_their_environment_die_with_their_command(provider: DockerSandboxProvider) -> None:
    sandbox = provider.acquire("t1")
    started = sandbox.execute(
        "setsid env -i sleep 771 > /dev/null 2>&1 & "
        "(env -i sh -c 'sleep 772 > /dev/null 2>&1 &' &) ; "
        "sleep 0.3; ps -o args | grep -c 'sleep 77[12]$'"
    )
    assert int(started.output.strip().splitlines()[-1]) >= 2, "the survivors never started"
    time.sleep(SWEEP_DELAY + 0.5)  # the thread went quiet: its leftovers are swept
    left = sandbox.execute("ps -o args | grep -v grep | grep -c 'sleep 77[12]' || true")
    assert left.output.strip().splitlines()[-1] == "0", left.output


def test_orphaned_container_is_reaped_with_its_processes(tmp_path: Path, engine: PodmanEngine) -> None:
    home = tmp_path / "home"
    script = textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(ROOT / "src")!r}, {str(ROOT)!r}]
        from herdsman.config.schema import HerdsmanConfig
        from herdsman.sandbox.docker import DockerSandboxProvider
        config = HerdsmanConfig.model_validate({_config(home, engine).model_dump(mode="json")!r})
        sandbox = DockerSandboxProvider(config).acquire("orphan")
        print("ready", flush=True)
        sandbox.execute("setsid env -i sh -c 'while :; do :; done' & sleep 60", timeout=120)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        time.sleep(3)  # the container is up and the busy loop runs
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    fresh = DockerSandboxProvider(_config(home, engine))
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and fresh.containers():
            time.sleep(0.5)
        assert fresh.containers() == [], "the orphaned container was left running"
        out = fresh.acquire("orphan").execute("ps -o args | grep -v grep | grep -c 'while' || true")
        assert out.output.strip().splitlines()[-1] == "0"
        labels = fresh.containers()[0].labels
        assert labels[LABEL_CREATOR].endswith(f":{os.getpid()}")
    finally:
        fresh.cleanup()
        fresh.close()


def test_a_command_whose_container_dies_says_so_and_the_next_one_works(provider: DockerSandboxProvider) -> None:
    sandbox = provider.acquire("t1")
    sandbox.execute("echo warm")
    container = provider.client.containers.get(sandbox.box.container_id)
    killer = threading.Timer(1.5, lambda: container.kill())
    killer.start()
    try:
        out = sandbox.execute("sleep 15; echo never")
    finally:
        killer.cancel()
    assert "the sandbox container stopped while the command ran" in out.output
    assert "never" not in out.output
    again = sandbox.execute("echo fresh-container")
    assert again.exit_code == 0 and "fresh-container" in again.output


def _setuid_tar() -> bytes:
    """A tar holding a setuid file and a setgid folder (made on the host: busybox cannot)."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        for name, kind, mode in (("t-suid", tarfile.REGTYPE, 0o4755), ("t-sgid-dir", tarfile.DIRTYPE, 0o2755)):
            info = tarfile.TarInfo(name)
            info.type, info.mode = kind, mode
            tar.addfile(info, io.BytesIO(b""))
    return data.getvalue()


def test_no_setuid_or_setgid_file_reaches_the_host(provider: DockerSandboxProvider) -> None:
    sandbox = provider.acquire("t1")
    (sandbox.paths.workspace / "suid.tar").write_bytes(_setuid_tar())
    out = sandbox.execute(
        "cp /bin/busybox ./bb; chmod 4755 ./bb; chmod u+s ./bb; chmod g+s ./bb; "
        "mkdir -p sgid-dir; chmod g+s sgid-dir; mkdir -m 2755 sgid-dir2; "
        "mkdir -p tar-x; tar xf suid.tar -C tar-x; ls -ln bb && echo attempted"
    )
    assert "attempted" in out.output.splitlines(), out.output
    assert " 1000 " in out.output or os.geteuid() != 0, out.output  # the container user wrote it
    assert privileged_files(sandbox.paths.user_data) == []
    assert stat.S_IMODE((sandbox.paths.workspace / "bb").stat().st_mode) == 0o755


def test_home_and_thread_folders_are_private_and_the_container_still_writes(provider: DockerSandboxProvider) -> None:
    sandbox = provider.acquire("t1")
    out = sandbox.execute("echo made > made.txt && cat made.txt")
    assert out.exit_code == 0 and out.output.strip() == "made", out.output
    assert folder_modes(sandbox.paths.home, "t1") == {"home": "0o700", "threads": "0o700", "thread": "0o700"}
