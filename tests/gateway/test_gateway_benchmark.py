"""benchmarks/gateway_load.py still runs and prints one JSON line with its keys, profile_run.py its tables (figures not asserted)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support import REPO


def test_gateway_load_prints_one_json_line() -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "gateway_load.py"),
            "--runs",
            "4",
            "--steps",
            "2",
            "--clients",
            "1",
            "--rounds",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1
    figures = json.loads(lines[0])
    assert set(figures) == {
        "runs",
        "client",
        "errors",
        "runs_per_s",
        "first_event_p50_ms",
        "first_event_p99_ms",
        "rounds",
    }
    assert figures["runs"] == 4 and figures["errors"] == 0 and figures["client"] == "raw" and figures["rounds"] == 2
    assert 0 < figures["first_event_p50_ms"] <= figures["first_event_p99_ms"]


def test_the_lean_stream_reader_splits_sse_events_across_reads() -> None:
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from gateway_load import sse_events
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    buffer = bytearray(b"event: metadata\ndata: {}\nid: 1\n\n: heartbeat\n\nevent: val")
    assert sse_events(buffer) == ["metadata"]  # the heartbeat comment is no event
    buffer += b"ues\ndata: {}\n\nevent: end\ndata: null\n\n"
    assert sse_events(buffer) == ["values", "end"] and not buffer
    buffer += (
        b"event: metadata\r\ndata: {}\r\n\r\nevent: values\r\ndata: {}\r\n\r"  # CRLF, as LangGraph's server writes
    )
    assert sse_events(buffer) == ["metadata"]
    buffer += b"\n"
    assert sse_events(buffer) == ["values"] and not buffer


def test_profile_run_prints_the_tables_of_one_run() -> None:
    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "profile_run.py"), "--warmup", "1", "--top", "15"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for title in ("top 15 by cumulative", "top 15 by tottime", "top 15 of Herdsman's own functions"):
        assert f"=== {title}" in text
    ours = text.split("Herdsman's own functions", 1)[1]
    assert (
        "herdsman/runtime/runs/run_executor.py" in ours
    )  # the run's own path was profiled, files named from their import root
    assert str(REPO) not in text  # no directory of this machine in what is meant for a note
