"""The pre-selection of skills for a request that names none (``skills.auto_select``)."""

from __future__ import annotations

from pathlib import Path

from herdsman.prompting.skill_ranking import SkillRanker, candidates_note, terms
from herdsman.skills.model import Skill


def skill(name: str, description: str, examples: tuple[str, ...] = ()) -> Skill:
    return Skill(
        name=name,
        description=description,
        body="# Steps",
        source="public",
        directory=Path("/nowhere") / name,
        examples=examples,
    )


SKILLS = [
    skill("slide-deck", "Make a PowerPoint presentation (.pptx) with slides.", ("做一份八页的幻灯片",)),
    skill("diagram", "Draw a flowchart or an architecture diagram as SVG."),
    skill("data-analysis", "Analyze a CSV file and draw charts."),
    skill("sql-over-csv", "Query CSV files with SQL."),
]


def test_terms_are_stems_of_words_and_pairs_of_chinese_characters() -> None:
    assert terms("Slides for the flowcharts!") == ["slide", "flowc"]
    assert terms("做幻灯片 deck") == ["做幻", "幻灯", "灯片", "deck"]
    assert terms("把 a.csv 画图") == ["把", "csv", "画图"]


def test_the_skill_that_shares_telling_words_comes_first() -> None:
    ranker = SkillRanker(SKILLS)
    assert [c.skill.name for c in ranker.candidates("Draw a flowchart of the login steps")][:1] == ["diagram"]
    assert ranker.candidates("我需要幻灯片")[0].skill.name == "slide-deck"  # through its Chinese example
    assert ranker.candidates("What is the capital of France?") == []
    # "csv" is in two skills, "sql" in one: the SQL one leads, the other may be offered too
    names = [c.skill.name for c in ranker.candidates("run SQL over sales.csv")]
    assert names[0] == "sql-over-csv"


def test_activate_takes_only_a_clear_lead() -> None:
    ranker = SkillRanker(SKILLS)
    assert ranker.clear_choice("Turn my notes into a PowerPoint presentation") is SKILLS[0]
    assert ranker.clear_choice("chart this csv") is None  # data-analysis and sql-over-csv both fit
    assert ranker.clear_choice("hello") is None


def test_the_note_names_each_candidate_and_its_skill_md() -> None:
    note = candidates_note(SkillRanker(SKILLS).candidates("Draw a flowchart"))
    assert "/mnt/skills/public/diagram/SKILL.md" in note and note.startswith("<skill_candidates>")
