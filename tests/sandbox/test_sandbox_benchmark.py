"""benchmarks/sandbox_latency.py runs and prints one JSON line with every provider's figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from herdsman.sandbox.bwrap import bwrap_status
from tests.sandbox.podman_engine import EngineUnavailable, shared_engine

REPO = Path(__file__).resolve().parents[2]


def test_sandbox_latency_prints_one_json_line_per_available_provider() -> None:
    argv = [sys.executable, str(REPO / "benchmarks" / "sandbox_latency.py"), "--runs", "5", "--acquires", "2"]
    providers = ["local"] + (["local_bwrap"] if bwrap_status().available else [])
    try:
        engine = shared_engine()
        argv += ["--docker-url", engine.base_url, "--docker-image", engine.image]
        providers.append("docker")
    except EngineUnavailable:
        pass
    out = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1
    figures = json.loads(lines[0])
    for provider in providers:
        for figure in ("exec_p50_ms", "exec_p99_ms", "acquire_p50_ms"):
            assert figures[f"{provider}_{figure}"] > 0, (provider, figure)
        assert figures[f"{provider}_exec_p99_ms"] >= figures[f"{provider}_exec_p50_ms"]
