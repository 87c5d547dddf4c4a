"""The benchmarks still run and print one JSON line with their keys (figures are not asserted)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support import REPO


def test_step_overhead_prints_one_json_line() -> None:
    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "step_overhead.py"), "--steps", "3", "--repeats", "1"],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1
    figures = json.loads(lines[0])
    for key in ("herdsman_ms_per_step", "deepagents_ms_per_step", "bare_ms_per_step"):
        assert figures[key] > 0


def test_subagent_fanout_prints_one_json_line() -> None:
    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "subagent_fanout.py"), "--sizes", "2,3", "--latency", "0.05", "--compare", "2"],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1
    figures = json.loads(lines[0])
    # every sub-agent really waited its latency: wall time is at least the ideal
    assert figures["efficiency_2"] >= 1.0 and figures["efficiency_3"] >= 1.0
    assert figures["deepagents_efficiency_2"] >= 1.0
    assert figures["completion_latency_p50_ms"] >= 0
