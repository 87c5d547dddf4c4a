"""Memory recall across sessions: graph memory against flat facts, on 20+ written conversations.

Each conversation of ``benchmarks/data/memory_conversations.yaml`` is played through the lead
agent with long-term memory on, one thread per session: the memory model reads each session
(the real queue, updater, grounding, filters and store), then each question is asked in a new
thread and the ``<memory>`` section the lead receives before it is measured:

- recall: the share of the question's gold phrases the section contains;
- precision: the share of injected memory items (facts, relations, the context summary; an
  entity's line holds one item per relation) that contain a gold phrase;
- answerable: every gold phrase is there and no line presents a stale value as current (an item
  about the question, sharing two of its content words, that names a stale value, no gold phrase
  and no "until");
- tokens injected per turn: the section's size (four characters a token, as memory estimates it),
  before every turn of the sessions and the questions alike.

Two modes over the same extraction: ``graph`` (facts, entities and relations; the default) and
``flat`` (``memory.graph: false``: facts only, the old mode), each at ``memory.max_injected_tokens``
of 1000 (the default) and of a tight budget, each user with their own memory; then both again at
1000 with every conversation played by one user, whose memory (some 200 facts) is far larger
than the budget, as a long-time user's is. With ``--model scripted`` (the default) the memory
model is a scripted extractor that answers with the extraction written in the data, resolving the
facts a session makes wrong to their ids from the prompt's list of facts, as a model reads them
there: this measures the mechanics (storage, history, recall, budget), not a model. With
``--model local`` the embedded model extracts and answers, and ``answered`` counts the answers
that contain every gold phrase (slow: run by hand).

Prints one JSON line.

Measured with ``--model scripted`` (20 conversations, 65 sessions, 75 questions; answerable of
75, tokens injected per turn over every turn / per question; one run of all modes each):

=====================  =====================  =====================
mode                   before (flat lines)    after (entity lines)
=====================  =====================  =====================
graph @ 1000           75, 121.0 / 155.0      75, 73.0 / 92.5
flat @ 1000            65, 86.7 / 108.2       64, 77.0 / 97.5
graph @ 150            75, 100.5 / 129.2      75, 71.8 / 92.4
flat @ 150             65, 83.6 / 106.7       64, 75.7 / 97.5
graph, one user        75, 359.8 / 391.9      75, 121.1 / 113.3
flat, one user         65, 330.4 / 350.2      64, 124.6 / 117.5
=====================  =====================  =====================

"Before": a line per relation with its dates and history, facts beside them, and a quarter of
the budget of unrelated memory on every turn. "After": one line per entity with its current
relations, history and dates only when the request is about change or time, nothing said twice,
unrelated memory only when nothing is related (:mod:`herdsman.memory.injection`). Flat lost one
answer it had by chance (an unrelated fact naming the history question's gold phrase). The
one-user figures move by a few tenths between runs (facts written in the same second tie).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from rich.console import Console
from rich.progress import Progress

from herdsman.agents.lead import create_lead_agent, run_config
from herdsman.config.schema import HerdsmanConfig
from herdsman.memory.facts import normalize, stems
from herdsman.memory.injection import STOPWORDS, estimate_tokens
from herdsman.memory.service import MemoryService
from herdsman.models.scripted import ScriptedChatModel

DATA = Path(__file__).parent / "data" / "memory_conversations.yaml"
BUDGETS = (1000, 150)
SECTION = re.compile(r"<memory>.*?</memory>", re.S)
LISTED_FACT = re.compile(r"^(\S+): \[[a-z]+\] (.*)$", re.M)
ENTITY_LINE = re.compile(r"^- (.+?): (\[r:.*)$")  # "- Atlas: [r:...] deploys to GCP; [r:...] written in Go"
ITEM = re.compile(r"; (?=\[r:)")


def load(path: Path = DATA) -> list[dict[str, Any]]:
    """The conversations of the data file."""
    return yaml.safe_load(path.read_text())


def quote_for(content: str, turns: list[str]) -> str:
    """What a competent memory model quotes for a fact: the user's turn of the session that shares
    the most words with it (the data may give a fact's ``quote`` itself)."""
    wanted = stems(content)
    return max(turns, key=lambda turn: len(wanted & stems(turn)))


class ScriptedExtractor:
    """The memory model of ``--model scripted``: the written extraction of the session it is shown.

    The session is the one whose first turn is in the prompt; ``forget`` holds facts' contents,
    answered as the ids the prompt lists them under; each fact quotes the user's turn that says it
    (:func:`quote_for`).
    """

    def __init__(self, conversations: list[dict[str, Any]]) -> None:
        self.sessions = [s for c in conversations for s in c["sessions"]]

    def __call__(self, messages: list[BaseMessage]) -> str:
        prompt = "\n".join(m.text for m in messages)
        session = next((s for s in self.sessions if s["turns"][0] in prompt), None)
        if session is None:
            return json.dumps({"summary": "", "facts": []})
        extraction = dict(session["extraction"])
        listed = {normalize(content): fid for fid, content in LISTED_FACT.findall(prompt)}
        extraction["forget"] = [listed[normalize(c)] for c in extraction.get("forget", []) if normalize(c) in listed]
        extraction["facts"] = [
            {"confidence": 0.9, "quote": quote_for(f["content"], session["turns"]), **f}
            for f in extraction.get("facts", [])
        ]
        extraction["relations"] = [{"confidence": 0.9, **r} for r in extraction.get("relations", [])]
        return json.dumps({"summary": "", **extraction})


def bench_config(home: Path, graph: bool, budget: int) -> HerdsmanConfig:
    """Memory on, updated only when the benchmark flushes it (after each session)."""
    return HerdsmanConfig.model_validate(
        {
            "home": str(home),
            "checkpointer": {"type": "memory"},
            "lead": {"model_retries": 0, "verify_rounds": 0},
            "title": {"enabled": False},
            "memory": {"enabled": True, "debounce_seconds": 3600, "graph": graph, "max_injected_tokens": budget},
        }
    )


def memory_lines(section: str) -> list[str]:
    """The remembered items of a ``<memory>`` section: each fact, each relation (an entity's line
    holds one per relation; each is counted with the entity's name) and the context summary."""
    items = []
    for line in section.splitlines():
        if not line.startswith(("- ", "Context:")):
            continue
        entity = ENTITY_LINE.match(line)
        if entity is None:
            items.append(line)
        else:
            items += [f"- {entity.group(1)}: {item}" for item in ITEM.split(entity.group(2))]
    return items


def judge(section: str, question: dict[str, Any]) -> dict[str, Any]:
    """Recall, relevant and injected lines, and whether the section answers ``question`` (module docstring)."""
    text = section.lower()
    gold = [g.lower() for g in question["gold"]]
    stale = [s.lower() for s in question.get("stale", [])]
    lines = [line.lower() for line in memory_lines(section)]
    found = sum(g in text for g in gold)
    relevant = sum(any(g in line for g in gold) for line in lines)
    about = stems(question["q"], STOPWORDS) - stems(" ".join(stale))
    enough = min(2, len(about))
    misleading = any(
        any(s in line for s in stale)
        and not any(g in line for g in gold)
        and "until" not in line
        and len(about & stems(line, STOPWORDS)) >= enough
        for line in lines
    )
    return {
        "gold": len(gold),
        "found": found,
        "lines": len(lines),
        "relevant": relevant,
        "answerable": found == len(gold) and not misleading,
        "misleading": misleading,
    }


async def run_mode(
    conversations: list[dict[str, Any]],
    graph: bool,
    budget: int,
    model: str,
    progress: Progress,
    one_user: bool = False,
) -> dict[str, Any]:
    """Play every conversation in one mode at one budget (``one_user``: all of them as one user,
    whose memory then holds every conversation's); the figures."""
    label = f"{'graph' if graph else 'flat'} @ {budget} tokens{' (one user)' if one_user else ''}"
    task = progress.add_task(label, total=len(conversations))
    judged: list[tuple[str, dict[str, Any]]] = []
    turn_tokens: list[int] = []
    question_tokens: list[int] = []
    answered = 0
    with tempfile.TemporaryDirectory() as tmp:
        config = bench_config(Path(tmp), graph, budget)
        memory_model, lead = models(model, conversations)
        service = MemoryService.open(config, memory_model)
        agent = create_lead_agent(config, model=lead, checkpointer=InMemorySaver(), memory=service)

        async def ask(text: str, thread: str, user: str) -> tuple[str, str]:
            prompts = Prompts()
            state = await agent.ainvoke(
                {"messages": [HumanMessage(text)]}, {**run_config(config, thread, user_id=user), "callbacks": [prompts]}
            )
            match = SECTION.search(prompts.system)
            section = match.group(0) if match else ""
            turn_tokens.append(estimate_tokens(section) if section else 0)
            return section, state["messages"][-1].text

        try:
            for conv in conversations:
                user = "everyone" if one_user else conv["user"]
                for n, session in enumerate(conv["sessions"]):
                    for turn in session["turns"]:
                        await ask(turn, f"{conv['id']}-s{n}", user)
                    await service.flush(timeout=600)
                progress.advance(task)
                if not progress.console.is_terminal:  # no live bar to show: a line per conversation
                    progress.console.print(f"{label}: {conv['id']} played")
            for conv in conversations:  # questions after every session: one user's memory holds them all
                user = "everyone" if one_user else conv["user"]
                for n, question in enumerate(conv["questions"]):
                    section, answer = await ask(question["q"], f"{conv['id']}-q{n}", user)
                    question_tokens.append(turn_tokens[-1])
                    judged.append((question.get("kind", "other"), judge(section, question)))
                    answered += all(g.lower() in answer.lower() for g in question["gold"])
        finally:
            service.close()
    return figures(judged, turn_tokens, question_tokens, answered if model == "local" else None)


def figures(
    judged: list[tuple[str, dict[str, Any]]], turn_tokens: list[int], question_tokens: list[int], answered: int | None
) -> dict[str, Any]:
    """The figures of one mode from the judged questions and the tokens injected per turn."""
    results = [r for _, r in judged]
    gold = sum(r["gold"] for r in results)
    lines = sum(r["lines"] for r in results)
    by_kind: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for kind, r in judged:
        kinds[kind] += 1
        by_kind[kind] += r["answerable"]
    out = {
        "questions": len(results),
        "answerable": sum(r["answerable"] for r in results),
        "answerable_by_kind": {k: f"{by_kind[k]}/{kinds[k]}" for k in sorted(kinds)},
        "misleading": sum(r["misleading"] for r in results),
        "recall": round(sum(r["found"] for r in results) / gold, 3) if gold else None,
        "precision": round(sum(r["relevant"] for r in results) / lines, 3) if lines else None,
        "lines_per_question": round(lines / len(results), 2) if results else None,
        "tokens_per_turn": round(sum(turn_tokens) / len(turn_tokens), 1) if turn_tokens else 0,
        "tokens_per_question": round(sum(question_tokens) / len(question_tokens), 1) if question_tokens else 0,
    }
    if answered is not None:
        out["answered"] = answered
    return out


class Prompts(BaseCallbackHandler):
    """Keeps the system prompt of the last chat model call of a run (the lead's, with its memory section)."""

    def __init__(self) -> None:
        self.system = ""

    def on_chat_model_start(self, serialized: Any, messages: list[list[BaseMessage]], **kwargs: Any) -> None:
        """Remember the system message the model is called with."""
        for batch in messages:
            self.system = next((m.text for m in batch if m.type == "system"), self.system)


def models(model: str, conversations: list[dict[str, Any]]) -> tuple[BaseChatModel, BaseChatModel]:
    """(memory model, lead model) for ``--model``."""
    if model == "scripted":
        return ScriptedChatModel(respond=ScriptedExtractor(conversations)), ScriptedChatModel(
            respond=lambda m: "Noted."
        )
    from herdsman.config.schema import LocalModelConfig
    from herdsman.models.local import build_local_model

    local = build_local_model(LocalModelConfig(max_tokens=400), progress=True)
    local.load()
    return local, local


async def main(model: str, only: int | None, default_budget_only: bool = False) -> dict[str, Any]:
    """Every mode at every budget (``default_budget_only``: graph and flat at the default budget
    only); the figures as one dict."""
    conversations = load()[:only] if only else load()
    out: dict[str, Any] = {
        "benchmark": "memory_recall",
        "model": model,
        "conversations": len(conversations),
        "sessions": sum(len(c["sessions"]) for c in conversations),
        "questions": sum(len(c["questions"]) for c in conversations),
    }
    with Progress(console=Console(stderr=True), transient=True) as progress:
        for budget in BUDGETS[:1] if default_budget_only else BUDGETS:
            out[f"budget_{budget}"] = {
                mode: await run_mode(conversations, mode == "graph", budget, model, progress)
                for mode in ("graph", "flat")
            }
        if default_budget_only:
            return out
        out[f"one_user_budget_{BUDGETS[0]}"] = {
            mode: await run_mode(conversations, mode == "graph", BUDGETS[0], model, progress, one_user=True)
            for mode in ("graph", "flat")
        }
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model",
        choices=("scripted", "local"),
        default="scripted",
        help="scripted: the written extraction (mechanics); local: the embedded model end to end.",
    )
    parser.add_argument("--only", type=int, default=None, help="Play only the first N conversations.")
    parser.add_argument(
        "--default-budget-only",
        action="store_true",
        help="Graph and flat at the default budget only, not the tight budget nor one user (a third of the time).",
    )
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.model, args.only, args.default_budget_only))))
    sys.stdout.flush()
