"""The agent task benchmark's data and checks, without the model: the task file is what its
generator writes (expected values computed from the set-up files), every check passes on a right
result and fails on a wrong one, and the Herdsman runner works end to end with a scripted model."""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.support import REPO

BENCH = REPO / "benchmarks" / "agent_tasks"
sys.path.insert(0, str(BENCH))

import checks  # noqa: E402
import make_tasks  # noqa: E402
import run as bench  # noqa: E402


def test_task_file_is_what_the_generator_writes() -> None:
    assert (BENCH / "tasks.yaml").read_text() == make_tasks.render()
    tasks = bench.load_tasks()
    assert len(tasks) >= 40 and len({t["id"] for t in tasks}) == len(tasks)
    per = Counter(t["category"] for t in tasks)
    assert len(per) == 10 and min(per.values()) >= 4
    for t in tasks:
        for item in t["check"] if isinstance(t["check"], list) else [t["check"]]:
            assert item["type"] in checks.CHECKS, t["id"]
        assert all(p.startswith(("workspace/", "uploads/")) for p in t["files"]), t["id"]
        if t.get("upload"):
            assert "/mnt/user-data/uploads" not in t["prompt"] and any(p.startswith("uploads/") for p in t["files"])


def test_no_task_passes_on_untouched_files() -> None:
    """Every check fails before the agent has done anything (with an empty answer)."""
    for t in bench.load_tasks():
        root = Path(f"/tmp/never-{t['id']}")
        assert checks.check(t["check"], root, "") is not None, t["id"]


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_checks_pass_right_and_fail_wrong(tmp_path: Path) -> None:
    write(tmp_path, "outputs/a.json", json.dumps({"north": 10.0, "south": "5"}))
    assert checks.check({"type": "json_file", "path": "outputs/a.json", "equals": {"north": 10, "south": 5}}, tmp_path, "") is None
    assert checks.check({"type": "json_file", "path": "outputs/a.json", "equals": {"north": 11, "south": 5}}, tmp_path, "")
    write(tmp_path, "outputs/l.txt", "a\n\nb\n")
    assert checks.check({"type": "file_lines", "path": "outputs/l.txt", "lines": ["a", "b"]}, tmp_path, "") is None
    assert checks.check({"type": "file_lines", "path": "outputs/l.txt", "lines": ["a"]}, tmp_path, "")
    assert checks.check({"type": "answer_number", "value": 7990.93, "tolerance": 0.05}, tmp_path, "It is 7,990.93.") is None
    assert checks.check({"type": "answer_number", "value": 7990.93}, tmp_path, "It is 123456.")
    write(tmp_path, "workspace/p.py", "print(2 + 3)\n")
    assert checks.check({"type": "run", "command": "python3 p.py", "cwd": "workspace", "stdout": "5"}, tmp_path, "") is None
    assert checks.check({"type": "run", "command": "python3 p.py", "cwd": "workspace", "stdout": "6"}, tmp_path, "")
    write(tmp_path, "outputs/s.md", "Total: 12.5\nRows: 3\n")
    spec = {"type": "labelled_numbers", "path": "outputs/s.md", "values": {"Total": 12.5, "Rows": 3}}
    assert checks.check(spec, tmp_path, "") is None
    assert checks.check({**spec, "values": {"Total": 12.5, "Rows": 4}}, tmp_path, "")
    write(tmp_path, "outputs/c.csv", "n,square\n1,1\n2,4\n")
    spec = {"type": "csv_rows", "path": "outputs/c.csv", "header": ["n", "square"], "rows": [["1", "1"], ["2", "4"]]}
    assert checks.check(spec, tmp_path, "") is None
    assert checks.check({**spec, "rows": [["1", "1"]]}, tmp_path, "")
    write(tmp_path, "outputs/site/index.html", "<html><head><title>Crumbs bakery</title></head><body>hi</body></html>")
    assert checks.check({"type": "html_page", "path": "outputs/site/index.html", "title_contains": "Crumbs"}, tmp_path, "") is None
    assert checks.check({"type": "html_page", "path": "outputs/site/index.html", "title_contains": "Rolls"}, tmp_path, "")
    write(tmp_path, "outputs/skills/x/SKILL.md", "---\nname: x\ndescription: does x\n---\nbody\n")
    assert checks.check({"type": "skill_md", "path": "outputs/skills/x/SKILL.md", "name": "x"}, tmp_path, "") is None
    assert checks.check({"type": "skill_md", "path": "outputs/skills/x/SKILL.md", "name": "y"}, tmp_path, "")


def test_herdsman_runner_with_a_scripted_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner places the files, runs the agent, reads the answer and judges it."""
    from herdsman.models.scripted import ScriptedChatModel

    [task] = bench.load_tasks("data_csv_total")
    expected = task["check"]["value"]
    command = "python3 -c \"import csv; print(round(sum(float(r['amount']) for r in csv.DictReader(open('sales.csv'))), 2))\""
    model = ScriptedChatModel(responses=[
        {"tool_calls": [{"name": "bash", "args": {"command": command}, "id": "c1"}]},
        f"The total is {expected}.",
    ])

    class Fixed(bench.Models):
        def get(self, config):
            return model

    record = asyncio.run(bench.run_herdsman(task, "full", Fixed(), tmp_path, 120))
    assert record["solved"], record
    assert record["tool_calls"] == 1 and record["answer"] == f"The total is {expected}."
    assert record["subagents"] == {}  # no sub-agent ran: no transcripts
    wrong = ScriptedChatModel(responses=["The total is 123456."] * 3)
    Fixed.get = lambda self, config: wrong
    record = asyncio.run(bench.run_herdsman(task, "full", Fixed(), tmp_path, 120))
    assert not record["solved"] and "123456" in record["answer"]
    summary = bench.summarize([record], [task])
    assert summary["herdsman_solved"] == 0 and summary["total"] == 1


@pytest.mark.local_model
@pytest.mark.timeout(1500)  # three tasks of up to 240 s each, waiting for the machine-wide model lock first
def test_smoke_three_tasks_with_the_embedded_model(tmp_path: Path) -> None:
    """A handful of tasks, for real: the benchmark runs end to end and prints its one line."""
    import subprocess

    out = subprocess.run(
        [sys.executable, str(BENCH / "run.py"), "--only", "data_csv_total,files_append_line,long_numbers",
         "--agents", "herdsman", "--results", str(tmp_path / "results"), "--max-seconds", "240"],
        capture_output=True, text=True, timeout=1500, cwd=REPO, check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    [line] = out.stdout.strip().splitlines()
    figures = json.loads(line)
    assert figures["total"] == 3 and figures["herdsman_runs"] == 3
    records = [json.loads(r) for r in (tmp_path / "results" / "results.jsonl").read_text().splitlines()]
    assert {r["task"] for r in records} == {"data_csv_total", "files_append_line", "long_numbers"}
    assert all(r["error"] is None for r in records), records
