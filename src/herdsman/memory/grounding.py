"""How sure a remembered relation is, from where it came from, not from what the memory model says.

Facts the memory model learns need the user's words that say them (:mod:`herdsman.memory.support`:
a fact without them is refused, one with them is at most :data:`STATED` sure). Relations of the
graph are capped here. Small memory models give everything a confidence of 1.0, so the model's
figure is only an upper bound; the cap comes from the evidence in the conversation:

- the user said it (at least half of the fact's content words appear in the user's own turns):
  at most :data:`STATED`;
- only the assistant or a tool said it (an inference about the user): at most :data:`INFERRED`;
- nowhere in the conversation: at most :data:`UNSUPPORTED`, below the default
  ``memory.min_confidence``, so a made-up fact is dropped.

A fact learned again in another thread gains :data:`REINFORCED`, up to :data:`LEARNED_CAP`
(:meth:`herdsman.memory.facts.Fact.merged_with`). Facts a user adds or edits themselves (settings,
CLI) keep the confidence given. Word matching is by :func:`~herdsman.memory.facts.stem` (a final "s"
dropped, then the first five letters), so "prefers" and "preference", "lives" and "live" count as
the same word; no stemming library is needed for a cap this coarse.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from herdsman.memory.facts import Fact, normalize, stems
from herdsman.memory.graph_schema import ExtractedRelation

R = TypeVar("R", bound=ExtractedRelation)

STATED = 0.9
INFERRED = 0.6
UNSUPPORTED = 0.3
REINFORCED = 0.1
LEARNED_CAP = 0.95
# words that say nothing about which turn a fact came from
_IGNORED = frozenset(
    "the and for with that this from into their they them user users likes like wants prefers "
    "prefer usually always often has have had are was were is be been being uses use using works".split()
)


def _stems(text: str) -> set[str]:
    return stems(text, _IGNORED)


def _cover(fact_stems: set[str], text_stems: set[str]) -> float:
    return len(fact_stems & text_stems) / len(fact_stems) if fact_stems else 0.0


def evidence_cap(content: str, conversation: Iterable[Mapping[str, Any]]) -> float:
    """The most confidence ``content`` can have, given who said its words in ``conversation``
    (``{role, content}`` items, as the memory queue keeps them)."""
    fact_stems = _stems(content)
    said: dict[bool, set[str]] = {True: set(), False: set()}
    for turn in conversation:
        said[str(turn.get("role", "user")) in ("user", "human")] |= _stems(str(turn.get("content", "")))
    if _cover(fact_stems, said[True]) >= 0.5:
        return STATED
    if _cover(fact_stems, said[True] | said[False]) >= 0.5:
        return INFERRED
    return UNSUPPORTED


def grounded(facts: Iterable[Fact], conversation: list[Mapping[str, Any]]) -> list[Fact]:
    """``facts`` with each confidence capped by its evidence in ``conversation``."""
    return [replace(f, confidence=min(f.confidence, evidence_cap(f.content, conversation))) for f in facts]


def _said_by_user(name: str, conversation: Iterable[Mapping[str, Any]]) -> bool:
    """True when the user's turns hold ``name``: most of its content words, or all its words
    (a short name such as "Go" has no content word of three letters)."""
    turns = list(conversation)
    if evidence_cap(name, turns) >= STATED:
        return True
    said = {
        w
        for t in turns
        if str(t.get("role", "user")) in ("user", "human")
        for w in normalize(str(t.get("content", ""))).split()
    }
    wanted = normalize(name).split()
    return bool(wanted) and all(w in said for w in wanted)


def grounded_relations(relations: Iterable[R], conversation: Sequence[Mapping[str, Any]]) -> list[R]:
    """``relations`` with each confidence capped by the evidence for their subject and object in
    ``conversation``. The predicate is the memory model's wording ("role", "advised_by"), rarely the
    user's, and the subject is often the user, whom their own turns do not name ("I work at RIKEN
    as a postdoc" is "Hana role postdoc"): the object alone, if said, is half the evidence. The
    object must be the user's words, though: "Ana works_at Google" from "I'm Ana, my project
    deploys to GCP" names Ana, not Google, and is a guess (:data:`UNSUPPORTED`)."""
    capped = []
    for r in relations:
        cap = evidence_cap(f"{r.subject} {r.object}", conversation)
        if not _said_by_user(r.object, conversation):
            cap = UNSUPPORTED
        capped.append(r.model_copy(update={"confidence": min(r.confidence, cap)}))
    return capped


def reinforced(old: float, new: float, same_source: bool) -> float:
    """The confidence of a fact learned again: the higher of the two, plus :data:`REINFORCED` when
    another thread taught it (a retried update of the same thread adds nothing)."""
    best = max(old, new)
    if same_source or best >= LEARNED_CAP:
        return best
    return min(LEARNED_CAP, best + REINFORCED)
