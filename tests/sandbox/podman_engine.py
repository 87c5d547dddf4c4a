"""A real Docker-API engine for tests: podman's Docker-compatible service, started and stopped here.

Everything lives in one temporary directory (its own storage root, run root and
``containers.conf``), so the tests neither see nor disturb other podman users of the machine.
No registry is needed: the sandbox image is imported from a busybox-static root filesystem
(about 2 MB, a fraction of a second). Facts that shaped this (see issue 6): crun cannot set
rlimits on these VMs, so runc is the runtime; nofile/nproc defaults are set in containers.conf.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

IMAGE = "localhost/herdsman-sandbox-test:latest"
PACKAGES = ("podman", "catatonit", "runc", "busybox-static")
CONTAINERS_CONF = """\
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]

[engine]
runtime = "runc"
"""


class EngineUnavailable(Exception):
    """podman cannot be installed or started here; the message says why."""


@dataclass(frozen=True)
class PodmanEngine:
    """A running podman service: its Docker-API URL and the test image on it."""

    base_url: str
    image: str
    root: Path
    pid: int

    def podman(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run a podman command against this engine's storage."""
        return subprocess.run(
            ["podman", *_storage_flags(self.root), *args],
            capture_output=True, text=True, env=_env(self.root), timeout=120, cwd=self.root,
        )  # fmt: skip


def _storage_flags(root: Path) -> list[str]:
    return ["--root", str(root / "storage"), "--runroot", str(root / "run"), "--tmpdir", str(root / "tmp")]


def _env(root: Path) -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(root / "containers.conf")}


def _busybox() -> str | None:
    for candidate in ("/bin/busybox", "/usr/bin/busybox"):
        if os.path.exists(candidate):
            return candidate
    return None


def ensure_podman() -> None:
    """Install podman, runc and busybox-static when missing (as root with apt-get), or raise."""
    if shutil.which("podman") and shutil.which("runc") and _busybox():
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise EngineUnavailable(
            "podman, runc and busybox-static are not installed and cannot be installed here "
            "(needs root and apt-get); install them to run the docker provider tests"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    done = subprocess.run(["apt-get", "install", "-y", "-qq", *PACKAGES], capture_output=True, text=True, env=env)
    if done.returncode != 0 or not shutil.which("podman"):
        raise EngineUnavailable(f"apt-get install {' '.join(PACKAGES)} failed: {done.stderr.strip()[-300:]}")


def build_rootfs(target: Path) -> None:
    """A busybox root filesystem with a non-root ``sandbox`` user (uid 1000)."""
    busybox = _busybox()
    assert busybox is not None
    (target / "bin").mkdir(parents=True)
    shutil.copy2(busybox, target / "bin" / "busybox")
    applets = subprocess.run([busybox, "--list"], capture_output=True, text=True, check=True).stdout.split()
    for applet in applets:
        if applet != "busybox":
            (target / "bin" / applet).symlink_to("busybox")
    for directory in ("etc", "tmp", "mnt/user-data", "mnt/skills", "proc", "dev", "sys", "usr"):
        (target / directory).mkdir(parents=True, exist_ok=True)
    (target / "usr" / "bin").symlink_to("../bin")
    (target / "tmp").chmod(0o1777)
    (target / "etc" / "passwd").write_text(
        "root:x:0:0:root:/root:/bin/sh\nsandbox:x:1000:1000:sandbox:/mnt/user-data/workspace:/bin/sh\n"
    )
    (target / "etc" / "group").write_text("root:x:0:\nsandbox:x:1000:\n")


def _import_image(root: Path) -> None:
    rootfs = root / "rootfs"
    build_rootfs(rootfs)
    import_tree(root, rootfs, IMAGE)


def import_tree(root: Path, rootfs: Path, image: str, changes: tuple[str, ...] = ()) -> None:
    """Import the root filesystem ``rootfs`` as ``image`` into the engine's storage under ``root``
    (``changes``: Dockerfile instructions such as ``USER 1000:1000``); raise EngineUnavailable."""
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    flags = [arg for change in changes for arg in ("--change", change)]
    done = subprocess.run(
        ["podman", *_storage_flags(root), "import", *flags, "-", image],
        stdin=tar.stdout, capture_output=True, text=True, env=_env(root), timeout=600,
    )  # fmt: skip
    tar.wait()
    if done.returncode != 0:
        raise EngineUnavailable(f"podman import failed: {done.stderr.strip()[-300:]}")


@contextmanager
def podman_engine() -> Iterator[PodmanEngine]:
    """Start podman's Docker-API service on a private socket; stop it (by PID) and clean up."""
    ensure_podman()
    root = Path(tempfile.mkdtemp(prefix="herdsman-podman-"))
    (root / "containers.conf").write_text(CONTAINERS_CONF)
    socket_path = root / "podman.sock"
    proc: subprocess.Popen[bytes] | None = None
    try:
        _import_image(root)
        log = open(root / "service.log", "wb")
        proc = subprocess.Popen(
            ["podman", *_storage_flags(root), "system", "service", "--time=0", f"unix://{socket_path}"],
            stdout=log, stderr=subprocess.STDOUT, env=_env(root), start_new_session=True,
            cwd=root,  # conmon leaves an empty "oom" file in its working directory when a container is killed
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while not socket_path.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise EngineUnavailable(
                    f"podman system service did not start: {(root / 'service.log').read_text()[-300:]}"
                )
            time.sleep(0.05)
        yield PodmanEngine(f"unix://{socket_path}", IMAGE, root, proc.pid)
    finally:
        if proc is not None:
            subprocess.run(["podman", *_storage_flags(root), "rm", "-af", "-t", "0"],
                           capture_output=True, env=_env(root), timeout=120)  # fmt: skip
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            _unmount_below(root)
        shutil.rmtree(root, ignore_errors=True)


def _unmount_below(root: Path) -> None:
    """Lazily unmount what the overlay storage driver left mounted under ``root``."""
    with open("/proc/self/mounts") as fh:
        points = [line.split()[1] for line in fh]
    for point in sorted(points, key=len, reverse=True):
        if point.startswith(str(root) + "/"):
            subprocess.run(["umount", "-l", point], capture_output=True)


_shared: dict[str, object] = {}


def shared_engine() -> PodmanEngine:
    """One engine for the whole test process, stopped at exit; raises EngineUnavailable.

    Test modules share it through this function (a session fixture imported into two modules
    would start two engines).
    """
    if "error" in _shared:
        raise EngineUnavailable(str(_shared["error"]))
    if "engine" not in _shared:
        manager = podman_engine()
        try:
            _shared["engine"] = manager.__enter__()
        except EngineUnavailable as exc:
            _shared["error"] = exc
            raise
        atexit.register(manager.__exit__, None, None, None)
    return _shared["engine"]  # type: ignore[return-value]


def engine_or_skip() -> PodmanEngine:
    """The shared engine, or skip the calling test with the reason it cannot start."""
    import pytest

    try:
        return shared_engine()
    except EngineUnavailable as exc:
        pytest.skip(str(exc))
