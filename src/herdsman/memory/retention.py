"""Retention: nothing in a user's memory outlives ``memory.retention_days`` for its category.

Facts go by their category (a consolidated summary is dated by the oldest fact in it), the context
summary by ``profile`` (it is the model's prose about the user, made of the same things as profile
facts), entities and relations (the closed ones too: history) by ``graph``, audit records by
``audit``, and the turns still waiting in the update queue (``memory_pending``) by ``pending``,
which defaults to the shortest retention named, since a turn may hold anything (one number in
config applies to all of them). Exports are made on request from what is kept (an export applies
retention to its user first); herdsman keeps no copy of one. An item is past retention when it was last
updated (an audit record: written) more days ago than its category keeps; an entity goes once it
is past retention and no relation that is kept names it. Recall reads through
:func:`within_retention`, so what is past retention is never injected, even before it is deleted.
:func:`apply_retention` runs after every
memory update and :func:`sweep` over every user periodically (the gateway) and on
``herdsman memory sweep``, so an idle user's memory expires too. The sweep first consolidates
old facts into summaries (``memory.consolidate_after_days``, :mod:`herdsman.memory.consolidation`).
"""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

from herdsman.config.schema import MemoryConfig
from herdsman.logs import get_logger
from herdsman.memory.audit import Origin, audit_namespace, record, records
from herdsman.memory.consolidation import consolidate
from herdsman.memory.facts import Fact, cutoff
from herdsman.memory.graph import Entity, GraphStore, Relation
from herdsman.memory.queue import UpdateQueue
from herdsman.memory.store import MemoryStore, profile_namespace, user_label

log = get_logger(__name__)
RETENTION = Origin("retention")
SWEEP_SECONDS = 3600.0


def _expired(stamp: str, limit: str | None) -> bool:
    return bool(limit and stamp and stamp < limit)


def _graph_expired(
    relations: list[Relation], entities: list[Entity], limit: str | None
) -> tuple[list[Relation], list[Entity]]:
    """The relations past ``limit``, and the entities past it that no kept relation names."""
    if not limit:
        return [], []
    gone = [r for r in relations if _expired(r.updated_at, limit)]
    gone_ids = {r.id for r in gone}
    named = {end for r in relations if r.id not in gone_ids for end in (r.subject, r.object)}
    return gone, [e for e in entities if e.id not in named and _expired(e.updated_at, limit)]


def _summary_expired(summary: Any, config: MemoryConfig, now: dt.datetime | None) -> bool:
    """Whether the context summary item ``summary`` (None: there is none) is past retention."""
    return summary is not None and _expired(
        str(summary.value.get("updated_at", "")), cutoff(config.retention_for("profile"), now)
    )


def within_retention(
    store: MemoryStore, config: MemoryConfig, user_id: str, now: dt.datetime | None = None
) -> tuple[list[Fact], str, list[Entity], list[Relation]]:
    """The user's facts, context summary, entities and relations that are within retention: what
    recall may inject, even before the next sweep deletes the rest (read only)."""
    facts = [
        f for f in store.facts(user_id) if not _expired(f.updated_at, cutoff(config.retention_for(f.category), now))
    ]
    item = store.store.get(profile_namespace(user_id), "summary")  # read once: its date and its text
    summary = "" if item is None or _summary_expired(item, config, now) else str(item.value.get("text", ""))
    if not config.graph:
        return facts, summary, [], []
    graph = GraphStore(store.store)
    entities, relations = graph.entities(user_id), graph.relations(user_id)
    gone_relations, gone_entities = _graph_expired(relations, entities, cutoff(config.retention_for("graph"), now))
    gone = {r.id for r in gone_relations} | {e.id for e in gone_entities}
    return facts, summary, [e for e in entities if e.id not in gone], [r for r in relations if r.id not in gone]


def apply_retention(store: MemoryStore, config: MemoryConfig, user_id: str, now: dt.datetime | None = None) -> int:
    """Delete what the user's memory keeps past retention; how many items went."""
    removed = 0
    for fact in store.facts(user_id):
        if _expired(fact.updated_at, cutoff(config.retention_for(fact.category), now)):
            removed += store.delete(user_id, fact.id, RETENTION)
    if _summary_expired(store.store.get(profile_namespace(user_id), "summary"), config, now):
        store.store.delete(profile_namespace(user_id), "summary")
        record(store.store, user_label(user_id), "delete", "summary", "summary", RETENTION)
        removed += 1
    graph = GraphStore(store.store)
    gone_relations, gone_entities = _graph_expired(
        graph.relations(user_id), graph.entities(user_id), cutoff(config.retention_for("graph"), now)
    )
    for relation in gone_relations:
        removed += graph.delete_relation(user_id, relation.id, RETENTION)
    for entity in gone_entities:
        removed += graph.delete_entity(user_id, entity.id, RETENTION)
    limit = cutoff(config.retention_for("audit"), now)
    if limit:
        label = user_label(user_id)
        for entry in records(store.store, label):
            if _expired(str(entry.get("at", "")), limit):
                store.store.delete(audit_namespace(label), entry["key"])
                removed += 1
    if removed:
        log.info("memory_retention_applied", user_id=user_id, removed=removed)
    return removed


def scheduled(config: MemoryConfig) -> bool:
    """True when a sweep has work: retention or consolidation is configured."""
    return config.retention_days is not None or config.consolidate_after_days is not None


def expire_pending(queue: UpdateQueue, config: MemoryConfig, now: dt.datetime | None = None) -> int:
    """Drop the queued turns older than ``pending``'s retention; how many threads' rows went."""
    days = config.retention_for("pending")
    if not days:
        return 0
    before = (now or dt.datetime.now(dt.UTC)) - dt.timedelta(days=days)
    dropped = queue.expire(before.timestamp())
    if dropped:
        log.info("memory_pending_expired", threads=dropped, days=days)
    return dropped


def sweep(
    store: MemoryStore, config: MemoryConfig, now: dt.datetime | None = None, queue: UpdateQueue | None = None
) -> int:
    """For every user with memory, :func:`~herdsman.memory.consolidation.consolidate` old facts,
    then :func:`apply_retention`; then :func:`expire_pending` on ``queue``; how many items went in
    all (facts folded into a summary count)."""
    if not scheduled(config):
        return 0
    removed = 0
    for user in store.users():
        removed += sum(len(summary.sources) for summary in consolidate(store, config, user, now))
        removed += apply_retention(store, config, user, now)
    if queue is not None:
        removed += expire_pending(queue, config, now)
    return removed


async def sweep_forever(
    store: MemoryStore,
    config: MemoryConfig,
    every: float = SWEEP_SECONDS,
    queue: UpdateQueue | None = None,
) -> None:
    """:func:`sweep` now and then every ``every`` seconds, until cancelled (a failure is logged and retried)."""
    if not scheduled(config):
        return
    while True:
        try:
            await asyncio.to_thread(sweep, store, config, None, queue)
        except Exception as exc:  # noqa: BLE001 - try again next time
            log.warning("memory_retention_sweep_failed", error=str(exc))
        await asyncio.sleep(every)


__all__ = ["apply_retention", "cutoff", "expire_pending", "scheduled", "sweep", "sweep_forever"]
