"""A 200-step run with 20 KB tool outputs never sends the model more than the context budget."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

from langchain_core.messages.utils import count_tokens_approximately

from tests.support import REPO


def load_benchmark():
    spec = importlib.util.spec_from_file_location("context_budget", REPO / "benchmarks" / "context_budget.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


async def test_200_steps_of_20kb_outputs_stay_within_the_budget() -> None:
    bench = load_benchmark()
    budget = 16_000
    model, steps = await bench.run_herdsman(200, budget)
    lead_calls = [c for c in model.calls if not bench.is_summary_request(c.messages)]
    assert len(lead_calls) == steps + 1  # every step ran, then the answer
    sizes = [count_tokens_approximately(c.messages) for c in model.calls]
    assert max(sizes) <= budget
    assert any(bench.SUMMARY in m.text for c in lead_calls for m in c.messages)  # history was summarized
    # each 20 KB result reached the model as a preview that names the saved file
    last_result = next(m for m in reversed(lead_calls[-1].messages) if m.type == "tool")
    assert "/mnt/user-data/workspace/.tool-outputs/" in last_result.text and len(last_result.text) < 5_000


def test_benchmark_prints_one_json_line() -> None:
    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "context_budget.py"), "--steps", "5"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1
    figures = json.loads(lines[0])
    for key in ("budget_tokens", "peak_prompt_tokens", "total_prompt_tokens", "deepagents_total_prompt_tokens"):
        assert figures[key] > 0
