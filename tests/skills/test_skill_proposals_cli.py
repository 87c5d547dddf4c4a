"""``herdsman skills proposals`` (issue 34, item 4): a ``herdsman run`` that worked leaves a
proposal; the CLI lists it, shows its SKILL.md and script, accepts it edited in $EDITOR (a new
name: the script's path follows), and a later ``herdsman run /name`` activates the skill."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.skills.learning_support import CSV_CALLS, CSV_REQUEST
from tests.support import run_cli_here

DATA = ("write_file", {"path": "/mnt/user-data/uploads/sales.csv", "content": "region,amount\nnorth,2\nsouth,3\n"}, 0)


def write_config(folder: Path, responses: list[Any], record: Path | None = None) -> None:
    model: dict[str, Any] = {
        "name": "scripted",
        "use": "herdsman.models.scripted:ScriptedChatModel",
        "responses": responses,
        "on_exhausted": "repeat_last",
    }
    if record is not None:
        model["record_file"] = str(record)
    config = {
        "home": "home",
        "lead": {"model_retries": 0},
        "title": {"enabled": False},
        "sandbox": {"allow_unisolated_bash": True},
        "skills": {"learning": {"enabled": True}},
        "models": [model],
    }
    (folder / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


def test_a_run_proposes_the_cli_reviews_accepts_edited_and_a_later_run_uses_it(tmp_path: Path) -> None:
    work = [{"tool_calls": [{"name": name, "args": args}]} for name, args, _ in [DATA, *CSV_CALLS[1:]]]
    write_config(tmp_path, [*work, "Done: the total is 5."])
    ran = run_cli_here("run", CSV_REQUEST, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr

    listed = run_cli_here("skills", "proposals", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "summarize-column-json" in listed.stdout and "input, column, output" in listed.stdout
    shown = run_cli_here("skills", "proposals", "show", "summarize-column-json", cwd=tmp_path)
    assert shown.returncode == 0 and "--- scripts/summarize.py" in shown.stdout
    assert "/mnt/skills/custom/summarize-column-json/scripts/summarize.py --input" in shown.stdout
    assert "summarize-column-json" not in run_cli_here("skills", "list", cwd=tmp_path).stdout  # not before accept

    editor = "sed -i 's/^name: .*/name: csv-total/'"
    accepted = run_cli_here(
        "skills", "proposals", "accept", "summarize-column-json", "--edit", cwd=tmp_path, env={"EDITOR": editor}
    )
    assert accepted.returncode == 0, accepted.stderr
    assert "installed csv-total for everyone; use it with /csv-total" in accepted.stdout
    skill = (tmp_path / "skills" / "custom" / "csv-total" / "SKILL.md").read_text()
    assert "/mnt/skills/custom/csv-total/scripts/summarize.py --input" in skill
    assert "No skill proposals" in run_cli_here("skills", "proposals", cwd=tmp_path).stdout
    gone = run_cli_here("skills", "proposals", "decline", "summarize-column-json", cwd=tmp_path)
    assert gone.returncode == 1 and "no proposal named" in gone.stderr

    calls = tmp_path / "calls.jsonl"
    made = {
        "tool_calls": [{"name": "write_file", "args": {"path": "/mnt/user-data/outputs/total.json", "content": "{}"}}]
    }
    write_config(tmp_path, [made, "ok"], record=calls)  # the skill's output is checked: it is written
    later = run_cli_here("run", "/csv-total sum the price column of costs.csv", cwd=tmp_path)
    assert later.returncode == 0, later.stderr
    system = json.dumps(json.loads(calls.read_text().splitlines()[0])["messages"][0])
    assert 'active_skill name=\\"csv-total\\"' in system and "--column" in system
