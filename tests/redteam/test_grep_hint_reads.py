"""Red team: the bash tool reads the files a grep that found nothing names, on the host, to show
their matching lines (``sandbox/grep_hint.py``). The command is the model's (or a prompt
injection's), and what it named or planted in the workspace was made by the jailed command.

What must hold: the hint reads nothing outside the thread's own folders (absolute host paths,
``/proc``, ``..``, another thread's files, links the command planted to any of those), no fifo,
device or huge file (no hang, no gigabytes read), and its work stays bounded by the file, not by
the pattern's length (it runs in the gateway's process, outside the jail's CPU limits).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from herdsman.config.schema import HerdsmanConfig
from herdsman.sandbox.grep_hint import no_match_hint
from herdsman.sandbox.local import LocalSandboxProvider

SECRET = "secret-of-thread-two plaintext password hunter2"


@pytest.fixture
def sandboxes(tmp_path: Path):
    config = HerdsmanConfig.model_validate(
        {
            "home": str(tmp_path / "home"),
            "skills": {"enabled": False},
            "sandbox": {"isolation": "none", "allow_unisolated_bash": True},
        }
    )
    provider = LocalSandboxProvider(config)
    mine, other = provider.acquire("t1"), provider.acquire("t2")
    (other.paths.workspace / "secret.txt").write_text(SECRET + "\n")
    yield mine, other
    provider.close()


def hint(sandbox, command: str) -> str:
    """The hint for ``command`` as if it ran and its grep matched nothing (exit code 1)."""
    return no_match_hint(sandbox, command, 1, "")


def test_host_proc_and_other_thread_paths_are_not_read(sandboxes) -> None:
    mine, other = sandboxes
    other_host = other.paths.workspace / "secret.txt"
    for name in [
        str(other_host),
        "/etc/passwd",
        "/proc/self/environ",
        "/proc/self/cmdline",
        "/proc/self/status",
        "../../t2/user-data/workspace/secret.txt",
        "/mnt/user-data/../../../etc/passwd",
        "/mnt/user-data/workspace/../../../t2/user-data/workspace/secret.txt",
    ]:
        out = hint(mine, f"grep 'hunter2 root password zzqq' {name}")
        assert "hunter2" not in out and "root:" not in out and "PATH=" not in out, (name, out)


def test_links_the_command_planted_are_not_followed_out(sandboxes) -> None:
    mine, other = sandboxes
    ws = mine.paths.workspace
    os.symlink(other.paths.workspace / "secret.txt", ws / "a.txt")
    os.symlink("/etc/passwd", ws / "b.txt")
    os.symlink(other.paths.workspace, ws / "d")
    os.symlink("/proc/self", ws / "p")
    for name in ["a.txt", "b.txt", "d/secret.txt", "p/environ", "./a.txt"]:
        out = hint(mine, f"grep -c 'hunter2 root zzqq' {name}")
        assert "hunter2" not in out and "root:" not in out and "PATH=" not in out, (name, out)


def _returns(fn, *args) -> bool:
    done = threading.Event()
    threading.Thread(target=lambda: (fn(*args), done.set()), daemon=True).start()
    return done.wait(30)


def test_a_fifo_a_device_and_a_huge_file_neither_hang_nor_get_read(sandboxes) -> None:
    mine, _ = sandboxes
    ws = mine.paths.workspace
    os.mkfifo(ws / "pipe.txt")
    with open(ws / "huge.txt", "wb") as fh:  # sparse: 2 GiB of zeros, one word at the end
        fh.truncate(2 << 30)
    for name in ["pipe.txt", "/dev/zero", "/dev/stdin", "huge.txt", "/dev/urandom"]:
        assert _returns(hint, mine, f"grep 'word zzqq' {name}"), name


def _cpu(fn, *args) -> float:
    start = time.thread_time()
    fn(*args)
    return time.thread_time() - start


def test_a_pattern_of_thousands_of_words_costs_no_more_than_a_few(sandboxes) -> None:
    """A 4 MB file and a grep for 3,000 words that are not in it: the hint scanned the file once
    per word (minutes of the gateway's CPU for one command); it must cost about what a pattern
    of a few words costs (CPU time ratio in one run, not a duration)."""
    mine, _ = sandboxes
    line = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda\n"
    (mine.paths.workspace / "big.txt").write_text(line * (4_000_000 // len(line)))
    many = " ".join(f"w{i:05d}x" for i in range(3000))
    few = _cpu(hint, mine, "grep -c 'w00001x w00002x w00003x' big.txt")
    cost = _cpu(hint, mine, f"grep -c '{many}' big.txt")
    assert cost < 20 * max(few, 0.005), (few, cost)
