"""Each user's graph of entities and relations with validity time, kept in the memory BaseStore.

Layout, beside the facts: entities under ``("memory", <user>, "graph", "entities")`` keyed by
:func:`entity_id` of their name, value ``{name, kind, aliases, created_at, updated_at}``;
relations under ``("memory", <user>, "graph", "relations")``, value ``{subject, predicate,
object, valid_from, valid_to, confidence, source_thread, source_run, created_at, updated_at}``
(subject and object are entity ids). A relation is open while ``valid_to`` is null.

Writing is idempotent: the same open relation written again is refreshed, not doubled. A new
relation whose predicate is single-valued (:data:`~herdsman.memory.graph_schema.SINGLE_VALUED`)
closes the subject's open relation with that predicate and another object (its ``valid_to`` is
the new one's ``valid_from``), so the graph keeps a history instead of two conflicting truths.
Every write leaves an audit record (:mod:`herdsman.memory.audit`).

Written by hand: LangGraph's stores keep items, not graphs, and a graph database would be a
new server for the default install; a user's graph is small enough to read whole.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, replace
from typing import Any

from langgraph.store.base import BaseStore

from herdsman.memory.audit import Origin, record
from herdsman.memory.facts import KeyedRecord, normalize, now_iso
from herdsman.memory.graph_schema import KINDS, SINGLE_VALUED, EndedRelation, ExtractedEntity, ExtractedRelation
from herdsman.memory.store import LIST_LIMIT, ROOT, user_label


def entity_id(name: str) -> str:
    """The stable id of an entity's name (``e`` and a hash)."""
    return "e" + hashlib.sha256(normalize(name).encode()).hexdigest()[:12]


def relation_id(subject: str, predicate: str, obj: str, nth: int = 0) -> str:
    """The id of the ``nth`` (0: first) time ``subject predicate obj`` became true (``r`` and a hash)."""
    return "r" + hashlib.sha256(f"{subject}|{predicate}|{obj}|{nth}".encode()).hexdigest()[:12]


def entities_namespace(user_id: str) -> tuple[str, ...]:
    """Where a user's entities live."""
    return (ROOT, user_label(user_id), "graph", "entities")


def relations_namespace(user_id: str) -> tuple[str, ...]:
    """Where a user's relations live."""
    return (ROOT, user_label(user_id), "graph", "relations")


@dataclass(frozen=True)
class Entity:
    """A person, project, repository, service, preference or other thing the user talks about."""

    id: str
    name: str
    kind: str = "other"
    aliases: tuple[str, ...] = ()
    created_at: str = ""
    updated_at: str = ""

    def names(self) -> list[str]:
        """The name and the aliases, normalized."""
        return [n for n in (normalize(self.name), *(normalize(a) for a in self.aliases)) if n]

    def to_value(self) -> dict[str, Any]:
        """The record kept in the store (the id is the key)."""
        value = asdict(self)
        value.pop("id")
        value["aliases"] = list(self.aliases)
        return value

    @classmethod
    def from_value(cls, key: str, value: dict[str, Any]) -> Entity:
        """Rebuild an entity from its key and record."""
        return cls(
            key,
            str(value.get("name", key)),
            str(value.get("kind", "other")),
            tuple(value.get("aliases") or ()),
            str(value.get("created_at", "")),
            str(value.get("updated_at", "")),
        )


@dataclass(frozen=True)
class Relation(KeyedRecord):
    """``subject predicate object`` (entity ids), true from ``valid_from`` until ``valid_to`` (None: still)."""

    id: str
    subject: str
    predicate: str
    object: str
    valid_from: str
    valid_to: str | None = None
    confidence: float = 0.8
    source_thread: str | None = None
    source_run: str | None = None
    created_at: str = ""
    updated_at: str = ""

    @property
    def open(self) -> bool:
        """Still true (not contradicted, not ended)."""
        return self.valid_to is None


class GraphStore:
    """Read and write the graphs of users in a BaseStore (see the module docstring)."""

    def __init__(self, store: BaseStore) -> None:
        """``store``: the memory BaseStore (SQLite, Postgres, in-memory)."""
        self.store = store

    # -- reading ------------------------------------------------------------------------

    def entities(self, user_id: str) -> list[Entity]:
        """Every entity of the user, by name."""
        items = self.store.search(entities_namespace(user_id), limit=LIST_LIMIT)
        return sorted((Entity.from_value(i.key, i.value) for i in items), key=lambda e: e.name.lower())

    def relations(self, user_id: str) -> list[Relation]:
        """Every relation of the user (open and closed), newest first."""
        items = self.store.search(relations_namespace(user_id), limit=LIST_LIMIT)
        return sorted(
            (Relation.from_value(i.key, i.value) for i in items),
            key=lambda r: (r.valid_from, r.updated_at),
            reverse=True,
        )

    def get_relation(self, user_id: str, rid: str) -> Relation | None:
        """One relation by id, or None."""
        item = self.store.get(relations_namespace(user_id), rid)
        return Relation.from_value(item.key, item.value) if item else None

    def find(self, user_id: str, name: str, entities: list[Entity] | None = None) -> Entity | None:
        """The entity called ``name`` (or with it as an alias), or None."""
        wanted = normalize(name)
        direct = self.store.get(entities_namespace(user_id), entity_id(name))
        if direct is not None:
            return Entity.from_value(direct.key, direct.value)
        return next(
            (e for e in (entities if entities is not None else self.entities(user_id)) if wanted in e.names()), None
        )

    # -- writing ------------------------------------------------------------------------

    def put_entity(self, user_id: str, found: ExtractedEntity, origin: Origin) -> Entity:
        """Add the entity, or merge its kind and aliases into the one with that name or alias."""
        stamp = now_iso()
        existing = self.find(user_id, found.name)
        if existing is None:
            entity = Entity(
                entity_id(found.name), found.name, found.kind, tuple(dict.fromkeys(found.aliases)), stamp, stamp
            )
        else:
            names = set(existing.names())
            aliases = [*existing.aliases, *(a for a in (found.name, *found.aliases) if normalize(a) not in names)]
            kind = existing.kind if found.kind == "other" else found.kind
            entity = replace(existing, kind=kind, aliases=tuple(dict.fromkeys(aliases)), updated_at=stamp)
        self.store.put(entities_namespace(user_id), entity.id, entity.to_value())
        record(self.store, user_label(user_id), "put", "entity", entity.id, origin)
        return entity

    def _named(self, user_id: str, name: str, origin: Origin) -> Entity:
        return self.find(user_id, name) or self.put_entity(user_id, ExtractedEntity(name=name), origin)

    def put_relation(self, user_id: str, found: ExtractedRelation, origin: Origin) -> Relation:
        """Add the relation (or refresh the same open one); a single-valued predicate closes the
        subject's open relation to another object. Unknown entities are added (kind other)."""
        subject = self._named(user_id, found.subject, origin)
        obj = self._named(user_id, found.object, origin)
        stamp = now_iso()
        since = found.valid_from or stamp
        same = [r for r in self.relations(user_id) if r.subject == subject.id and r.predicate == found.predicate]
        current = next((r for r in same if r.object == obj.id and r.open), None)
        if current is not None:
            kept = replace(current, confidence=max(current.confidence, found.confidence), updated_at=stamp)
        else:
            nth = sum(1 for r in same if r.object == obj.id)
            kept = Relation(
                relation_id(subject.id, found.predicate, obj.id, nth),
                subject.id,
                found.predicate,
                obj.id,
                since,
                None,
                found.confidence,
                origin.thread_id,
                origin.run_id,
                stamp,
                stamp,
            )
        self._close_replaced(user_id, kept, same, origin)
        self.store.put(relations_namespace(user_id), kept.id, kept.to_value())
        record(self.store, user_label(user_id), "put", "relation", kept.id, origin)
        return kept

    def _close_replaced(self, user_id: str, kept: Relation, same: list[Relation], origin: Origin) -> None:
        """When ``kept`` is open and its predicate single-valued, close the relations of ``same`` (its
        subject and predicate) that are open with another object: the new one replaced them."""
        if kept.open and kept.predicate in SINGLE_VALUED:
            for old in same:
                if old.open and old.object != kept.object and old.id != kept.id:
                    self.close(user_id, old, max(old.valid_from, kept.valid_from), origin)

    def correct(
        self,
        user_id: str,
        relation: Relation,
        origin: Origin,
        *,
        predicate: str | None = None,
        obj: str | None = None,
    ) -> Relation:
        """``relation`` was wrong: it becomes ``subject predicate obj`` (each unchanged when None), with
        the same validity, certain (the user said so), under a new id; the old record goes. An
        ``obj`` no entity names yet is added. An open correction with a single-valued predicate
        closes the subject's other open relation with it, as a new relation does. The audit trail
        has the old id deleted and the new one ``correct`` with the old id in ``sources``."""
        target = self._named(user_id, obj, origin).id if obj is not None else relation.object
        predicate = predicate or relation.predicate
        if (predicate, target) == (relation.predicate, relation.object):
            return relation
        same = [
            r
            for r in self.relations(user_id)
            if r.subject == relation.subject and r.predicate == predicate and r.id != relation.id
        ]
        nth = sum(1 for r in same if r.object == target)
        fixed = replace(
            relation,
            id=relation_id(relation.subject, predicate, target, nth),
            predicate=predicate,
            object=target,
            confidence=1.0,
            updated_at=now_iso(),
        )
        label = user_label(user_id)
        self.store.delete(relations_namespace(user_id), relation.id)
        record(self.store, label, "delete", "relation", relation.id, origin)
        self._close_replaced(user_id, fixed, same, origin)
        self.store.put(relations_namespace(user_id), fixed.id, fixed.to_value())
        record(self.store, label, "correct", "relation", fixed.id, origin, sources=[relation.id])
        return fixed

    def end(self, user_id: str, ended: EndedRelation, origin: Origin) -> list[Relation]:
        """Close the open relations ``ended`` names (at its ``valid_to``, else now): those of its subject
        and object with its predicate, or with any predicate when none has it (the memory model does
        not see the graph, so it may word the predicate differently); what was closed."""
        subject, obj = self.find(user_id, ended.subject), self.find(user_id, ended.object)
        if subject is None or obj is None:
            return []
        between = [r for r in self.relations(user_id) if r.open and (r.subject, r.object) == (subject.id, obj.id)]
        matching = [r for r in between if r.predicate == ended.predicate] or between
        when = ended.valid_to or now_iso()
        return [self.close(user_id, r, max(r.valid_from, when), origin) for r in matching]

    def close(self, user_id: str, relation: Relation, when: str, origin: Origin) -> Relation:
        """End ``relation`` at ``when`` (it stays, as history)."""
        closed = replace(relation, valid_to=when, updated_at=now_iso())
        self.store.put(relations_namespace(user_id), closed.id, closed.to_value())
        record(self.store, user_label(user_id), "close", "relation", closed.id, origin)
        return closed

    def delete_entity(self, user_id: str, eid: str, origin: Origin) -> bool:
        """Forget an entity and every relation that names it; False when there is no such entity."""
        if self.store.get(entities_namespace(user_id), eid) is None:
            return False
        for relation in self.relations(user_id):
            if eid in (relation.subject, relation.object):
                self.delete_relation(user_id, relation.id, origin)
        self.store.delete(entities_namespace(user_id), eid)
        record(self.store, user_label(user_id), "delete", "entity", eid, origin)
        return True

    def delete_relation(self, user_id: str, rid: str, origin: Origin) -> bool:
        """Forget one relation; False when there is none with that id."""
        if self.get_relation(user_id, rid) is None:
            return False
        self.store.delete(relations_namespace(user_id), rid)
        record(self.store, user_label(user_id), "delete", "relation", rid, origin)
        return True


__all__ = ["KINDS", "Entity", "GraphStore", "Relation", "entity_id", "relation_id"]
