"""The skill-learning benchmark in its dry mode (issue 34, item 4): every family's task 1 is learned
as a skill, accepted, and tasks 2-4 solved by that skill with their own values, in the real sandbox
(the run with the embedded model, ``python benchmarks/skill_learning.py``, is done by hand)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

import skill_learning as bench  # noqa: E402


def test_five_families_of_four_tasks_that_differ_in_their_values() -> None:
    assert len(bench.FAMILIES) == 5 and all(len(f.tasks) == 4 for f in bench.FAMILIES)
    for family in bench.FAMILIES:
        assert len({t.request for t in family.tasks}) == 4
        assert len({tuple(t.values.values()) for t in family.tasks}) == 4


def test_the_dry_run_learns_each_family_and_solves_its_later_tasks_with_the_skill() -> None:
    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "skill_learning.py"), "--model", "scripted"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO / "src")},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    [line] = out.stdout.strip().splitlines()
    figures = json.loads(line)
    assert figures["benchmark"] == "skill_learning" and figures["invoke"] == "slash"
    for mode in ("off", "on"):
        assert figures[mode]["tasks"] == 15 and figures[mode]["median_seconds"] > 0
        assert set(figures[mode]["families"]) == {f.name for f in bench.FAMILIES}
    assert figures["off"]["solved_rate"] == 1.0  # the scripted solver writes a right script each time
    assert all(figures["learned"][f.name] for f in bench.FAMILIES), figures["learned"]
    later_on = [t for t in figures["tasks"] if t["mode"] == "on" and t["task"] > 1]
    assert all(t["solved"] for t in later_on), later_on
    assert [t["skill"] for t in later_on] == [figures["learned"][t["family"]]["name"] for t in later_on]
    assert not any(t["skill"] for t in figures["tasks"] if t["mode"] == "off")
