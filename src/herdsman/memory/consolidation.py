"""Old facts become summaries: past ``memory.consolidate_after_days``, a category's facts fold into one.

A user's memory grows one fact at a time; after months most of it is old detail, each fact a
line (and an id) of its own in the memory section. :func:`consolidate` takes the facts of one
category that nobody has updated for ``memory.consolidate_after_days``, at least
:data:`MIN_GROUP` of them, and replaces them with one summary fact of that category: their texts
joined, oldest first, under ``Earlier (<category>):``. The summary lists the ids it was made of
in ``sources`` and in its audit record (action ``consolidate``); each folded fact leaves a
``delete`` record with origin ``consolidation``. A summary is never folded again (it has
``sources``), and one that would be longer than :data:`MAX_SUMMARY_CHARS` is split.

Summaries are the facts' own words, joined, not a model's rewording: the sweep runs where no
memory model is loaded (the gateway's hourly sweep, ``herdsman memory sweep``), and a join loses
no fact and invents none. A summary is dated by the oldest fact in it, so nothing that was
folded into it outlives its retention (:mod:`herdsman.memory.retention`).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

from herdsman.config.schema import MemoryConfig
from herdsman.logs import get_logger
from herdsman.memory.audit import Origin, record
from herdsman.memory.facts import Fact, cutoff, fact_id
from herdsman.memory.store import MemoryStore, facts_namespace, user_label

log = get_logger(__name__)
CONSOLIDATION = Origin("consolidation")
MIN_GROUP = 3
MAX_SUMMARY_CHARS = 1200


def _chunks(facts: list[Fact]) -> list[list[Fact]]:
    """``facts`` in runs whose joined text stays within :data:`MAX_SUMMARY_CHARS`."""
    runs: list[list[Fact]] = [[]]
    size = 0
    for fact in facts:
        if runs[-1] and size + len(fact.content) + 2 > MAX_SUMMARY_CHARS:
            runs.append([])
            size = 0
        runs[-1].append(fact)
        size += len(fact.content) + 2
    return runs


def summary_of(category: str, facts: list[Fact]) -> Fact:
    """One fact that says what ``facts`` (of ``category``, oldest first) said, with their ids as ``sources``."""
    content = f"Earlier ({category}): " + "; ".join(f.content.rstrip(". ") for f in facts) + "."
    return Fact(
        fact_id(content),
        content,
        category,
        round(sum(f.confidence for f in facts) / len(facts), 2),
        None,
        min(f.created_at or f.updated_at for f in facts),
        min(f.updated_at for f in facts),
        tuple(f.id for f in facts),
    )


def consolidate(store: MemoryStore, config: MemoryConfig, user_id: str, now: dt.datetime | None = None) -> list[Fact]:
    """Fold the user's facts older than ``memory.consolidate_after_days`` into summaries, by
    category; the summaries written (none when consolidation is off or too few facts are old)."""
    limit = cutoff(config.consolidate_after_days, now)
    if limit is None:
        return []
    groups: dict[str, list[Fact]] = defaultdict(list)
    for fact in store.facts(user_id):
        if not fact.sources and fact.updated_at and fact.updated_at < limit:
            groups[fact.category].append(fact)
    written: list[Fact] = []
    for category, facts in sorted(groups.items()):
        if len(facts) < MIN_GROUP:
            continue
        facts.sort(key=lambda f: (f.created_at or f.updated_at, f.id))
        for run in _chunks(facts):
            summary = summary_of(category, run)
            store.store.put(facts_namespace(user_id), summary.id, summary.to_value())
            record(store.store, user_label(user_id), "consolidate", "fact", summary.id, CONSOLIDATION, summary.sources)
            for fact in run:
                store.delete(user_id, fact.id, CONSOLIDATION)
            written.append(summary)
    if written:
        log.info(
            "memory_consolidated", user_id=user_id, summaries=len(written), facts=sum(len(s.sources) for s in written)
        )
    return written


__all__ = ["CONSOLIDATION", "MIN_GROUP", "consolidate", "summary_of"]
