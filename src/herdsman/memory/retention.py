"""Retention: nothing in a user's memory outlives ``memory.retention_days`` for its category.

Facts go by their category, the context summary by ``profile`` (it is the model's prose about
the user, made of the same things as profile facts), entities and relations by ``graph``, audit
records by ``audit`` (one number in config applies to all of them). An item is past retention when it was last
updated (an audit record: written) more days ago than its category keeps; an entity goes once it
is past retention and no relation that is kept names it. :func:`apply_retention` runs after every
memory update and :func:`sweep` over every user periodically (the gateway) and on
``herdsman memory sweep``, so an idle user's memory expires too.
"""

from __future__ import annotations

import asyncio
import datetime as dt

import structlog

from herdsman.config.schema import MemoryConfig
from herdsman.memory.audit import Origin, audit_namespace, record, records
from herdsman.memory.graph import GraphStore
from herdsman.memory.store import MemoryStore, profile_namespace, user_label

log = structlog.get_logger(__name__)
RETENTION = Origin("retention")
SWEEP_SECONDS = 3600.0


def cutoff(days: int | None, now: dt.datetime | None = None) -> str | None:
    """The ISO time before which an item ``days`` old is gone; None when kept forever."""
    if not days:
        return None
    return ((now or dt.datetime.now(dt.timezone.utc)) - dt.timedelta(days=days)).isoformat()


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


def sweep(store: MemoryStore, config: MemoryConfig, now: dt.datetime | None = None) -> int:
    """:func:`apply_retention` for every user with memory; how many items went in all."""
    if config.retention_days is None:
        return 0
    return sum(apply_retention(store, config, user, now) for user in store.users())


async def sweep_forever(store: MemoryStore, config: MemoryConfig, every: float = SWEEP_SECONDS) -> None:
    """:func:`sweep` now and then every ``every`` seconds, until cancelled (a failure is logged and retried)."""
    if config.retention_days is None:
        return
    while True:
        try:
            await asyncio.to_thread(sweep, store, config)
        except Exception as exc:  # noqa: BLE001 - try again next time
            log.warning("memory_retention_sweep_failed", error=str(exc))
        await asyncio.sleep(every)


__all__ = ["apply_retention", "cutoff", "sweep", "sweep_forever"]
