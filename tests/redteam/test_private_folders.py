"""Red team: another local user reaches what a jail wrote (issue 30, item 1).

The home (``.herdsman``), its ``threads`` folder and each thread's folder were 0755, so any user
of the machine could read every thread's files and run what a jail left there (a setuid program
before the seccomp filter refused the bits). They are now 0700: created so, and tightened when
a provider starts (an older home) or a thread is first used. The other user is ``nobody``,
through ``setpriv``, as in ``test_jail_bwrap.py``.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from herdsman.config.schema import HerdsmanConfig
from herdsman.sandbox import LocalSandboxProvider
from tests.support import logged_events

NOBODY = 65534


@pytest.fixture
def base() -> Iterator[Path]:
    """A folder every user may enter (pytest's own tmp is root-only, which would hide the bug)."""
    folder = Path(tempfile.mkdtemp(prefix="herdsman-private-"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _provider(home: Path) -> LocalSandboxProvider:
    return LocalSandboxProvider(HerdsmanConfig.model_validate({"home": str(home), "skills": {"enabled": False}}))


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _other_user_reads(path: Path) -> subprocess.CompletedProcess[str]:
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv (util-linux) to act as another local user")
    argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "cat", str(path)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30)


def test_a_new_thread_cannot_be_read_by_another_user(base: Path) -> None:
    provider = _provider(base / "home")
    sandbox = provider.acquire("t1")
    sandbox.write_text("secret.txt", "the thread's secret")
    provider.close()
    home = base / "home"
    assert {_mode(home), _mode(home / "threads"), _mode(home / "threads" / "t1")} == {0o700}
    read = _other_user_reads(sandbox.paths.workspace / "secret.txt")
    assert read.returncode != 0 and "secret" not in read.stdout
    assert "Permission denied" in read.stderr


def test_an_older_home_is_tightened_when_a_provider_starts(base: Path) -> None:
    home = base / "home"
    workspace = home / "threads" / "old" / "user-data" / "workspace"
    workspace.mkdir(parents=True)
    for folder in (home, home / "threads", home / "threads" / "old"):
        os.chmod(folder, 0o2755)  # as Herdsman used to leave them, and a setgid bit on top
    (workspace / "secret.txt").write_text("an old thread's secret")
    _provider(home).close()
    assert {_mode(home), _mode(home / "threads"), _mode(home / "threads" / "old")} == {0o700}
    read = _other_user_reads(workspace / "secret.txt")
    assert read.returncode != 0 and "secret" not in read.stdout


def test_a_home_of_another_user_is_left_alone_with_a_warning(base: Path, caplog: pytest.LogCaptureFixture) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give the home to another user")
    home = base / "home"
    home.mkdir(mode=0o755)
    os.chown(home, NOBODY, NOBODY)
    with caplog.at_level(logging.WARNING, logger="herdsman.sandbox.paths"):
        _provider(home).close()
    assert _mode(home) == 0o755
    assert any(
        e["event"] == "folder_not_private" and e["path"] == str(home) and "chmod 700" in e["fix"]
        for e in logged_events(caplog.records)
    )
