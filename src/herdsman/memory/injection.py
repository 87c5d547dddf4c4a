"""Choose what the model is told about the user: the most relevant facts within a token budget.

Relevance is keyword overlap between a fact and the user's message, then confidence, then
recency; facts are added until the budget (``memory.max_injected_tokens``) would be passed.
Tokens are estimated at four characters each, the same estimate everywhere in this module.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from herdsman.memory.embeddings import semantic_scores
from herdsman.memory.facts import Fact

_WORD = re.compile(r"[a-z0-9][a-z0-9+#.-]*")
STOPWORDS = frozenset(
    "the a an and or but if then of to in on at for with by from is are was were be been it this that "
    "these those i you he she we they me my your our their as so do does did not no yes can could "
    "would should will shall may might have has had what which who whom how why when where please "
    "about into over under than too very just also any all some more most such only own same".split()
)
HEADER = (
    "<memory>\nWhat you remember about the user from earlier conversations (it may be outdated; "
    "the user's words in this conversation win):"
)
FOOTER = "</memory>"


def estimate_tokens(text: str) -> int:
    """About four characters a token."""
    return (len(text) + 3) // 4


def keywords(text: str) -> set[str]:
    """The content words of ``text``, lowercase, without stopwords or very short words."""
    return {w.strip(".-") for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in STOPWORDS}


def rank(facts: Sequence[Fact], query: str, embedding_model: str | None = None) -> list[Fact]:
    """``facts``, most relevant to ``query`` first, then by confidence and recency.

    Relevance is semantic similarity when ``embedding_model`` is set (and loads), keyword
    overlap otherwise.
    """
    scores, _ = relevance(query, [f.content for f in facts], embedding_model)
    order = sorted(range(len(facts)), key=lambda i: (scores[i], facts[i].confidence, facts[i].updated_at), reverse=True)
    return [facts[i] for i in order]


def relevance(query: str, texts: Sequence[str], embedding_model: str | None = None) -> tuple[list[float], str]:
    """How relevant each of ``texts`` is to ``query``, and by what: ``"meaning"`` (cosine
    similarity, when ``embedding_model`` is set and loads) or ``"keywords"`` (shared content
    words, weighted down for long texts; 0 when none are shared)."""
    similarity = semantic_scores(embedding_model, query, texts) if texts else None
    if similarity is not None:
        return similarity, "meaning"
    wanted = keywords(query)

    def overlap(text: str) -> float:
        words = keywords(text)
        return len(words & wanted) / (len(words) ** 0.5) if words and wanted else 0.0

    return [overlap(t) for t in texts], "keywords"


def render_memory(
    facts: Sequence[Fact], summary: str, query: str, budget_tokens: int, embedding_model: str | None = None
) -> str:
    """The ``<memory>`` section for the system prompt, within ``budget_tokens`` ('' when nothing fits)."""
    if budget_tokens <= 0 or (not facts and not summary):
        return ""
    lines = [HEADER]
    used = estimate_tokens(HEADER) + estimate_tokens(FOOTER) + 2
    if summary:
        line = f"Context: {summary}"
        cost = estimate_tokens(line) + 1
        if used + cost <= budget_tokens:
            lines.append(line)
            used += cost
    added = 0
    for fact in rank(facts, query, embedding_model):
        line = f"- [{fact.category}] {fact.content}"
        cost = estimate_tokens(line) + 1
        if used + cost > budget_tokens:
            continue
        lines.append(line)
        used += cost
        added += 1
    if added == 0 and len(lines) == 1:
        return ""
    lines.append(FOOTER)
    return "\n".join(lines)
