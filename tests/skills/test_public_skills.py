"""The public skills, each driven by the scripted model through ``/name``, scripts run in the sandbox.

Each test activates a shipped skill, follows its steps with scripted tool calls, and checks what
a user would: the files in outputs, what the skill's scripts printed, and that the skill's
instructions reached the model.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, ToolMessage

from herdsman.client import HerdsmanClient, ToolResult
from herdsman.models.scripted import ScriptedChatModel
from herdsman.sandbox.bwrap import bwrap_status
from herdsman.skills import load_skills, parse_skill_file
from tests.support import REPO, make_config

pytestmark = pytest.mark.bwrap
SKILLS = REPO / "skills"
WS, OUT, UP = "/mnt/user-data/workspace", "/mnt/user-data/outputs", "/mnt/user-data/uploads"


@pytest.fixture(autouse=True)
def _needs_bwrap() -> None:
    if not bwrap_status().available:
        pytest.skip(f"bubblewrap unusable here: {bwrap_status().reason}")


def call(name: str, **args: Any) -> dict:
    return {"tool_calls": [{"name": name, "args": args}]}


def bash(command: str) -> dict:
    return call("bash", command=command)


def user_data(home: Path, thread: str) -> Path:
    return home / "threads" / thread / "user-data"


async def run(home: Path, thread: str, message: str, model: ScriptedChatModel) -> list[ToolResult]:
    config = make_config(home, skills={"path": str(SKILLS)}, sandbox={"isolation": "bwrap"})
    async with HerdsmanClient(config, model=model) as client:
        events = [e async for e in client.stream(message, thread_id=thread)]
    return [e for e in events if isinstance(e, ToolResult)]


def test_every_public_skill_is_valid_and_listed() -> None:
    catalog = load_skills(SKILLS, environ={})
    assert catalog.problems == []
    assert {
        "sql-over-csv",
        "data-cleaning",
        "image-tools",
        "diagram",
        "text-to-speech",
        "dashboard",
        "meeting-notes",
    } <= set(catalog.skills)
    assert {
        "data-analysis",
        "report-writing",
        "web-page-builder",
        "skill-creator",
        "deep-research",
        "slide-deck",
        "word-document",
        "spreadsheet",
        "pdf-report",
        "markdown-to-slides",
        "letter-or-email",
    } <= set(catalog.skills)
    assert {"research-brief", "code-review", "test-writer", "readme-writer", "translate-keep-format"} <= set(
        catalog.skills
    )


async def test_data_analysis_profiles_csv_and_draws_png(home: Path) -> None:
    uploads = user_data(home, "t-data") / "uploads"
    uploads.mkdir(parents=True)
    (uploads / "sales.csv").write_text(
        "region,product,revenue\nNorth,A,100\nSouth,A,250\nNorth,B,50\nEast,B,\nSouth,C,75\n"
    )
    scripts = "/mnt/skills/public/data-analysis/scripts"
    model = ScriptedChatModel(
        responses=[
            bash(f"python3 {scripts}/profile.py {UP}/sales.csv"),
            bash(
                f"python3 {scripts}/bar_chart.py {UP}/sales.csv --x region --y revenue --out {OUT}/revenue.png --title Revenue"
            ),
            call("write_file", path=f"{OUT}/summary.md", content="South leads with 325 EUR of revenue."),
            "South leads (325), then North (150). Chart: outputs/revenue.png",
        ]
    )
    results = await run(home, "t-data", "/data-analysis which region sells most?", model)
    assert not any(r.is_error for r in results), results
    assert "5 rows, 3 columns" in results[0].content
    assert "revenue: number, 1 empty" in results[0].content and "sum 475" in results[0].content
    assert "South: 325" in results[1].content and "North: 150" in results[1].content
    png = (user_data(home, "t-data") / "outputs" / "revenue.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and png[12:16] == b"IHDR"
    assert struct.unpack(">II", png[16:24]) == (640, 400)
    system = model.calls[0].messages[0].text
    assert '<active_skill name="data-analysis"' in system and "Profile it first" in system
    assert "task" not in model.calls[0].tools  # allowed-tools is enforced


def pdf_is_consistent(pdf: bytes) -> bool:
    """The xref table points at each object, and the file ends with %%EOF."""
    start = int(re.search(rb"startxref\n(\d+)", pdf).group(1))
    table = pdf[start:].split(b"\n")
    count = int(table[1].split()[1])
    offsets = [int(line[:10]) for line in table[3 : 3 + count - 1]]
    return pdf.rstrip().endswith(b"%%EOF") and all(
        pdf[o:].startswith(b"%d 0 obj" % (n + 1)) for n, o in enumerate(offsets)
    )


async def test_report_writing_renders_html_and_pdf(home: Path) -> None:
    report = "# Q3 sales\n\nRevenue grew **12%** to 475 EUR.\n\n## Regions\n\n| Region | Revenue |\n|---|---|\n| South | 325 |\n\n- South leads\n- East has no data\n"
    model = ScriptedChatModel(
        responses=[
            call("write_file", path=f"{OUT}/report.md", content=report),
            bash(f"python3 /mnt/skills/public/report-writing/scripts/render.py {OUT}/report.md"),
            "The report is in outputs/report.md, .html and .pdf.",
        ]
    )
    results = await run(home, "t-report", "/report-writing write up the Q3 sales", model)
    assert not any(r.is_error for r in results), results
    outputs = user_data(home, "t-report") / "outputs"
    html = (outputs / "report.html").read_text()
    assert "<title>Q3 sales</title>" in html and "<strong>12%</strong>" in html
    assert "<th>Region</th>" in html and "<td>325</td>" in html and "<li>South leads</li>" in html
    pdf = (outputs / "report.pdf").read_bytes()
    assert pdf.startswith(b"%PDF-1.4") and pdf_is_consistent(pdf)
    assert b"(Q3 sales) Tj" in pdf


async def test_web_page_builder_finds_and_fixes_a_broken_link(home: Path) -> None:
    site = f"{OUT}/site"
    index = (
        '<!doctype html><html><head><title>Acme</title><meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="stylesheet" href="assets/style.css"></head><body><main><h1>Acme</h1>'
        '<a href="about.html">About</a><img src="assets/logo.svg" alt="Acme logo"></main></body></html>'
    )
    about = index.replace("<h1>Acme</h1>", "<h1>About Acme</h1>").replace('href="about.html"', 'href="index.html"')
    check = f"python3 /mnt/skills/public/web-page-builder/scripts/check_site.py {site}"
    model = ScriptedChatModel(
        responses=[
            call("write_file", path=f"{site}/index.html", content=index),
            call("write_file", path=f"{site}/assets/style.css", content="body{font-family:sans-serif}"),
            call("write_file", path=f"{site}/assets/logo.svg", content='<svg xmlns="http://www.w3.org/2000/svg"/>'),
            bash(check),
            call("write_file", path=f"{site}/about.html", content=about),
            bash(check),
            "The site is in outputs/site (index.html, about.html).",
        ]
    )
    results = await run(home, "t-site", "/web-page-builder a two-page site for Acme", model)
    first, second = results[3], results[5]
    assert "about.html, which does not exist" in first.content and first.content.strip().endswith("[exit code 1]")
    assert second.content.strip() == "OK" and not second.is_error
    assert (user_data(home, "t-site") / "outputs" / "site" / "about.html").is_file()


async def test_skill_creator_writes_a_valid_skill(home: Path) -> None:
    folder = f"{OUT}/skills/csv-cleaner"
    draft = "---\nname: csv-clean\ndescription: Clean CSV files - trim cells and drop empty rows.\nlicense: MIT\n---\n\n# CSV cleaner\n\n## Steps\n1. Read the CSV.\n"
    validate = f"python3 /mnt/skills/public/skill-creator/scripts/validate_skill.py {folder}"
    model = ScriptedChatModel(
        responses=[
            call("write_file", path=f"{folder}/SKILL.md", content=draft),
            bash(validate),
            call("str_replace", path=f"{folder}/SKILL.md", old="name: csv-clean\n", new="name: csv-cleaner\n"),
            bash(validate),
            "Created csv-cleaner; copy outputs/skills/csv-cleaner to skills/custom/ to install it.",
        ]
    )
    results = await run(home, "t-creator", "/skill-creator make a skill that cleans CSV files", model)
    assert "field 'name': 'csv-clean' differs from the folder name 'csv-cleaner'" in results[1].content
    assert results[3].content.strip() == "OK"
    # Herdsman's own validator agrees with the sandbox script
    created = user_data(home, "t-creator") / "outputs" / "skills" / "csv-cleaner"
    skill = parse_skill_file(created, "custom")
    assert skill.name == "csv-cleaner" and skill.description.startswith("Clean CSV files")


def deep_research_model() -> ScriptedChatModel:
    """Lead: two parallel tasks, then the report and its check; each sub-agent: notes, then a report."""
    report = (
        "# Is SQLite fit for a small web app?\n\nYes for modest write loads [1], with WAL mode [2].\n\n"
        "## Concurrency\n\nOne writer at a time [1].\n\n## Durability\n\nWAL keeps readers going during writes [2].\n\n"
        "## Disagreements and gaps\n\nNone found.\n\n## Sources\n\n"
        "[1] SQLite: Appropriate uses - https://sqlite.org/whentouse.html\n"
        "[2] Write-Ahead Logging - https://sqlite.org/wal.html\n"
    )

    def respond(messages: list[BaseMessage]) -> Any:
        system = messages[0].text if messages and messages[0].type == "system" else ""
        results = [m for m in messages if isinstance(m, ToolMessage)]
        if "You are Herdsman" not in system:  # a research sub-agent
            topic = "concurrency" if "concurrency" in messages[1].text else "durability"
            if not results:
                note = f"- finding about {topic} (source: SQLite docs - https://sqlite.org/)\n"
                return call("write_file", path=f"{WS}/research/{topic}.md", content=note)
            return f"Findings on {topic} are in {WS}/research/{topic}.md"
        if not results:
            return {
                "tool_calls": [
                    {
                        "name": "task",
                        "args": {
                            "description": f"Research {t}",
                            "prompt": f"Research SQLite {t} for web apps.",
                            "subagent_type": "general-purpose",
                        },
                    }
                    for t in ("concurrency", "durability")
                ]
            }
        if len(results) == 2:
            return call("write_file", path=f"{OUT}/research-report.md", content=report)
        if len(results) == 3:
            return bash(f"python3 /mnt/skills/public/deep-research/scripts/check_citations.py {OUT}/research-report.md")
        return "SQLite fits a small web app; the cited report is in outputs/research-report.md."

    return ScriptedChatModel(respond=respond)


async def test_deep_research_runs_parallel_subagents_and_cites_sources(home: Path) -> None:
    model = deep_research_model()
    results = await run(home, "t-research", "/deep-research is SQLite fit for a small web app?", model)
    tasks = [r for r in results if r.name == "task"]
    assert len(tasks) == 2 and not any(t.is_error for t in tasks)
    assert results[-1].content.strip() == "OK"
    data = user_data(home, "t-research")
    assert sorted(p.name for p in (data / "workspace" / "research").iterdir()) == ["concurrency.md", "durability.md"]
    assert (
        "[2] Write-Ahead Logging - https://sqlite.org/wal.html" in (data / "outputs" / "research-report.md").read_text()
    )
    lead_system = next(c.messages[0].text for c in model.calls if "You are Herdsman" in c.messages[0].text)
    assert '<active_skill name="deep-research"' in lead_system


def test_citation_checker_names_each_problem() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "cc", SKILLS / "public" / "deep-research" / "scripts" / "check_citations.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    problems = module.check(
        "# Q\n\nA claim [1] and [3].\n\n## Sources\n\n[1] A - https://a.org\n[2] B - https://b.org\n"
    )
    assert "[3] is cited but not listed under Sources" in problems
    assert "source [2] is listed but never cited; cite it or remove it" in problems
