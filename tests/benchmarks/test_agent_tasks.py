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
    assert len(per) == 17 and min(per.values()) >= 4
    for split in ("dev", "test"):  # both splits cover every category
        assert {t["category"] for t in tasks if t["split"] == split} == set(per), split
    for t in tasks:
        for item in t["check"] if isinstance(t["check"], list) else [t["check"]]:
            assert item["type"] in checks.CHECKS, t["id"]
        assert all(p.startswith(("workspace/", "uploads/")) for p in t["files"]), t["id"]
        if t.get("upload"):
            assert "/mnt/user-data/uploads" not in t["prompt"] and any(p.startswith("uploads/") for p in t["files"])


def test_no_task_passes_on_untouched_files(tmp_path: Path) -> None:
    """Every check fails on the set-up files as placed, before the agent has done anything (with an
    empty answer)."""
    for t in bench.load_tasks():
        root = tmp_path / t["id"]
        bench.place_task(root, t)
        assert checks.check(t["check"], root, "") is not None, t["id"]


def test_set_up_files_get_their_modes_and_times(tmp_path: Path) -> None:
    [t] = bench.load_tasks("test_fsq_newest_file")
    bench.place_task(tmp_path, t)
    newest = max(t["mtimes"], key=t["mtimes"].get)
    assert (
        max((tmp_path / "workspace/reports").iterdir(), key=lambda p: p.stat().st_mtime).name
        == newest.rsplit("/", 1)[1]
    )
    [t] = bench.load_tasks("test_perm_find_executables")
    bench.place_task(tmp_path, t)
    assert {p.name for p in (tmp_path / "workspace/scripts").iterdir() if p.stat().st_mode & 0o100} == {
        "backup.sh",
        "report.py",
        "run",
        "sync.sh",
    }


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_checks_pass_right_and_fail_wrong(tmp_path: Path) -> None:
    write(tmp_path, "outputs/a.json", json.dumps({"north": 10.0, "south": "5"}))
    assert (
        checks.check({"type": "json_file", "path": "outputs/a.json", "equals": {"north": 10, "south": 5}}, tmp_path, "")
        is None
    )
    assert checks.check(
        {"type": "json_file", "path": "outputs/a.json", "equals": {"north": 11, "south": 5}}, tmp_path, ""
    )
    write(tmp_path, "outputs/l.txt", "a\n\nb\n")
    assert checks.check({"type": "file_lines", "path": "outputs/l.txt", "lines": ["a", "b"]}, tmp_path, "") is None
    assert checks.check({"type": "file_lines", "path": "outputs/l.txt", "lines": ["a"]}, tmp_path, "")
    assert (
        checks.check({"type": "answer_number", "value": 7990.93, "tolerance": 0.05}, tmp_path, "It is 7,990.93.")
        is None
    )
    assert checks.check({"type": "answer_number", "value": 7990.93}, tmp_path, "It is 123456.")
    write(tmp_path, "workspace/p.py", "print(2 + 3)\n")
    assert (
        checks.check({"type": "run", "command": "python3 p.py", "cwd": "workspace", "stdout": "5"}, tmp_path, "")
        is None
    )
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
    assert (
        checks.check({"type": "html_page", "path": "outputs/site/index.html", "title_contains": "Crumbs"}, tmp_path, "")
        is None
    )
    assert checks.check(
        {"type": "html_page", "path": "outputs/site/index.html", "title_contains": "Rolls"}, tmp_path, ""
    )
    write(tmp_path, "outputs/skills/x/SKILL.md", "---\nname: x\ndescription: does x\n---\nbody\n")
    assert checks.check({"type": "skill_md", "path": "outputs/skills/x/SKILL.md", "name": "x"}, tmp_path, "") is None
    assert checks.check({"type": "skill_md", "path": "outputs/skills/x/SKILL.md", "name": "y"}, tmp_path, "")


def test_answer_value_check(tmp_path: Path) -> None:
    """A value is found as a whole token, in an English or a Chinese sentence; ``just`` wants it alone."""

    def ok(spec: dict, answer: str) -> bool:
        return checks.check({"type": "answer_value", **spec}, tmp_path, answer) is None

    assert ok({"value": 213}, "The file has 213 lines.") and ok({"value": 213}, "文件共有213行。")
    assert not ok({"value": 213}, "The file is 1917 bytes.")
    assert ok({"value": 40504}, "40,504 bytes") and not ok({"value": 40504}, "")
    assert ok({"value": "services/api/secrets.env"}, "有，在 services/api/secrets.env。")
    assert ok({"value": "services/api/secrets.env"}, "It is /mnt/user-data/workspace/proj/services/api/secrets.env")
    assert not ok({"value": "services/api/secrets.env"}, "Only docs/services/api/secrets.env.example exists.")
    assert not ok({"value": "b.log"}, "It is b.log.1") and not ok({"value": "b.log"}, "It is ab.log")
    assert ok({"value": "j07"}, "Job J07 warns most.") and not ok({"value": "j07"}, "Job j070.")
    assert ok({"value": "q2-summary.md", "just": True}, "`q2-summary.md`") and ok(
        {"value": "Priya Nair", "just": True}, "**Priya Nair**."
    )
    assert not ok({"value": "q2-summary.md", "just": True}, "The last one changed is q2-summary.md.")
    assert ok({"value": 418.0, "just": True, "tolerance": 0.01}, "418") and ok({"value": 3, "just": True}, "3。")
    assert not ok({"value": 3, "just": True}, "共有 3 个") and not ok({"value": 3, "just": True}, "4")
    why = checks.check({"type": "answer_value", "value": "2025-01-09", "just": True}, tmp_path, "最早是 2025-01-09")
    assert why and "2025-01-09" in why


def test_permission_archive_and_text_checks(tmp_path: Path) -> None:
    import tarfile

    write(tmp_path, "workspace/a.sh", "echo a\n")
    write(tmp_path, "workspace/k.key", "secret\n")
    (tmp_path / "workspace/a.sh").chmod(0o644)
    (tmp_path / "workspace/k.key").chmod(0o644)
    assert "not executable" in checks.check({"type": "executable", "paths": ["workspace/a.sh"]}, tmp_path, "")
    assert "expected mode 600" in checks.check(
        {"type": "mode", "paths": ["workspace/k.key"], "mode": "600"}, tmp_path, ""
    )
    (tmp_path / "workspace/a.sh").chmod(0o755)
    (tmp_path / "workspace/k.key").chmod(0o600)
    assert checks.check({"type": "executable", "paths": ["workspace/a.sh"]}, tmp_path, "") is None
    assert checks.check({"type": "mode", "paths": ["workspace/k.key"], "mode": "600"}, tmp_path, "") is None
    assert "missing" in checks.check({"type": "executable", "paths": ["workspace/b.sh"]}, tmp_path, "")
    with tarfile.open(tmp_path / "outputs.tar.gz", "w:gz") as tf:
        tf.add(tmp_path / "workspace", arcname="site")
    spec = {"type": "tar_names", "path": "outputs.tar.gz", "names": ["a.sh", "k.key"]}
    assert checks.check(spec, tmp_path, "") is None
    assert checks.check({**spec, "names": ["a.sh"]}, tmp_path, "")
    assert "not a tar archive" in checks.check({**spec, "path": "workspace/a.sh"}, tmp_path, "")
    spec = {"type": "text_absent", "path": "workspace", "text": "secret"}
    assert "workspace/k.key" in checks.check(spec, tmp_path, "")
    assert checks.check({**spec, "text": "calc_total"}, tmp_path, "") is None
    assert "does not exist" in checks.check({**spec, "path": "nowhere"}, tmp_path, "")


def picks_none(responses: list) -> object:
    """A scripted model for the benchmark's default config (the small profile): the harness's own
    pick of a skill (``skills.ask_model``, when candidates fit and none leads) is answered "none",
    every other call by ``responses`` in turn."""
    from herdsman.models.scripted import ScriptedChatModel
    from herdsman.turns.skill_pick import NO_SKILL, PICK_TOOL, is_pick_call

    replies = iter(responses)

    def respond(messages: list) -> object:
        if is_pick_call(messages):
            return {"tool_calls": [{"name": PICK_TOOL, "args": {"skill": NO_SKILL}, "id": "pick"}]}
        return next(replies)

    return ScriptedChatModel(respond=respond)


def test_herdsman_runner_with_a_scripted_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner places the files, runs the agent, reads the answer and judges it."""

    [task] = bench.load_tasks("data_csv_total")
    expected = task["check"]["value"]
    command = (
        "python3 -c \"import csv; print(round(sum(float(r['amount']) for r in csv.DictReader(open('sales.csv'))), 2))\""
    )
    model = picks_none(
        [
            {"tool_calls": [{"name": "bash", "args": {"command": command}, "id": "c1"}]},
            f"The total is {expected}.",
        ]
    )

    class Fixed(bench.Models):
        def get(self, config):
            return model

    record = asyncio.run(bench.run_herdsman(task, "full", Fixed(), tmp_path, 120))
    assert record["solved"], record
    assert record["tool_calls"] == 1 and record["answer"] == str(expected)  # the small profile's value answer
    assert record["subagents"] == {}  # no sub-agent ran: no transcripts
    wrong = picks_none(["The total is 123456."] * 3)
    Fixed.get = lambda self, config: wrong
    record = asyncio.run(bench.run_herdsman(task, "full", Fixed(), tmp_path, 120))
    assert not record["solved"] and "123456" in record["answer"]
    summary = bench.summarize([record], [task])
    assert summary["herdsman_solved"] == 0 and summary["total"] == 1


@pytest.mark.local_model
@pytest.mark.timeout(1200)  # two tasks of up to 240 s each, waiting for the machine-wide model lock first
def test_smoke_two_tasks_with_the_embedded_model(tmp_path: Path) -> None:
    """Two short tasks, for real: the benchmark runs end to end and prints its one line (the
    benchmark itself, not the suite, measures how many the model solves)."""
    import subprocess

    out = subprocess.run(
        [
            sys.executable,
            str(BENCH / "run.py"),
            "--only",
            "data_csv_total,files_append_line",
            "--agents",
            "herdsman",
            "--results",
            str(tmp_path / "results"),
            "--max-seconds",
            "240",
        ],
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=REPO,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    [line] = out.stdout.strip().splitlines()
    figures = json.loads(line)
    assert figures["total"] == 2 and figures["herdsman_runs"] == 2
    records = [json.loads(r) for r in (tmp_path / "results" / "results.jsonl").read_text().splitlines()]
    assert {r["task"] for r in records} == {"data_csv_total", "files_append_line"}
    assert all(r["error"] is None for r in records), records


def test_a_transcript_keeps_what_marks_the_harnesss_own_messages() -> None:
    """What the harness made or changed is counted from the results without reading the text."""
    from langchain_core.messages import AIMessage, HumanMessage

    from herdsman.middleware.answer_translation import ORIGINAL_KEY, TRANSLATION_KEY
    from herdsman.middleware.completion.shown_code import RAN_SHOWN_CODE

    translated = AIMessage("它有 3 行。", additional_kwargs={TRANSLATION_KEY: "zh", ORIGINAL_KEY: "It has 3 lines."})
    call = {"name": "write_file", "args": {"path": "a.txt", "content": "7\n"}, "id": "1"}
    offered = AIMessage("", tool_calls=[call], additional_kwargs={RAN_SHOWN_CODE: "answer.offer"})
    items = bench.transcript([HumanMessage("有几行？"), offered, translated, AIMessage("plain")])
    assert [item.get("marks") for item in items] == [
        None,
        {RAN_SHOWN_CODE: "answer.offer"},
        {TRANSLATION_KEY: "zh"},  # the model's own words stay out
        None,
    ]
