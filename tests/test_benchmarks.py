"""The benchmarks still run and print one JSON line with their keys (figures are not asserted)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support import REPO


def run_benchmark(name: str, *args: str) -> dict:
    """Run ``benchmarks/<name>`` with ``args``; the figures of the one JSON line it prints."""
    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / name), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1
    return json.loads(lines[0])


def test_step_overhead_prints_one_json_line() -> None:
    figures = run_benchmark("step_overhead.py", "--steps", "3", "--repeats", "1")
    for key in ("herdsman_ms_per_step", "deepagents_ms_per_step", "bare_ms_per_step"):
        assert figures[key] > 0


def test_subagent_fanout_prints_one_json_line() -> None:
    figures = run_benchmark("subagent_fanout.py", "--sizes", "2,3", "--latency", "0.05", "--compare", "2")
    # every sub-agent really waited its latency: wall time is at least the ideal
    assert figures["efficiency_2"] >= 1.0 and figures["efficiency_3"] >= 1.0
    assert figures["deepagents_efficiency_2"] >= 1.0
    assert figures["completion_latency_p50_ms"] >= 0


def test_snapshots_prints_one_json_line() -> None:
    figures = run_benchmark("snapshots.py", "--sizes", "50", "--steps", "3", "--big-steps", "3")
    assert figures["snapshot_ms_p50_50"] > 0 and figures["restore_ms"] > 0
    assert figures["bytes_per_step"] >= 1024 * 1024  # each step rewrote 1 MB of random bytes


def test_cron_tick_prints_one_json_line() -> None:
    figures = run_benchmark("cron_tick.py", "--crons", "20", "--schedulers", "2")
    assert figures["duplicates"] == 0 and figures["missed"] == 0 and figures["ms_per_firing"] > 0


def test_make_bench_runs_every_benchmark_that_needs_no_weights() -> None:
    """``make bench`` lists each benchmark but those docs/benchmarks.md says are run by hand (they load the
    embedded model, start their own PostgreSQL and Redis, or print a profile rather than figures);
    web_ui.py has a line of its own. Folders hold a benchmark's helpers, not benchmarks of their own."""
    import re

    makefile = (REPO / "Makefile").read_text()
    listed = set(re.search(r"^BENCHES := (.*)$", makefile, re.MULTILINE).group(1).split())
    by_hand = {
        "first_token",
        "scale_out",
        "profile_run",
        "everyday",
        "skill_selection",
        "skill_learning",
    }  # agent_tasks/run.py too, in a folder of its own
    guide = (REPO / "docs" / "benchmarks.md").read_text()
    assert all(f"benchmarks/{name}.py" in guide for name in by_hand)
    assert "benchmarks/web_ui.py" in makefile
    scripts = {p.stem for p in (REPO / "benchmarks").glob("*.py")} - {"web_ui"}
    assert listed == scripts - by_hand


def test_fairness_prints_one_json_line() -> None:
    figures = run_benchmark("fairness.py", "--sleep", "20")
    assert figures["a_commands_running"] >= 4
    for request in ("listing", "download", "upload", "chat"):
        assert figures[f"idle_{request}_ms"] > 0 and figures[f"attack_{request}_ms"] > 0
