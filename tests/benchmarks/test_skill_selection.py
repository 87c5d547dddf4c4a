"""The skill-selection benchmark in its dry mode (a scripted model that takes the first skill the
harness offers), its judge, and the ranking behind ``skills.auto_select`` on this checkout's skills
(the run with the embedded model, ``python benchmarks/skill_selection.py``, is done by hand)."""

from __future__ import annotations

import asyncio
import json
import sys

from langchain_core.messages import AIMessage, HumanMessage

from tests.support import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

import skill_selection as bench  # noqa: E402


def test_thirty_fresh_test_requests_some_for_no_skill_and_missing_skills_are_skipped() -> None:
    test = bench.REQUESTS
    assert len(test) == 30 and len({r[0] for r in test}) == 30
    assert sum(r[1] is None for r in test) == 6 and sum(bool(bench._CJK.search(r[2])) for r in test) >= 9
    earlier = bench.DEV_REQUESTS + bench.SEEN_REQUESTS
    assert not {r[0] for r in test} & {r[0] for r in earlier}
    assert not {r[2] for r in test} & {r[2] for r in earlier}
    run, skipped = bench.select(test, {"diagram", "image-tools"})
    assert {r[1] for r in run} == {"diagram", "image-tools", None} and len(run) == 8
    assert "f-docx" in skipped and len(skipped) == 22
    assert bench.select(test, {"diagram"}, only="zh-f-flow,f-logo,f-no-kitten") == (
        [r for r in test if r[0] in ("zh-f-flow", "f-no-kitten")],
        ["f-logo"],
    )


def test_the_dev_split_covers_every_public_skill_in_both_languages_and_holds_general_questions() -> None:
    dev = bench.DEV_REQUESTS
    assert len(dev) >= 40 and len({r[0] for r in dev}) == len(dev)
    assert not {r[0] for r in dev} & {r[0] for r in bench.SEEN_REQUESTS}
    assert not {r[2] for r in dev} & {r[2] for r in bench.SEEN_REQUESTS}  # no test request copied
    assert {r[1] for r in dev if r[1]} == bench.installed_skills()
    assert sum(bool(bench._CJK.search(r[2])) for r in dev) >= len(dev) / 4
    general = [r for r in dev if r[1] is None]
    assert len(general) >= 8 and any(bench._CJK.search(r[2]) for r in general)
    run, skipped = bench.select(dev, {"diagram"})
    assert skipped and {r[1] for r in run} == {"diagram", None}  # a general question is never skipped


def test_the_judge_reads_the_recorded_skill_else_the_first_skill_folder_a_tool_touched() -> None:
    read = AIMessage(
        content="",
        tool_calls=[
            {"name": "bash", "args": {"command": "ls /mnt/user-data/uploads"}, "id": "a"},
            {"name": "read_file", "args": {"path": "/mnt/skills/public/diagram/SKILL.md"}, "id": "b"},
        ],
    )
    earlier = AIMessage(
        content="",
        tool_calls=[{"name": "read_file", "args": {"path": "/mnt/skills/public/dashboard/SKILL.md"}, "id": "c"}],
    )
    messages = [HumanMessage("old"), earlier, HumanMessage("draw it"), read]
    assert bench.activated({"messages": messages}) == "diagram"  # this turn's, not an earlier one's
    assert (
        bench.activated({"messages": messages, "active_skill": {"name": "image-tools", "message_id": None}})
        == "image-tools"
    )
    assert bench.activated({"messages": [HumanMessage("hi"), AIMessage("Hello!")]}) is None
    figures = bench.tally(
        [
            {"skill": "diagram", "activated": "diagram"},
            {"skill": "diagram", "activated": None},
            {"skill": "dashboard", "activated": "diagram"},
        ]
    )
    assert (figures["right"], figures["wrong"], figures["none"], figures["right_share"]) == (1, 1, 1, 0.333)
    assert figures["per_skill"]["diagram"] == {"right": 1, "wrong": 0, "none": 1}
    assert "no_skill" not in figures
    general = bench.tally(
        [
            {"id": "a", "skill": "diagram", "activated": "diagram"},
            {"id": "b", "skill": None, "activated": None},
            {"id": "c", "skill": None, "activated": "pdf-report"},
        ]
    )
    assert (general["right"], general["right_share"]) == (1, 1.0)  # counts only requests that fit a skill
    assert general["no_skill"] == {"requests": 2, "none": 1, "activated": {"c": "pdf-report"}}


def test_the_dry_run_goes_through_the_lead_and_prints_one_json_line(capsys) -> None:
    ids = "flowchart,shrink,aloud,zh-arch"  # three English requests of installed skills, one Chinese
    bench.main(["--model", "scripted", "--split", "seen", "--only", ids, "--max-steps", "3"])
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    figures = json.loads(out[0])
    installed = bench.installed_skills()
    expected = [r for r in bench.SEEN_REQUESTS if r[0] in ids.split(",") and r[1] in installed]
    assert figures["requests"] == len(expected) and figures["model"] == "scripted"
    by_id = {r["id"]: r for r in figures["results"]}
    for rid in ("flowchart", "shrink", "aloud"):
        if rid in by_id:  # the pre-selection offers the right skill first; the model read its SKILL.md
            assert by_id[rid]["activated"] == by_id[rid]["skill"], by_id[rid]
    assert figures["right"] + figures["wrong"] + figures["none"] == figures["requests"]


def test_off_offers_nothing_and_activate_activates_the_clear_choice() -> None:
    off = asyncio.run(bench.run("scripted", "off", only="flowchart", max_steps=3, split="seen"))
    assert off["none"] == off["requests"] == 1
    on = asyncio.run(bench.run("scripted", "activate", only="flowchart", max_steps=3, split="seen"))
    assert on["right"] == 1


def test_general_questions_of_the_dev_split_activate_no_skill_through_the_lead() -> None:
    ids = "no-capital,no-tides,zh-no-sky,cover"  # three general questions, one letter
    figures = asyncio.run(bench.run("scripted", "activate", only=ids, max_steps=3, split="dev"))
    assert figures["split"] == "dev" and figures["requests"] == 4
    assert figures["no_skill"] == {"requests": 3, "none": 3, "activated": {}}
    assert figures["right"] == 1  # the letter still gets its skill
    assert figures["preselection"]["no_skill"] == {"none_offered": 3, "none_activated": 3, "of": 3}
