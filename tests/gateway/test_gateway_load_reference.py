"""``gateway_load.py --reference`` runs LangGraph's own server beside ours on the same work (figures not asserted).

The reference server lives in a virtual environment the benchmark creates on first use (about a
minute with pip and a package index; instant afterwards). Where pip cannot install, the
comparison test skips saying so, except under CI, which has a package index: there it fails.
Once the venv exists the comparison with tiny numbers takes about 30 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import REPO

BENCHMARKS = REPO / "benchmarks"


@pytest.fixture
def benchmarks_on_path() -> Iterator[None]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield
    finally:
        sys.path.remove(str(BENCHMARKS))


@pytest.fixture
def reference_venv(benchmarks_on_path: None) -> Path:
    from langgraph_reference import server as reference_server

    try:
        return reference_server.ensure_venv()
    except (subprocess.CalledProcessError, OSError) as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(
            f"the reference server's virtual environment could not be created (pip needs a package index): {exc}"
        )


@pytest.mark.timeout(400)
def test_reference_mode_prints_both_sides_and_their_ratios(reference_venv: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / "gateway_load.py"),
            "--reference",
            "--runs",
            "4",
            "--rounds",
            "2",
            "--clients",
            "1",
            "--rss-after",
            "12",
            "--baseline",
            str(REPO),
        ],  # this checkout again, as a baseline
        capture_output=True,
        text=True,
        timeout=330,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1, out.stdout
    figures = json.loads(lines[0])
    assert figures["errors"] == 0 and figures["runs"] == 4 and figures["rounds"] == 2
    assert figures["reference"]["server"].startswith("langgraph-api ")
    # every server did the same work: one ls call, its result, then the answer
    assert figures["same_work"] is True
    ours = ("default", "memory", "baseline")
    assert figures["transcripts"] == {name: ["human", "ai:ls", "tool:ls", "ai"] for name in (*ours, "reference")}
    sides = {**figures["ours"], "reference": figures["reference"]}
    assert set(figures["ours"]) == set(ours)
    for name, side in sides.items():
        assert side["errors"] == 0, name
        assert side["cpu_ms_per_run"] > 0 and len(side["cpu_ms_per_run_rounds"]) == 2, name
        assert 0 < side["first_event_p50_ms"] <= side["first_event_p99_ms"], name
        assert side["runs_per_s"] > 0 and side["rss_mb"] > 0, name
        assert side["rss_after_runs"] >= 12, name  # untimed bursts made up the 8 timed runs to 12
    for name in ours:
        ratios, side, ref = figures["ratios"][name], figures["ours"][name], figures["reference"]
        for key in ("cpu_ms_per_run", "runs_per_s", "first_event_p50_ms", "first_event_p99_ms", "rss_mb"):
            assert ratios[key] == pytest.approx(side[key] / ref[key], rel=0.01), (name, key)


def test_tree_cpu_counts_a_child_that_already_exited(benchmarks_on_path: None) -> None:
    from langgraph_reference.process_cost import tree_cpu_seconds, tree_rss_bytes

    # the shell runs a CPU-bound child, reaps it, then waits for its stdin to close
    shell = subprocess.Popen(
        ["sh", "-c", f"{sys.executable} -c 'sum(range(3 * 10**7))'; echo done; read line"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert shell.stdout.readline().strip() == "done"
        assert tree_cpu_seconds(shell.pid) > 0.1  # the child's CPU, though it is gone
        assert tree_rss_bytes(shell.pid) > 0
    finally:
        shell.communicate("\n", timeout=10)
