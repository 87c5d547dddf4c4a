"""What the graph contributes to recall: the request's entities, their one-hop neighbourhood, recency.

:func:`graph_lines` reads a user's entities and relations against the request: the entities it
names (by name or alias, as whole words) come first with every relation that touches them, the
open ones with the history they replaced ("was ... until ..."), those sharing words with the
request first; then the other open relations,
newest first, for whatever budget is left. Every line cites its relation id (``[r:<id>]``) so the
agent can say where a memory came from; :func:`describe` answers the ``memory`` tool's "what do
we know about X" with the whole history.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from herdsman.memory.facts import normalize, stems
from herdsman.memory.graph import Entity, Relation


@dataclass(frozen=True)
class GraphView:
    """One user's graph, read once for a turn."""

    entities: Sequence[Entity]
    relations: Sequence[Relation]

    def name(self, eid: str) -> str:
        """The name of the entity ``eid`` (its id when it is gone)."""
        return next((e.name for e in self.entities if e.id == eid), eid)


def named(entities: Sequence[Entity], text: str) -> list[Entity]:
    """The entities ``text`` names, by name or alias, as whole words."""
    padded = f" {normalize(text)} "
    return [e for e in entities if any(f" {n} " in padded for n in e.names())]


def _day(stamp: str | None) -> str:
    return (stamp or "")[:10]


def relation_line(view: GraphView, relation: Relation, history: Sequence[Relation] = ()) -> str:
    """``- [r:<id>] subject predicate object (since ...; was ... until ...)``."""
    words = relation.predicate.replace("_", " ")
    when = [f"since {_day(relation.valid_from)}"] if relation.open else [
        f"from {_day(relation.valid_from)} until {_day(relation.valid_to)}"]
    when += [f"was {view.name(old.object)} until {_day(old.valid_to)} [r:{old.id}]" for old in history]
    return f"- [r:{relation.id}] {view.name(relation.subject)} {words} {view.name(relation.object)} ({'; '.join(when)})"


def _replaced(view: GraphView, relation: Relation) -> list[Relation]:
    """The closed relations of the same subject and predicate (what ``relation`` replaced), newest first."""
    return [r for r in view.relations
            if not r.open and r.subject == relation.subject and r.predicate == relation.predicate and r.id != relation.id]


def graph_lines(view: GraphView, query: str) -> tuple[list[str], list[str]]:
    """Lines about the entities ``query`` names and their neighbours, and the other open relations
    (newest first): the first are injected before the facts, the second after the relevant ones."""
    ids = {e.id for e in named(view.entities, query)}
    near: list[str] = []
    shown: set[str] = set()
    for relation in view.relations:
        if relation.open and ids & {relation.subject, relation.object}:
            history = _replaced(view, relation)
            near.append(relation_line(view, relation, history))
            shown.update({relation.id, *(r.id for r in history)})
    for relation in view.relations:  # the ended ones nothing replaced (e.g. a project that stopped)
        if relation.id not in shown and not relation.open and ids & {relation.subject, relation.object}:
            near.append(relation_line(view, relation))
            shown.add(relation.id)
    asked = stems(query)
    near.sort(key=lambda line: len(asked & stems(line)), reverse=True)  # stable: newest first among equals
    recent = sorted((r for r in view.relations if r.open and r.id not in shown), key=lambda r: r.updated_at, reverse=True)
    return near, [relation_line(view, r) for r in recent]


def describe(view: GraphView, entity: Entity) -> str:
    """Everything the graph knows about ``entity``: kind, aliases, and every relation with its time."""
    head = f"{entity.name} [{entity.id}] ({entity.kind})"
    if entity.aliases:
        head += f", also called {', '.join(entity.aliases)}"
    touching = [r for r in view.relations if entity.id in (r.subject, r.object)]
    now = [relation_line(view, r) for r in touching if r.open]
    past = [relation_line(view, r) for r in touching if not r.open]
    parts = [head, "Now:", *(now or ["- (nothing)"])]
    if past:
        parts += ["History:", *past]
    return "\n".join(parts)
