"""Running commands: bounded output, binary output, timeouts that kill the whole tree."""

from __future__ import annotations

import tracemalloc
import uuid
from collections.abc import Callable

from herdsman.sandbox.process import OutputCapture, run_process

ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


def bash(command: str, timeout: float = 20, max_chars: int = 20_000):
    return run_process(["bash", "-c", command], timeout=timeout, max_output_chars=max_chars, env=ENV)


def test_output_capture_keeps_head_and_tail_and_counts_the_cut() -> None:
    cap = OutputCapture(10)
    for chunk in (b"abc", b"defghij", b"klmnopqrst", b"uvwxyz"):
        cap.feed(chunk)
    cap.finish()
    assert cap.text() == "abcde\n... [16 characters cut] ...\nvwxyz"
    assert cap.cut_chars == 16


def test_short_output_and_exit_code_come_back_whole() -> None:
    result = bash("echo out; echo err >&2; exit 3")
    assert result.exit_code == 3
    assert result.output == "out\nerr\n"
    assert not result.timed_out and result.truncated_chars == 0


def test_ten_megabytes_of_output_are_cut_in_the_middle_with_bounded_memory() -> None:
    tracemalloc.start()
    try:
        result = bash("printf 'START\\n'; head -c 20000000 /dev/zero | tr '\\0' x; printf '\\nEND'")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.exit_code == 0
    assert result.output.startswith("START\n")
    assert result.output.endswith("\nEND")
    total = len("START\n") + 20_000_000 + len("\nEND")
    assert result.truncated_chars == total - 20_000
    assert f"... [{total - 20_000} characters cut] ..." in result.output
    assert len(result.output) < 20_100
    assert peak < 3 * 1024 * 1024, f"peak Python memory {peak} bytes while reading 20 MB"


def test_binary_output_is_decoded_with_replacement_characters() -> None:
    result = bash("head -c 4096 /dev/urandom; printf '\\xff\\xfe\\x80 done'")
    assert result.exit_code == 0
    assert result.output.endswith("\ufffd\ufffd\ufffd done")


def test_sleep_past_the_timeout_is_killed(find_pids: Callable[[str], list[int]]) -> None:
    token = f"{uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    result = bash(f"echo before; sleep {token}", timeout=1)
    assert result.timed_out
    assert result.output == "before\n"
    assert result.exit_code == 137
    assert find_pids(f"sleep {token}") == []


def test_daemonized_grandchild_is_killed_on_timeout(find_pids: Callable[[str], list[int]]) -> None:
    token = f"{uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    daemon = (
        "import os, sys, time\n"
        "if os.fork(): sys.exit(0)\n"
        "os.setsid()\n"
        "if os.fork(): sys.exit(0)\n"
        f"time.sleep({token})\n"
    )
    result = bash(f"python3 -c '{daemon}' > /dev/null 2>&1; setsid sleep {token} & sleep 100", timeout=1)
    assert result.timed_out
    assert find_pids(token) == []


def test_background_job_holding_the_pipe_does_not_block_and_is_killed(
    find_pids: Callable[[str], list[int]],
) -> None:
    token = f"{uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    result = bash(f"sleep {token} & echo started", timeout=30)
    assert not result.timed_out
    assert result.exit_code == 0
    assert result.output == "started\n"
    assert find_pids(token) == []


def test_command_that_closes_stdout_still_times_out() -> None:
    result = bash("exec >&- 2>&-; sleep 100", timeout=1)
    assert result.timed_out


def test_environment_is_only_what_was_given(monkeypatch) -> None:
    monkeypatch.setenv("SECRET_API_KEY", "sk-should-not-leak")
    result = bash("env")
    assert "sk-should-not-leak" not in result.output
    assert "HERDSMAN_RUN_ID=" in result.output


def test_stdout_and_stderr_come_back_apart_as_well_as_merged() -> None:
    result = bash("echo one; echo two >&2; sleep 0.05; echo three; echo four >&2; exit 1")
    assert result.output == "one\ntwo\nthree\nfour\n"
    assert (result.stdout, result.stderr) == ("one\nthree\n", "two\nfour\n")
    assert result.exit_code == 1
