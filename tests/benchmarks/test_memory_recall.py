"""The memory benchmark's data and judge, and a short scripted run of it (the full run is
``python benchmarks/memory_recall.py``; ``--model local`` is run by hand)."""

from __future__ import annotations

import asyncio
import sys
from collections import Counter

from rich.progress import Progress

from herdsman.memory.worth import refusal
from tests.support import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

import memory_recall as bench  # noqa: E402


def test_the_data_has_twenty_multi_session_conversations_with_questions_of_every_kind() -> None:
    conversations = bench.load()
    assert len(conversations) >= 20 and len({c["id"] for c in conversations}) == len(conversations)
    assert all(len(c["sessions"]) >= 3 and c["questions"] for c in conversations)
    kinds = Counter(q["kind"] for c in conversations for q in c["questions"])
    assert set(kinds) == {"earlier", "updated", "contradicted", "history"} and min(kinds.values()) >= 5
    for conv in conversations:
        for question in conv["questions"]:
            assert question["gold"] and question["q"].endswith("?")
            if question["kind"] in ("updated", "contradicted"):
                assert question["stale"], question
        for session in conv["sessions"]:  # the written extraction is what the harness keeps
            assert all(refusal(f["content"]) is None for f in session["extraction"].get("facts", []))


def test_the_judge_wants_every_gold_phrase_and_no_stale_value_as_current() -> None:
    question = {"q": "Where does Atlas deploy now?", "gold": ["GCP"], "stale": ["AWS"]}
    right = "<memory>\n- [r:r1] Atlas deploys to GCP (since 2026-03-01; was AWS until 2026-03-01 [r:r0])\n</memory>"
    stale = "<memory>\n- [f:a] [project] Atlas deploys to GCP\n- [f:b] [project] Atlas deploys to AWS\n</memory>"
    other = "<memory>\n- [f:b] [project] Prism deploys to AWS\n- [f:a] [project] Atlas deploys to GCP\n</memory>"
    assert bench.judge(right, question)["answerable"]
    assert bench.judge(stale, question)["misleading"] and not bench.judge(stale, question)["answerable"]
    assert bench.judge(other, question)["answerable"]  # AWS, but about another project
    missing = bench.judge("<memory>\n- [f:b] [project] Atlas is written in Go\n</memory>", question)
    assert (missing["found"], missing["relevant"], missing["lines"], missing["answerable"]) == (0, 0, 1, False)


def test_an_entity_line_is_judged_item_by_item() -> None:
    question = {"q": "Where does Atlas deploy now?", "gold": ["GCP"], "stale": ["AWS"]}
    line = bench.judge("<memory>\n- Atlas: [r:r1] deploys to GCP; [r:r2] written in Go\n</memory>", question)
    assert (line["lines"], line["relevant"], line["answerable"]) == (2, 1, True)
    stale = bench.judge("<memory>\n- Atlas: [r:r2] written in Go; [r:r0] deploys to AWS\n</memory>", question)
    assert stale["misleading"] and not stale["answerable"]
    history = "<memory>\n- Atlas: [r:r1] deploys to GCP (since 2026-03-01, was AWS until 2026-03-01 [r:r0])\n</memory>"
    assert bench.judge(history, question)["answerable"]


def test_a_short_scripted_run_measures_both_modes() -> None:
    """On the first two conversations the graph keeps what a fact was before it changed; flat
    facts forget it, so only the graph answers the history questions."""
    conversations = bench.load()[:2]
    history = sum(q["kind"] == "history" for c in conversations for q in c["questions"])

    async def both() -> tuple[dict, dict]:
        with Progress(disable=True) as progress:
            graph = await bench.run_mode(conversations, True, 1000, "scripted", progress)
            flat = await bench.run_mode(conversations, False, 1000, "scripted", progress)
        return graph, flat

    graph, flat = asyncio.run(both())
    assert graph["questions"] == flat["questions"] == sum(len(c["questions"]) for c in conversations)
    assert graph["answerable_by_kind"]["history"] == f"{history}/{history}"
    assert flat["answerable_by_kind"]["history"] == f"0/{history}"
    assert graph["recall"] == 1.0 and 0 < flat["recall"] < 1.0
    assert 0 < graph["tokens_per_turn"] < flat["tokens_per_turn"]  # more answered with fewer tokens, every turn
    assert 0 < graph["tokens_per_question"] < flat["tokens_per_question"]
