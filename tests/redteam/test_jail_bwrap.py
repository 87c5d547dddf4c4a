"""Red team: the bubblewrap jail holds against uid 0, run as root and as an unprivileged user.

Findings 1 and 7 of the hardening issue: inside the jail the command was uid 0 and could write
``/proc/sys/kernel/core_pattern`` (a crash then ran a script as root on the host), and
``/proc/1/environ``/``cmdline`` showed the gateway's environment and the host paths of the
thread. Each probe of ``jail_probe.py`` runs as a jailed command of a provider started once as
root and once as ``nobody`` (through ``setpriv``), and the same assertions hold for both.

Issue 30, item 1: the jail's uid is the gateway's on the host, so ``chmod 4755`` on a copy of
``python3`` left a root-owned setuid program in the thread's folder (0755, like the home), which
any local user could run to read ``/etc/shadow``; every other way to leave a setuid or setgid
file (``install -m``, ``cp -p``, ``tar xp``, ``open``/``mknod`` with the bits, the raw legacy
calls, ``fchmodat2``, file capabilities, hard links to the host's setuid programs) is tried too.
Item 7: ``personality``, ``modify_ldt``, NUMA policy calls and ``AF_VSOCK``/``AF_ALG`` sockets
were allowed, and the root-only ``/proc`` files (``kpageflags``, ``slabinfo``...) readable.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from herdsman.sandbox.bwrap import bwrap_status

ROOT = Path(__file__).resolve().parents[2]
NOBODY = 65534
pytestmark = pytest.mark.skipif(not bwrap_status().available, reason=f"bubblewrap unusable: {bwrap_status().reason}")


def _run_probe(home: Path, as_nobody: bool) -> dict:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
    python = sys.executable
    if as_nobody:
        python = _python_for_nobody()
        site = next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT), site])
        env["HOME"] = str(home.parent)
        prefix = [shutil.which("setpriv") or "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    else:
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
        prefix = []
    if as_nobody:
        _skip_unless_readable(prefix, python, env)
    done = subprocess.run(
        [*prefix, python, "-m", "tests.redteam.jail_probe", str(home)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _skip_unless_readable(prefix: list[str], python: str, env: dict) -> None:
    """Skips when ``nobody`` cannot import the probe: the checkout or its venv sits under a
    directory only root may enter (``mktemp -d`` makes 0700 directories)."""
    check = subprocess.run(
        [*prefix, python, "-c", "import herdsman.sandbox.bwrap, tests.redteam.jail_probe"],
        cwd="/",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if check.returncode != 0:
        last = (check.stderr.strip().splitlines() or ["?"])[-1]
        pytest.skip(
            f"uid {NOBODY} cannot read this checkout or its venv ({last}); "
            "clone into a directory every user may enter to run the unprivileged probes"
        )


def _python_for_nobody() -> str:
    """A python of this minor version that an unprivileged user may run (the venv's base may
    sit in a root-only home, as pyenv's does)."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (sys.executable, f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"):
        check = subprocess.run(
            ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", candidate, "-c", "print(1)"],
            capture_output=True,
            text=True,
        )
        if check.returncode == 0:
            return candidate
    pytest.skip(f"no python {version} that an unprivileged user can run")


@pytest.fixture(scope="module", params=["root", "nobody"])
def probes(request) -> dict:
    """The probes' findings as root and as ``nobody``, run once per user for the module: every
    test only reads them."""
    as_nobody = request.param == "nobody"
    if os.geteuid() != 0:
        if as_nobody:
            pytest.skip("already unprivileged: the root case covers this user")
    elif as_nobody and not shutil.which("setpriv"):
        pytest.skip("setpriv (util-linux) is missing")
    base = Path(tempfile.mkdtemp(prefix="herdsman-jail-"))  # pytest's own tmp is root-only
    try:
        if as_nobody:
            os.chmod(base, 0o755)
            os.chown(base, NOBODY, NOBODY)
        result = _run_probe(base / "home", as_nobody)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert result["isolation"] == "bwrap"
    result["home"] = str(base / "home")
    return result


def test_never_uid_0_no_capabilities_no_new_privileges_seccomp(probes: dict) -> None:
    p = probes["probes"]
    assert p["id"].split() == ["1000", "1000"]
    status = dict(line.split(":\t") for line in p["status"].splitlines())
    assert status["CapEff"] == "0000000000000000" and status["CapBnd"] == "0000000000000000"
    assert status["NoNewPrivs"] == "1"
    assert status["Seccomp"] == "2"


def test_files_written_in_the_jail_belong_to_the_host_user(probes: dict) -> None:
    assert probes["probes"]["write_file"].strip() == "ok"
    assert probes["owner"] == probes["uid"]


def test_kernel_interfaces_are_read_only_or_masked(probes: dict) -> None:
    p = probes["probes"]
    assert "WRITABLE" not in p["core_pattern"]
    assert "Read-only file system" in p["core_pattern"] or "Permission denied" in p["core_pattern"]
    assert p["proc_sys_writable"] == "", "writable files under /proc/sys"
    assert "REAL" not in p["sysrq"]
    for pair in p["masked_reads"].split():
        path, size = pair.split("=")
        assert size == "0", f"{path} is readable in the jail"
    for name in ("kpageflags", "slabinfo"):  # root-only files: the jail of a root gateway owned them
        assert not os.path.exists(f"/proc/{name}") or f"/proc/{name}=" in p["masked_reads"]
    assert "No such file" in p["sys"], "/sys is mounted in the jail"


def test_seccomp_denies_namespaces_and_kernel_surface(probes: dict) -> None:
    p = probes["probes"]
    assert p["nested_userns"].count("Operation not permitted") == 2
    results = json.loads(p["syscalls"])
    allowed = {name: outcome for name, outcome in results.items() if outcome != "Operation not permitted"}
    assert allowed == {}


def test_nothing_of_the_host_in_pid_1(probes: dict) -> None:
    p = probes["probes"]
    assert p["pid1_environ"].strip() == "", "bubblewrap (pid 1 in the jail) carries an environment"
    home = str(Path(probes["home"]).resolve())
    assert home not in p["pid1_cmdline"] and "/user-data" not in p["pid1_cmdline"]
    assert "--bind" not in p["pid1_cmdline"]


def test_no_setuid_setgid_or_capable_file_reaches_the_host(probes: dict) -> None:
    assert "attempted" in probes["probes"]["setuid"].splitlines(), probes["probes"]["setuid"][-2000:]
    assert probes["privileged"] == [], "files the jail left with privilege on the host"


def test_home_and_thread_folders_are_private(probes: dict) -> None:
    assert probes["folder_modes"] == {"home": "0o700", "threads": "0o700", "thread": "0o700"}


def test_personality_and_sockets_docker_allows_still_work(probes: dict) -> None:
    p = probes["probes"]
    assert json.loads(p["syscalls_kept"]) == {
        "personality_query": "ok",
        "personality_linux": "ok",
        "socket_af_unix": "ok",
    }
    assert p["openat2"].strip() == "Function not implemented"  # the C library falls back to openat
