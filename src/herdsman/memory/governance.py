"""Everything about one user, out or gone: export and purge, shared by the CLI and the REST API.

:func:`export_user` is the user's whole memory as JSON (summary, facts, entities, relations with
their history, the audit trail, the off switch); :func:`purge_user` deletes all of it from the
store and the user's turns still waiting in the update queue, so nothing is learned from them
afterwards. The off switch stays: a user who turned memory off and purged it stays off.
"""

from __future__ import annotations

from typing import Any

import structlog

from herdsman.memory.audit import records
from herdsman.memory.graph import GraphStore
from herdsman.memory.queue import UpdateQueue
from herdsman.memory.store import MemoryStore, user_label

log = structlog.get_logger(__name__)


def graph_json(store: MemoryStore, user_id: str) -> dict[str, Any]:
    """The user's entities and relations as the API shows them (relations name their entities)."""
    graph = GraphStore(store.store)
    entities = graph.entities(user_id)
    names = {e.id: e.name for e in entities}
    return {
        "entities": [{"id": e.id, **e.to_value()} for e in entities],
        "relations": [
            {"id": r.id, **r.to_value(), "subject_name": names.get(r.subject, r.subject),
             "object_name": names.get(r.object, r.object)}
            for r in graph.relations(user_id)
        ],
    }


def export_user(store: MemoryStore, user_id: str) -> dict[str, Any]:
    """The user's whole memory: ``{summary, facts, entities, relations, audit, enabled}``."""
    return {
        "enabled": store.enabled_for(user_id),
        "summary": store.summary(user_id),
        "facts": [{"id": f.id, **f.to_value()} for f in store.facts(user_id)],
        **graph_json(store, user_id),
        "audit": records(store.store, user_label(user_id)),
    }


def purge_user(store: MemoryStore, queue: UpdateQueue | None, user_id: str) -> int:
    """Delete everything memory keeps about the user, and their queued turns; how many items went."""
    removed = store.purge(user_id)
    turns = queue.forget_user(user_id) if queue is not None else 0
    log.info("memory_purged", user_id=user_id, items=removed, queued_threads=turns)
    return removed + turns
