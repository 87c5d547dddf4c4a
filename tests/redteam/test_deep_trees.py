"""Red team: folders nested deeper than the gateway may open files.

A comb of folders (``mkdir b a; cd a``, 1,100 levels) made every walk of the thread's files
hold one descriptor per level, past the usual limit of 1,024 open files: the measured quota's
walk raised ``EMFILE``, which killed its watch (the command then wrote what it liked without the
quota volume), failed every later command of the thread, and, while it lasted, any other
thread's call that opened a file. Now a walk holds at most 64 folders open and reaches deeper
ones by name from an ancestor it holds.

And a chain deeper than the gateway may open files survived a thread's deletion:

Issue #30 follow-up (the quota volume, a thread id used again). Deleting a thread walks its
files by descriptors, one open per level; a jail nested 1,500 folders (``mkdir d; cd d`` in a
loop, under a second) against the common limit of 1,024 open files, so the walk failed with
``EMFILE`` half way: the thread's subvolume stayed on the quota volume (its quota group too),
and a new thread given the deleted one's id, by any user, was placed on that subvolume and
found the files at the bottom of the chain. Now the walk keeps at most 128 folders open and
moves deeper ones up first; the thread's data is gone and the new thread starts empty.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

import pytest

from herdsman.config.schema import HerdsmanConfig
from herdsman.runtime.storage.thread_files import remove_thread_files
from herdsman.sandbox import LocalSandboxProvider
from herdsman.sandbox.bwrap import bwrap_status

pytestmark = pytest.mark.skipif(not bwrap_status().available, reason=f"bubblewrap unusable: {bwrap_status().reason}")

OPEN_FILES = 1024  # the soft limit a systemd service (and most shells) start with
DEPTH = 1500
PLANT = (
    "python3 -c 'import os\n"
    f"for _ in range({DEPTH}):\n"
    '    os.mkdir("d"); os.chdir("d")\n'
    'open("planted.txt", "w").write("left by the first owner")\'; echo planted'
)


def jail_provider(home: Path, **sandbox: object) -> LocalSandboxProvider:
    """A bubblewrap provider homed at ``home`` with these ``sandbox`` settings."""
    config = HerdsmanConfig.model_validate({
        "home": str(home), "skills": {"enabled": False},
        "sandbox": {"isolation": "bwrap", "command_timeout_seconds": 60, **sandbox},
    })  # fmt: skip
    return LocalSandboxProvider(config)


@pytest.fixture
def usual_open_files():
    """This process may open OPEN_FILES files, as a gateway started by systemd."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, OPEN_FILES), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.parametrize("volume", ["auto", "off"])
def test_a_deep_chain_goes_with_its_thread(tmp_path: Path, usual_open_files, volume: str) -> None:
    """After the thread is deleted nothing of it is left (on the quota volume or in the home),
    and a thread made again with its id finds no file of the first one."""
    home = tmp_path / "home"
    provider = jail_provider(home, quota_volume={"mode": volume})
    try:
        sandbox = provider.acquire("reused-id")
        assert "planted" in sandbox._shell.run(sandbox.paths, PLANT, 60).output
        data = os.path.realpath(sandbox.paths.user_data)
        remove_thread_files(provider, home, "reused-id")
        assert not os.path.exists(data), "the deleted thread's data is still on disk"
        assert not (home / "threads" / "reused-id").exists()
        again = provider.acquire("reused-id")
        found = again._shell.run(again.paths, "find /mnt/user-data -name planted.txt | wc -l; ls -A", 60).output
        assert found.split() == ["0"], found
    finally:
        provider.close()


COMB = (
    "python3 -c 'import os\n"
    "for _ in range(1100):\n"
    '    os.mkdir("b"); os.mkdir("a"); os.chdir("a")\n'
    'open("hidden.bin", "wb").write(os.urandom(48 << 20))\'; echo written'
)


def test_a_deep_comb_of_folders_is_measured(tmp_path: Path, usual_open_files) -> None:
    """The measured quota (no quota volume) sees 48 MiB written at the bottom of a 1,100-level
    comb: the command is told it passed the quota, and the thread's next command runs."""
    provider = jail_provider(tmp_path / "home", disk_quota_mb=16, quota_volume={"mode": "off"})
    try:
        sandbox = provider.acquire("comb")
        result = sandbox.execute(COMB)
        assert "sandbox.disk_quota_mb" in result.output, result.output[-500:]
        assert sandbox.quota.usage(fresh=True).bytes >= 48 << 20
        assert sandbox.execute("echo still-works").output.startswith("still-works")
    finally:
        remove_thread_files(provider, tmp_path / "home", "comb")  # pytest's rmtree recurses once per level
        provider.close()
