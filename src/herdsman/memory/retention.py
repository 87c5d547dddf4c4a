"""Retention: nothing in a user's memory outlives ``memory.retention_days`` for its category.

Facts go by their category (a consolidated summary is dated by the oldest fact in it), the context
summary by ``profile`` (it is the model's prose about the user, made of the same things as profile
facts), entities and relations (the closed ones too: history) by ``graph``, audit records by
``audit``, and the turns still waiting in the update queue (``memory_pending``) by ``pending``,
which defaults to the shortest retention named, since a turn may hold anything (one number in
config applies to all of them). Exports are made on request from what is kept (an export applies
retention to its user first); herdsman keeps no copy of one. An item is past retention when it was last
updated (an audit record: written) more days ago than its category keeps; an entity goes once it
is past retention and no relation that is kept names it. :func:`apply_retention` runs after every
memory update and :func:`sweep` over every user periodically (the gateway) and on
``herdsman memory sweep``, so an idle user's memory expires too. The sweep first consolidates
old facts into summaries (``memory.consolidate_after_days``, :mod:`herdsman.memory.consolidation`).
"""

from __future__ import annotations

import asyncio
import datetime as dt

import structlog

from herdsman.config.schema import MemoryConfig
from herdsman.memory.audit import Origin, audit_namespace, record, records
from herdsman.memory.consolidation import consolidate
from herdsman.memory.facts import cutoff
from herdsman.memory.graph import GraphStore
from herdsman.memory.queue import UpdateQueue
from herdsman.memory.store import MemoryStore, profile_namespace, user_label

log = structlog.get_logger(__name__)
RETENTION = Origin("retention")
SWEEP_SECONDS = 3600.0


def _expired(stamp: str, limit: str | None) -> bool:
    return bool(limit and stamp and stamp < limit)


def apply_retention(store: MemoryStore, config: MemoryConfig, user_id: str, now: dt.datetime | None = None) -> int:
    """Delete what the user's memory keeps past retention; how many items went."""
    removed = 0
    for fact in store.facts(user_id):
        if _expired(fact.updated_at, cutoff(config.retention_for(fact.category), now)):
            removed += store.delete(user_id, fact.id, RETENTION)
    summary = store.store.get(profile_namespace(user_id), "summary")
    if summary is not None and _expired(str(summary.value.get("updated_at", "")), cutoff(config.retention_for("profile"), now)):
        store.store.delete(profile_namespace(user_id), "summary")
        record(store.store, user_label(user_id), "delete", "summary", "summary", RETENTION)
        removed += 1
    graph = GraphStore(store.store)
    limit = cutoff(config.retention_for("graph"), now)
    if limit:
        kept: set[str] = set()
        for relation in graph.relations(user_id):
            if _expired(relation.updated_at, limit):
                removed += graph.delete_relation(user_id, relation.id, RETENTION)
            else:
                kept.update((relation.subject, relation.object))
        for entity in graph.entities(user_id):
            if entity.id not in kept and _expired(entity.updated_at, limit):
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
    before = (now or dt.datetime.now(dt.timezone.utc)) - dt.timedelta(days=days)
    dropped = queue.expire(before.timestamp())
    if dropped:
        log.info("memory_pending_expired", threads=dropped, days=days)
    return dropped


def sweep(store: MemoryStore, config: MemoryConfig, now: dt.datetime | None = None,
          queue: UpdateQueue | None = None) -> int:
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
    store: MemoryStore, config: MemoryConfig, every: float = SWEEP_SECONDS, queue: UpdateQueue | None = None,
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
