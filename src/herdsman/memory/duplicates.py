"""Are two facts the same fact in other words? Normalise both, then compare with RapidFuzz.

"Ann prefers dark mode", "The user likes dark mode." and "user loves the dark mode" are one
fact. :func:`canonical` brings a fact to a comparable form: lowercase words, without the words
that only say whose fact it is ("the user") or glue ("the", "a"), with a few verbs of the same
meaning mapped to one ("likes", "loves", "prefers" -> "prefer"). :func:`similarity` then compares
the two word sequences with RapidFuzz, word by word, in order (Indel similarity: twice the longest
common subsequence over both lengths), so "deploys to AWS" and "deploys to GCP", or "tabs over
spaces" and "spaces over tabs", stay two facts, where a comparison of characters or of sorted
words would merge them. A fact that restates another with a few more words ("works at Acme" /
"works at Acme as an SRE") is the same fact. A negation on one side only ("uses tabs" / "never
uses tabs") is never a duplicate.

RapidFuzz is a maintained C++ implementation of these measures (on any sequences, words here);
the synonym table is ours, kept small on purpose (a wrong merge loses a fact, a missed one costs
one line of memory).
"""

from __future__ import annotations

from rapidfuzz.distance import Indel, LCSseq

from herdsman.memory.facts import normalize

SAME = 0.85  # similarity from which two facts are one
SUBSET_LENGTH = 0.6  # a restatement: the shorter form, all in the longer, has this share of its words
FILLER = frozenset("the a an user s users their his her its is are of to".split())
NEGATIONS = frozenset("not never no don t doesn dislikes dislike avoids avoid hates hate".split())
SYNONYMS = {
    "likes": "prefer",
    "like": "prefer",
    "loves": "prefer",
    "love": "prefer",
    "prefers": "prefer",
    "favours": "prefer",
    "favors": "prefer",
    "wants": "prefer",
    "want": "prefer",
    "uses": "use",
    "using": "use",
    "used": "use",
    "works": "work",
    "working": "work",
    "lives": "live",
    "living": "live",
    "based": "live",
    "resides": "live",
    "deploys": "deploy",
    "deployed": "deploy",
    "deploying": "deploy",
    "ships": "deploy",
    "writes": "write",
    "written": "write",
    "wrote": "write",
}


def canonical(text: str) -> list[str]:
    """The words of ``text`` that carry its meaning, synonyms mapped to one word."""
    return [SYNONYMS.get(w, w) for w in normalize(text).split() if w not in FILLER]


def _negated(words: list[str]) -> bool:
    return any(w in NEGATIONS for w in words)


def similarity(a: str, b: str) -> float:
    """How alike two facts are, 0 to 1 (see the module docstring)."""
    wa, wb = canonical(a), canonical(b)
    if not wa or not wb or _negated(wa) != _negated(wb):
        return 0.0
    shorter, longer = sorted((len(wa), len(wb)))
    if LCSseq.similarity(wa, wb) == shorter and shorter >= SUBSET_LENGTH * longer:
        return 1.0
    return float(Indel.normalized_similarity(wa, wb))


def same_fact(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` say the same thing (:func:`similarity` of :data:`SAME` or more)."""
    return similarity(a, b) >= SAME


__all__ = ["SAME", "canonical", "same_fact", "similarity"]
