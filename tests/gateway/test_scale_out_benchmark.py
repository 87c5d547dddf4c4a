"""benchmarks/scale_out.py --quick still runs (real PostgreSQL, Redis, gateway and worker processes)
and prints one JSON line with every figure of every setup (figures not asserted, only their sense)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from tests.services import postgres_bin
from tests.support import REPO

FIGURES = (
    "runs_per_s",
    "first_event_p50_ms",
    "first_event_p99_ms",
    "first_output_p50_ms",
    "first_output_p99_ms",
    "cpu_s_per_run",
    "errors",
)
DURABLE = ("_1w", "_2w")
IN_MEMORY = ("_memory", "_memory_nopacing")


def test_scale_out_quick_prints_one_json_line_with_every_setup() -> None:
    if not (postgres_bin("initdb") and shutil.which("redis-server")):
        pytest.skip("needs PostgreSQL and redis-server (apt-get install postgresql redis-server)")
    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "scale_out.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1
    figures = json.loads(lines[0])
    setups = {f"{key}{suffix}" for suffix in (*DURABLE, *IN_MEMORY) for key in FIGURES}
    services = {f"services_cpu_s_per_run{suffix}" for suffix in DURABLE}
    settings = {
        "runs",
        "steps",
        "rounds",
        "gateways",
        "workers",
        "worker_tasks",
        "lease_seconds",
        "poll_seconds",
        "load_average_start",
        "load_average_end",
    }
    assert set(figures) == settings | setups | services | {"recovery_s"}
    assert figures["workers"] == [1, 2] and figures["gateways"] == 2 and figures["lease_seconds"] == 2.0
    for suffix in (*DURABLE, *IN_MEMORY):
        assert figures[f"errors{suffix}"] == 0, suffix  # every run streamed to its end
        assert figures[f"runs_per_s{suffix}"] > 0 and figures[f"cpu_s_per_run{suffix}"] > 0, suffix
        # each run's first event comes before its first output, so their medians are in that order too
        assert 0 < figures[f"first_event_p50_ms{suffix}"] <= figures[f"first_event_p99_ms{suffix}"], suffix
        assert figures[f"first_event_p50_ms{suffix}"] <= figures[f"first_output_p50_ms{suffix}"], suffix
        assert figures[f"first_output_p50_ms{suffix}"] <= figures[f"first_output_p99_ms{suffix}"], suffix
    for key in services:
        assert figures[key] > 0, key  # the runs were written to PostgreSQL and streamed through Redis
    assert figures["recovery_s"] > 0  # the run of the killed worker went on (checked by the benchmark itself)
