"""The pre-selection of skills for a request that names none (``skills.auto_select``)."""

from __future__ import annotations

from pathlib import Path

from herdsman.prompting.skill_ranking import SkillRanker, candidates_note, terms, without_file_names
from herdsman.skills import load_skills
from herdsman.skills.model import Skill
from tests.support import REPO


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
    assert terms("做幻灯片 deck") == ["幻灯", "灯片", "deck"]
    assert terms("把 a.csv 画图") == ["csv", "画图"]
    # particles, pronouns and measure words cut a run as a space would: no "我画" or "一个"
    assert terms("帮我画一个流程图") == ["画", "流程", "程图"]
    # words any request says, and the length of an answer, are no terms; "Word" the program is one
    assert terms("Explain how a lighthouse works in about 300 words") == ["light"]
    assert terms("Give me a sourdough starter") == ["sourd"]
    assert terms("a Word document") == ["word", "docum"]


def test_the_skill_that_shares_telling_words_comes_first() -> None:
    ranker = SkillRanker(SKILLS)
    assert [c.skill.name for c in ranker.candidates("Draw a flowchart of the login steps")][:1] == ["diagram"]
    assert ranker.candidates("我需要幻灯片")[0].skill.name == "slide-deck"  # through its Chinese example
    assert ranker.candidates("What is the capital of France?") == []
    # "csv" is in two skills, "sql" in one: the SQL one leads, the other may be offered too
    names = [c.skill.name for c in ranker.candidates("run SQL over sales.csv")]
    assert names[0] == "sql-over-csv"


def test_one_shared_word_of_a_description_is_not_enough_but_one_of_the_name_is() -> None:
    ranker = SkillRanker([*SKILLS, skill("pdf-report", "Produce a printable PDF report.")])
    assert [c.skill.name for c in ranker.scores("Why does my loop print twice?")] == ["pdf-report"]
    assert ranker.candidates("Why does my loop print twice?") == []  # "print" alone: no PDF wanted
    assert ranker.clear_choice("Why does my loop print twice?") is None
    assert [c.skill.name for c in ranker.candidates("I need the PDF by noon")] == ["pdf-report"]


def test_two_words_from_unrelated_sentences_of_a_skill_are_a_coincidence() -> None:
    unit = skill(
        "unit-tests",
        "Write unittest cases for a Python module. Use it when the user asks for coverage; "
        "a script lists the functions first.",
        ("Check my calculator with unittest",),
    )
    ranker = SkillRanker([*SKILLS, unit])
    question = "What's the difference between a list and a tuple in Python?"
    assert [c.skill.name for c in ranker.scores(question)][:1] == ["unit-tests"]  # "python" and "list"...
    assert ranker.candidates(question) == [] and ranker.clear_choice(question) is None  # ...in two clauses
    # two words that one sentence (or one example) of the skill holds together do fit
    assert ranker.clear_choice("a Python module that needs checking") is unit
    assert ranker.clear_choice("check the calculator") is unit
    # and so do three words wherever they stand
    assert ranker.clear_choice("list the coverage of my Python code") is unit


def test_general_questions_get_no_skill_from_the_public_skills() -> None:
    ranker = SkillRanker(load_skills(REPO / "skills").skills)
    assert len(ranker.skills) >= 20
    for question in (
        "Explain how a lighthouse works in about 300 words.",
        "How far away is the moon?",
        "Write a short story about a dragon.",
        "用大约200字介绍一下长城。",
        "给我讲一个关于猫的笑话。",
        "What's the difference between a list and a tuple in Python?",
        "Fix the bug in main.py where the loop never ends.",
        "Make test_stats.py pass",  # the words of a file's name are no request for tests
    ):
        assert ranker.candidates(question) == [], question
        assert ranker.clear_choice(question) is None, question
    # and a request for a skill's artifact still gets it, in either language
    assert ranker.clear_choice("Draw a flowchart of how a lighthouse keeper's shift goes").name == "diagram"
    assert "slide-deck" in [c.skill.name for c in ranker.candidates("把灯塔的工作原理做成幻灯片")]


def test_a_file_name_counts_by_its_kind_only() -> None:
    assert without_file_names("Make test_stats.py pass").split() == ["Make", "py", "pass"]
    assert "md" in terms(without_file_names("Turn /mnt/user-data/workspace/notes.md into slides"))
    ranker = SkillRanker(load_skills(REPO / "skills").skills)
    assert ranker.fitting("Turn notes.md into slides")[0].skill.name == "markdown-to-slides"


def test_a_path_counts_by_its_files_kind_and_its_folders_not_at_all() -> None:
    assert terms(without_file_names("List the files in /mnt/user-data/workspace/notes")) == ["list"]
    assert terms(without_file_names("see ./docs/plan.md and ~/site/")) == ["see", "md"]
    assert terms(without_file_names("SQL over CSV/Parquet")) == ["sql", "csv", "parqu"]  # not a path
    # and in a skill's own text: "notes.md" in an example is a Markdown file, not a word about notes
    ranker = SkillRanker(load_skills(REPO / "skills").skills)
    assert ranker.clear_choice("Delete temp.log and save a note to done.md") is None


def test_activation_needs_two_shared_words_besides_plain_file_kinds() -> None:
    ranker = SkillRanker(load_skills(REPO / "skills").skills)
    for request in (
        "Run the tests",  # the test writer's name, and nothing else
        "python3 test_stats.py fails. Fix the bug in stats.py (not the test).",
        "Write a Python script /mnt/user-data/workspace/primes.py that prints the primes below 10.",
        "Which item in /mnt/user-data/workspace/stock.csv has the least qty? Just the name.",
        "把 /mnt/user-data/workspace/team.txt 里的名字按字母排序，保存为 JSON 列表。",
    ):
        assert ranker.clear_choice(request) is None, request
    assert ranker.clear_choice("Write unit tests for dates.py and run them").name == "test-writer"
    assert ranker.clear_choice("Build a one-page site that shows a counter with a button.").name == "web-page-builder"


def test_a_long_request_is_ranked_by_its_beginning_and_its_end() -> None:
    """A 20 MB message is ranked (before, a run of letters with no dot took the square of its
    length in the file-name pattern, on the model call's path); what is asked around a paste counts."""
    ranker = SkillRanker(load_skills(REPO / "skills").skills)
    paste = "x" * 20_000_000
    assert ranker.clear_choice(paste) is None and ranker.candidates("a/" * 5_000_000) == []
    request = f"{'lorem ipsum ' * 10_000}\nDraw a flowchart of the steps above as an SVG diagram."
    assert ranker.clear_choice(request).name == "diagram"


def test_activate_takes_only_a_clear_lead() -> None:
    ranker = SkillRanker(SKILLS)
    assert ranker.clear_choice("Turn my notes into a PowerPoint presentation") is SKILLS[0]
    assert ranker.clear_choice("chart this csv") is None  # data-analysis and sql-over-csv both fit
    assert ranker.clear_choice("hello") is None


def test_the_note_names_each_candidate_and_its_skill_md() -> None:
    note = candidates_note(SkillRanker(SKILLS).candidates("Draw a flowchart"))
    assert "/mnt/skills/public/diagram/SKILL.md" in note and note.startswith("<skill_candidates>")
