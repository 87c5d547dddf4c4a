"""What the graph contributes to recall: the request's entities, their one-hop neighbourhood, recency.

:func:`graph_lines` reads a user's entities and relations against the request: the entities it
names (by name or alias, as whole words) come first with every open relation that touches them,
those sharing words with the request first; then the other open relations, newest first (the
background :mod:`herdsman.memory.injection` adds only when nothing is related). Relations are
rendered compactly, one line per subject entity (``- Atlas: [r:<id>] deploys to GCP; [r:<id>]
written in Go``), without dates: what a relation replaced ("was AWS until 2026-03-01"), its dates
and the relations that ended are injected only when the request is about change or time
(:func:`about_change`), since the current value is what answers anything else. Every item cites its
relation id (``[r:<id>]``) so the agent can say where a memory came from; :func:`describe` answers
the ``memory`` tool's "what do we know about X" with the whole history.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass

from herdsman.memory.facts import normalize, stems
from herdsman.memory.graph import Entity, Relation

_POSSESSIVE = re.compile(r"['’]s\b")
# words of a request about change or time: what a relation replaced is worth injecting then
CHANGE_WORDS = frozenset(
    "before earlier previously previous formerly former originally original history change changed changes moved "
    "move switched switch replaced since until ago prior past when used still anymore longer".split()
)


@dataclass(frozen=True)
class GraphView:
    """One user's graph, read once for a turn."""

    entities: Sequence[Entity]
    relations: Sequence[Relation]

    def name(self, eid: str) -> str:
        """The name of the entity ``eid`` (its id when it is gone)."""
        return next((e.name for e in self.entities if e.id == eid), eid)

    def replaced(self) -> list[tuple[Relation, Relation]]:
        """(old, current) for every closed relation an open one with its subject and predicate replaced."""
        current = {(r.subject, r.predicate): r for r in self.relations if r.open}
        return [
            (r, current[(r.subject, r.predicate)])
            for r in self.relations
            if not r.open
            and (r.subject, r.predicate) in current
            and current[(r.subject, r.predicate)].object != r.object
        ]


def outdated(replaced: Sequence[tuple[Relation, Relation]], text: str, mentions: set[str] | frozenset[str]) -> bool:
    """Whether ``text`` (a fact naming the entities ``mentions``) states what the graph knows was
    ``replaced`` (:meth:`GraphView.replaced`): it names a relation's subject, its old object and its
    predicate ("Atlas deploys to AWS" once Atlas deploys to GCP), not the current object. A fact the
    memory model did not forget when the user said the new value is then not presented as current."""
    said = stems(text)
    return any(
        {old.subject, old.object} <= mentions
        and new.object not in mentions
        and stems(old.predicate.replace("_", " ")) & said
        for old, new in replaced
    )


def named(entities: Sequence[Entity], text: str) -> list[Entity]:
    """The entities ``text`` names, by name or alias, as whole words ("Nova's" names Nova)."""
    padded = f" {normalize(_POSSESSIVE.sub('', text))} "
    return [e for e in entities if any(f" {n} " in padded for n in e.names())]


def _day(stamp: str | None) -> str:
    return (stamp or "")[:10]


def relation_line(view: GraphView, relation: Relation, history: Sequence[Relation] = ()) -> str:
    """``- [r:<id>] subject predicate object (since ...; was ... until ...)``."""
    words = relation.predicate.replace("_", " ")
    when = (
        [f"since {_day(relation.valid_from)}"]
        if relation.open
        else [f"from {_day(relation.valid_from)} until {_day(relation.valid_to)}"]
    )
    when += [f"was {view.name(old.object)} until {_day(old.valid_to)} [r:{old.id}]" for old in history]
    return f"- [r:{relation.id}] {view.name(relation.subject)} {words} {view.name(relation.object)} ({'; '.join(when)})"


def _replaced(view: GraphView, relation: Relation) -> list[Relation]:
    """The closed relations of the same subject and predicate (what ``relation`` replaced), newest first."""
    return [
        r
        for r in view.relations
        if not r.open and r.subject == relation.subject and r.predicate == relation.predicate and r.id != relation.id
    ]


def about_change(query: str) -> bool:
    """Whether ``query`` asks about change or time ("before", "used to", "since when", "still"), so
    what a relation replaced, and when, is worth its tokens."""
    return bool(set(normalize(query).split()) & CHANGE_WORDS)


def relation_item(view: GraphView, relation: Relation, history: Sequence[Relation] = (), dated: bool = False) -> str:
    """One relation within its subject's line: ``[r:<id>] predicate object``; ``dated``, with its
    time (when the user said it, or it replaced something) and the history it replaced
    (``(since ..., was ... until ... [r:<id>])``)."""
    text = f"[r:{relation.id}] {relation.predicate.replace('_', ' ')} {view.name(relation.object)}"
    if not dated:
        return text
    stated = relation.valid_from != relation.created_at  # not just the day it was learned
    when = (
        ([f"since {_day(relation.valid_from)}"] if stated or history else [])
        if relation.open
        else [f"from {_day(relation.valid_from)} until {_day(relation.valid_to)}"]
    )
    when += [f"was {view.name(old.object)} until {_day(old.valid_to)} [r:{old.id}]" for old in history]
    return f"{text} ({', '.join(when)})" if when else text


@dataclass(frozen=True)
class EntityLine:
    """What the section says about one entity: its name, then one item per relation it is the
    subject of, most relevant first (a tight budget keeps the first ones). ``known`` holds, per
    item, what the graph knows beside the words shown (the kinds and aliases of the entities, the
    month and year of a date shown): a fact that says nothing more ("Ann leads the Atlas project"
    beside "Ann: leads Atlas", Atlas a project) restates the line."""

    name: str
    items: tuple[str, ...]
    known: tuple[str, ...]
    ends: tuple[tuple[str, str], ...] = ()  # per item, the ids of its subject and object

    def render(self) -> str:
        """``- <name>: <item>; <item>...``."""
        return f"- {self.name}: {'; '.join(self.items)}"

    def states(self, index: int | None = None) -> str:
        """What the line (or its item ``index``) states: its words and what the graph knows of them."""
        if index is None:
            return " ".join((self.render(), *self.known))
        return f"{self.name}: {self.items[index]} {self.known[index]}"

    def keep(self, indexes: Sequence[int]) -> EntityLine:
        """The line with only the items at ``indexes``."""
        return EntityLine(
            self.name,
            tuple(self.items[i] for i in indexes),
            tuple(self.known[i] for i in indexes),
            tuple(self.ends[i] for i in indexes),
        )

    def plain(self, index: int) -> bool:
        """Whether item ``index`` says only the current value (no dates, no history)."""
        return "(" not in self.items[index]


def _known(view: GraphView, eid: str) -> str:
    """The kind and aliases of the entity ``eid`` (what a fact may call it)."""
    entity = next((e for e in view.entities if e.id == eid), None)
    return " ".join((entity.kind, *entity.aliases)) if entity is not None else ""


def _month(stamp: str | None) -> str:
    """``2026-03-01`` as ``March 2026`` (how a fact says it); '' when unreadable."""
    try:
        return dt.date.fromisoformat(_day(stamp)).strftime("%B %Y")
    except ValueError:
        return ""


def _by_subject(view: GraphView, items: Sequence[tuple[Relation, str]]) -> list[EntityLine]:
    """``items`` grouped into one line per subject, in the order of each subject's first item."""
    grouped: dict[str, list[tuple[Relation, str]]] = {}
    for relation, text in items:
        grouped.setdefault(relation.subject, []).append((relation, text))
    lines = []
    for subject, entries in grouped.items():
        known = [
            " ".join(
                (
                    _known(view, subject),
                    _known(view, r.object),
                    *((_month(r.valid_from), _month(r.valid_to)) if "(" in text else ()),
                )
            )
            for r, text in entries
        ]
        lines.append(
            EntityLine(
                view.name(subject),
                tuple(text for _, text in entries),
                tuple(known),
                tuple((r.subject, r.object) for r, _ in entries),
            )
        )
    return lines


def graph_lines(view: GraphView, query: str) -> tuple[list[EntityLine], list[EntityLine]]:
    """Lines about the entities ``query`` names and their neighbours, and lines of the other open
    relations (newest first): the first are injected before the facts, the second are background.
    What a relation replaced, and relations that ended, only when the request is
    :func:`about_change` (otherwise the current value is what answers it)."""
    ids = {e.id for e in named(view.entities, query)}
    dated = about_change(query)
    near: list[tuple[Relation, str]] = []
    shown: set[str] = set()
    for relation in view.relations:
        if relation.open and ids & {relation.subject, relation.object}:
            history = _replaced(view, relation) if dated else []
            near.append((relation, relation_item(view, relation, history, dated)))
            shown.update({relation.id, *(r.id for r in history)})
    if dated:
        for relation in view.relations:  # the ended ones nothing replaced (e.g. a project that stopped)
            if relation.id not in shown and not relation.open and ids & {relation.subject, relation.object}:
                near.append((relation, relation_item(view, relation, dated=True)))
                shown.add(relation.id)
    asked = stems(query)

    def overlap(entry: tuple[Relation, str]) -> int:
        return len(asked & stems(f"{view.name(entry[0].subject)} {entry[1]}"))

    near.sort(key=overlap, reverse=True)  # stable: newest first among equals
    recent = sorted(
        (r for r in view.relations if r.open and r.id not in shown), key=lambda r: r.updated_at, reverse=True
    )
    return _by_subject(view, near), _by_subject(view, [(r, relation_item(view, r)) for r in recent])


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
