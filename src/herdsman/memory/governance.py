"""Everything about one user, out or gone: export and purge, shared by the CLI and the REST API.

:func:`export_user` is the user's whole memory as JSON (summary, facts, entities, relations with
their history, the audit trail, the off switch), past retention removed first; :func:`purge_user`
deletes all of it from the store and the user's turns still waiting in the update queue, so nothing
is learned from them afterwards. The off switch stays: a user who turned memory off and purged it
stays off.
:func:`end_relation` and :func:`correct_relation` are the owner's edits of a relation, checked
the same way wherever they come from (:class:`EditRefused` says what is wrong).
"""

from __future__ import annotations

from typing import Any

from herdsman.config.schema import MemoryConfig
from herdsman.logs import get_logger
from herdsman.memory.audit import Origin, records
from herdsman.memory.graph import GraphStore, Relation
from herdsman.memory.graph_schema import MAX_NAME_CHARS, predicate_name, since_date
from herdsman.memory.queue import UpdateQueue
from herdsman.memory.retention import apply_retention
from herdsman.memory.store import MemoryStore, user_label

log = get_logger(__name__)


def graph_json(store: MemoryStore, user_id: str) -> dict[str, Any]:
    """The user's entities and relations as the API shows them (relations name their entities)."""
    graph = GraphStore(store.store)
    entities = graph.entities(user_id)
    names = {e.id: e.name for e in entities}
    return {
        "entities": [{"id": e.id, **e.to_value()} for e in entities],
        "relations": [
            {
                "id": r.id,
                **r.to_value(),
                "subject_name": names.get(r.subject, r.subject),
                "object_name": names.get(r.object, r.object),
            }
            for r in graph.relations(user_id)
        ],
    }


def export_user(store: MemoryStore, user_id: str, config: MemoryConfig | None = None) -> dict[str, Any]:
    """The user's whole memory: ``{summary, facts, entities, relations, audit, enabled}``; with
    ``config``, what is past ``memory.retention_days`` goes first, so no export carries it (the
    hourly sweep may not have run yet)."""
    if config is not None:
        apply_retention(store, config, user_id)
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


class EditRefused(ValueError):
    """An edit of a relation that cannot be made: ``field`` is what was wrong (``valid_to``,
    ``predicate``, ``object``), ``conflict`` when the relation's state forbids it (it already ended)."""

    def __init__(self, field: str, message: str, conflict: bool = False) -> None:
        super().__init__(message)
        self.field, self.message, self.conflict = field, message, conflict


def end_relation(store: MemoryStore, user_id: str, relation: Relation, valid_to: str, origin: Origin) -> Relation:
    """``relation`` stopped being true on ``valid_to`` (a date): it stays, as history."""
    when = since_date(valid_to)
    if when is None:
        raise EditRefused("valid_to", f"{valid_to[:40]!r} is not a date; send e.g. 2026-03-01")
    if when < relation.valid_from[: len(when)]:
        raise EditRefused(
            "valid_to",
            f"{when} is before the relation began ({relation.valid_from}); send a later date, or delete the relation",
        )
    if not relation.open:
        raise EditRefused(
            "valid_to",
            f"Relation {relation.id!r} already ended on {relation.valid_to}; delete it to correct it further",
            conflict=True,
        )
    return GraphStore(store.store).close(user_id, relation, when, origin)


def correct_relation(
    store: MemoryStore,
    user_id: str,
    relation: Relation,
    origin: Origin,
    predicate: str | None = None,
    obj: str | None = None,
) -> Relation:
    """``relation`` was wrong: its predicate and/or object become these (checked as the memory
    model's are), under a new id (:meth:`GraphStore.correct`)."""
    if predicate is not None:
        name = predicate_name(predicate)
        if not 2 <= len(name) <= 60:
            raise EditRefused("predicate", f"{predicate[:40]!r} needs words (2 to 60 characters), e.g. deploys_to")
        predicate = name
    if obj is not None:
        obj = " ".join(obj.split())
        if not 2 <= len(obj) <= MAX_NAME_CHARS:
            raise EditRefused("object", f"must name an entity in 2 to {MAX_NAME_CHARS} characters, e.g. GCP")
    return GraphStore(store.store).correct(user_id, relation, origin, predicate=predicate, obj=obj)
