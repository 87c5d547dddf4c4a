"""Skill selection: given a request that names no skill, does the lead activate the one that fits?

30 requests (:data:`REQUESTS`, 6 in Chinese), each fitting exactly one public skill. A request
whose skill is not installed under ``skills/public/`` is skipped (and listed). Each is sent to the
lead agent (the default configuration: the embedded model's ``small`` profile, its middlewares, the
skills of this checkout) in a new thread, for at most ``--max-steps`` model calls, and the skill it
activates is read from what happened:

- the ``active_skill`` the run recorded (``/name``, a skill asked for in words, or
  ``skills.auto_select: activate``), else
- the first skill folder a tool call of the run touched (``read_file`` of its SKILL.md, ``bash``
  running one of its scripts...), else none.

A request counts as ``right`` when that is its skill, ``wrong`` when it is another, ``none`` when
no skill was activated. ``preselection`` gives, for the same requests and with no model at all,
how often the ranking of :mod:`herdsman.prompting.skill_ranking` puts the right skill first
(``top1``) and among the candidates offered (``offered``).

``--model embedded`` (the default) runs the embedded model: slow (a minute or more a request) and
it takes the machine's generation lock, so it is run by hand. ``--model scripted`` is the dry
mode that tests the pipeline: a scripted model that reads the SKILL.md of the first candidate the
harness offers it (or answers without a skill when none is offered), so ``right`` then measures
the pre-selection through the real middlewares.

Prints one JSON line: ``{"benchmark", "model", "auto_select", "requests", "skipped", "right",
"wrong", "none", "right_share", "per_skill": {skill: {right, wrong, none}}, "results":
[{id, skill, activated, language}], "preselection": {top1, offered}}``.

    python benchmarks/skill_selection.py [--model embedded|scripted] [--auto-select off|suggest|activate]
        [--only ID,ID] [--max-steps 4]

The requests were written before the ranking was tried on them and must not be tuned to it (see
benchmarks/README.md): they are a test split.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import tempfile
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchkit.model_cli import model_run_parser, print_figures
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

REPO = Path(__file__).resolve().parents[1]

# (id, skill, request): written as a user would type them, one skill each.
REQUESTS: tuple[tuple[str, str, str], ...] = (
    ("dashboard", "dashboard", "I uploaded sales.csv - build me an HTML dashboard with KPI cards and a few charts."),
    ("analysis", "data-analysis", "What is the average order value per region in orders.csv? Plot it as a bar chart."),
    (
        "cleaning",
        "data-cleaning",
        "customers.csv has duplicate rows, stray spaces and 'n/a' values everywhere; tidy it up and tell me what you changed.",
    ),
    (
        "research",
        "deep-research",
        "Compare the main open-source vector databases on features, licensing and performance, looking at several sources, "
        "and give me a cited report.",
    ),
    (
        "flowchart",
        "diagram",
        "Draw a flowchart of our order process: order placed, payment checked, shipped, delivered.",
    ),
    ("shrink", "image-tools", "Shrink photo.jpg to 800 pixels wide and convert it to WebP."),
    (
        "standup",
        "meeting-notes",
        "Here is the transcript of today's standup in standup.txt; pull out the decisions and who has to do what by when.",
    ),
    ("memo", "report-writing", "Write a report on our Q3 support tickets that I can share with the team as a memo."),
    ("new-skill", "skill-creator", "Package what we just did into a reusable skill so I can run it again next week."),
    (
        "join",
        "sql-over-csv",
        "Join orders.csv with customers.csv on customer_id and sum the totals per country using SQL.",
    ),
    ("aloud", "text-to-speech", "Read this paragraph aloud and give me a WAV file of it: Welcome to the spring fair."),
    ("landing", "web-page-builder", "Make a landing page for my bakery with a menu section and a contact form."),
    ("review", "code-review", "I uploaded my repository in project/; review the code and tell me what to fix."),
    (
        "landlord",
        "letter-or-email",
        "Write an email to my landlord complaining that the heating has been broken for two weeks.",
    ),
    ("md-slides", "markdown-to-slides", "Convert notes.md into a PowerPoint, one slide per section."),
    ("printable", "pdf-report", "Turn findings.md into a printable PDF with numbered pages."),
    (
        "readme",
        "readme-writer",
        "Write a README for the project folder I uploaded, with install and usage instructions.",
    ),
    (
        "brief",
        "research-brief",
        "Summarize the three articles I uploaded into a one-page brief with citations to them.",
    ),
    ("investors", "slide-deck", "Make a 6-slide presentation introducing our new product to investors."),
    ("expenses", "spreadsheet", "Create an Excel workbook of monthly expenses with a totals row and a chart."),
    ("unit-tests", "test-writer", "Write unit tests for utils.py and run them."),
    (
        "german",
        "translate-keep-format",
        "Translate README.md into German but keep the headings, tables and code blocks exactly as they are.",
    ),
    ("docx", "word-document", "I need this proposal as a .docx file that I can edit in Word."),
    ("logo-box", "image-tools", "Put a red box around the logo in screenshot.png and add the label 'old logo'."),
    ("zh-deck", "slide-deck", "帮我做一个关于公司年度总结的演示文稿，大约八页幻灯片。"),
    ("zh-sales", "data-analysis", "分析一下我上传的 sales.csv，每个月的销售额是多少？画个折线图。"),
    ("zh-arch", "diagram", "画一张系统架构图：浏览器、网关、数据库之间的连接。"),
    ("zh-audio", "text-to-speech", "把这段文字朗读出来，生成一个音频文件：欢迎参加春季展会。"),
    ("zh-minutes", "meeting-notes", "这是今天会议的记录 notes.txt，请整理出会议纪要和待办事项。"),
    ("zh-translate", "translate-keep-format", "把 guide.md 翻译成英文，保持原来的 Markdown 格式不变。"),
)
_SKILL_DIR = re.compile(r"/mnt/skills/(?:public|custom)/([a-z0-9]+(?:-[a-z0-9]+)*)")
_CJK = re.compile(r"[\u3400-\u9fff]")


def installed_skills(root: Path = REPO / "skills") -> set[str]:
    """The names of the public skills in ``root`` (a folder holding a SKILL.md)."""
    return {p.parent.name for p in (root / "public").glob("*/SKILL.md")}


def select(
    requests: Iterable[tuple[str, str, str]], installed: set[str], only: str | None = None
) -> tuple[list[tuple[str, str, str]], list[str]]:
    """``(requests to run, ids skipped because their skill is not installed)``; ``only``: ids, comma-separated."""
    wanted = set(only.split(",")) if only else None
    chosen = [r for r in requests if wanted is None or r[0] in wanted]
    return [r for r in chosen if r[1] in installed], [r[0] for r in chosen if r[1] not in installed]


def activated(state: Mapping[str, Any]) -> str | None:
    """The skill a finished run activated: its recorded ``active_skill``, else the first skill
    folder one of its tool calls named (see the module docstring)."""
    record = state.get("active_skill")
    if record:
        return record["name"]
    messages: Sequence[BaseMessage] = state.get("messages", [])
    start = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=0)
    for message in messages[start:]:
        for call in getattr(message, "tool_calls", None) or []:
            match = _SKILL_DIR.search(json.dumps(call.get("args", {}), ensure_ascii=False))
            if match:
                return match.group(1)
    return None


def tally(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The counts of right, wrong and none, overall and per skill."""
    per_skill: dict[str, dict[str, int]] = {}
    totals = {"right": 0, "wrong": 0, "none": 0}
    for r in results:
        outcome = "none" if r["activated"] is None else "right" if r["activated"] == r["skill"] else "wrong"
        totals[outcome] += 1
        per_skill.setdefault(r["skill"], {"right": 0, "wrong": 0, "none": 0})[outcome] += 1
    share = round(totals["right"] / len(results), 3) if results else None
    return {**totals, "right_share": share, "per_skill": dict(sorted(per_skill.items()))}


def preselection(requests: Sequence[tuple[str, str, str]], skills_root: Path) -> dict[str, Any]:
    """How the model-free ranking does on ``requests``: right skill first, and among those offered."""
    from herdsman.prompting.skill_ranking import SkillRanker
    from herdsman.skills import load_skills

    ranker = SkillRanker(load_skills(skills_root).skills)
    top1 = offered = 0
    for _, skill, text in requests:
        candidates = [c.skill.name for c in ranker.candidates(text)]
        top1 += bool(candidates) and candidates[0] == skill
        offered += skill in candidates
    return {"top1": top1, "offered": offered, "of": len(requests)}


def first_candidate_model() -> Any:
    """The dry mode's model: reads the SKILL.md of the first skill the harness offers, then answers."""
    from herdsman.models.scripted import ScriptedChatModel

    def respond(messages: list[BaseMessage]) -> Any:
        if isinstance(messages[-1], HumanMessage) or messages[-1].type == "human":
            system = next((m.text for m in messages if m.type == "system"), "")
            offered = re.search(r"<skill_candidates>.*?read (/mnt/skills/\S+/SKILL\.md)", system, re.DOTALL)
            active = re.search(r'<active_skill name="[^"]+" path="([^"]+)"', system)
            if active:
                return AIMessage(
                    content="",
                    tool_calls=[{"name": "ls", "args": {"path": active.group(1)}, "id": f"c{uuid.uuid4().hex[:8]}"}],
                )
            if offered:
                return AIMessage(
                    content="",
                    tool_calls=[
                        {"name": "read_file", "args": {"path": offered.group(1)}, "id": f"c{uuid.uuid4().hex[:8]}"}
                    ],
                )
            return "I can do that without a skill."
        return "Done."

    return ScriptedChatModel(respond=respond)


def bench_config(home: Path, auto_select: str, max_steps: int, skills_root: Path) -> Any:
    """The default configuration in ``home``, bounded to ``max_steps`` model calls a request."""
    from herdsman.config.schema import HerdsmanConfig

    return HerdsmanConfig.model_validate(
        {
            "home": str(home),
            "checkpointer": {"type": "memory"},
            "lead": {"max_steps": max_steps, "verify_rounds": 0, "model_retries": 0},
            "title": {"enabled": False},
            "skills": {"path": str(skills_root), "auto_select": auto_select},
        }
    )


async def run(
    model: str, auto_select: str, only: str | None = None, max_steps: int = 4, skills_root: Path = REPO / "skills"
) -> dict[str, Any]:
    """Every selected request through the lead; the figures as one dict."""
    from langgraph.checkpoint.memory import InMemorySaver

    from herdsman.agents.lead import create_lead_agent, run_config

    requests, skipped = select(REQUESTS, installed_skills(skills_root), only)
    results = []
    with tempfile.TemporaryDirectory(prefix="skill-selection-") as tmp:
        config = bench_config(Path(tmp), auto_select, max_steps, skills_root)
        lead = first_candidate_model() if model == "scripted" else None
        agent = create_lead_agent(config, model=lead, checkpointer=InMemorySaver())
        for rid, skill, text in requests:
            thread = f"sel-{rid}-{uuid.uuid4().hex[:6]}"
            cfg = run_config(config, thread)
            await agent.ainvoke({"messages": [HumanMessage(content=text)]}, cfg)
            state = (await agent.aget_state(cfg)).values
            results.append(
                {
                    "id": rid,
                    "skill": skill,
                    "activated": activated(state),
                    "language": "zh" if _CJK.search(text) else "en",
                }
            )
            print(f"{rid}: {skill} -> {results[-1]['activated']}", file=sys.stderr)
    return {
        "benchmark": "skill_selection",
        "model": model,
        "auto_select": auto_select,
        "requests": len(results),
        "skipped": skipped,
        **tally(results),
        "results": results,
        "preselection": preselection(requests, skills_root),
    }


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the arguments, run, print the JSON line."""
    args = model_run_parser(
        __doc__,
        "--auto-select",
        choices=("off", "suggest", "activate"),
        default="suggest",
        help="skills.auto_select for the run (default: suggest, the configured default)",
        items="request ids",
        each="a request",
        max_steps=4,
    ).parse_args(argv)
    print_figures(asyncio.run(run(args.model, args.auto_select, args.only, args.max_steps)))


if __name__ == "__main__":
    main()
