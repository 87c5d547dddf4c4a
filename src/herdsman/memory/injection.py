"""Choose what the model is told about the user: the most relevant memory within a token budget.

In order, until the budget (``memory.max_injected_tokens``) would be passed: the context
summary; the relations of the entities the request names and of their neighbours (with the
history they replaced, :mod:`herdsman.memory.recall`); the facts relevant to the request
(meaning or keyword overlap, then confidence, then recency); then, as background within
:data:`BACKGROUND_SHARE` of the budget, the other open relations, newest first, and the remaining
facts (a large memory does not fill the budget with what the request is not about). A line that says nothing a line already in does not say (a fact
that restates a relation, "Atlas is written in Go" after "Atlas written in Go") is left out.
Each line cites its id (``[f:<id>]`` a fact, ``[r:<id>]`` a
relation), so the agent can say where a memory came from. Tokens are estimated at four
characters each, the same estimate everywhere in this module.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from herdsman.memory.embeddings import semantic_scores
from herdsman.memory.facts import Fact, stems
from herdsman.memory.recall import GraphView, graph_lines

_WORD = re.compile(r"[a-z0-9][a-z0-9+#.-]*")
STOPWORDS = frozenset(
    "the a an and or but if then of to in on at for with by from is are was were be been it this that "
    "these those i you he she we they me my your our their him her his its them us as so do does did not no yes can could "
    "would should will shall may might have has had what which who whom how why when where please "
    "about into over under than too very just also any all some more most such only own same".split()
)
# the share of the budget that memory unrelated to the request may take (recent relations, facts
# sharing no word or meaning with it): a little background, not the whole budget
BACKGROUND_SHARE = 0.25
HEADER = (
    "<memory>\nWhat you remember about the user from earlier conversations (it may be outdated; "
    "the user's words in this conversation win):"
)
FOOTER = "</memory>"
# A <memory> or </memory> tag inside what is remembered (a fact, an entity's name, the summary):
# its "<" is escaped so no stored text can close the section and speak as the system prompt.
_TAG = re.compile(r"<(?=\s*/?\s*memory\b)", re.IGNORECASE)
# what a line cites and when, not what it says: "[f:...]", "[project]", "(since 2026-03-01; ...)"
_TAGS = re.compile(r"\[[^\]]*\]|\([^)]*\)")


def inline(text: str) -> str:
    """``text`` as one line of the section: whitespace (newlines too) collapsed, so no stored text
    starts a line of its own, and memory tags escaped (see :data:`_TAG`)."""
    return _TAG.sub("&lt;", " ".join(text.split()))


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
    return [fact for fact, _ in scored(facts, query, embedding_model)]


def scored(facts: Sequence[Fact], query: str, embedding_model: str | None = None) -> list[tuple[Fact, float]]:
    """:func:`rank` with each fact's relevance score."""
    scores, _ = relevance(query, [f.content for f in facts], embedding_model)
    order = sorted(range(len(facts)), key=lambda i: (scores[i], facts[i].confidence, facts[i].updated_at), reverse=True)
    return [(facts[i], scores[i]) for i in order]


def fact_line(fact: Fact) -> str:
    """A fact as injected: ``- [f:<id>] [<category>] <content>``."""
    return f"- [f:{fact.id}] [{fact.category}] {fact.content}"


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


def gist(line: str) -> set[str]:
    """The content words (stems) of a memory line, without its id, category and dates: what it says."""
    return stems(_TAGS.sub(" ", line), STOPWORDS)


def render_memory(
    facts: Sequence[Fact], summary: str, query: str, budget_tokens: int, embedding_model: str | None = None,
    graph: GraphView | None = None,
) -> str:
    """The ``<memory>`` section for the system prompt, within ``budget_tokens`` ('' when nothing fits)."""
    near, recent = graph_lines(graph, query) if graph is not None else ([], [])
    if budget_tokens <= 0 or (not facts and not summary and not near and not recent):
        return ""
    ranked = scored(facts, query, embedding_model)
    candidates = [  # (line, related to the request)
        *([(f"Context: {summary}", True)] if summary else []),
        *((line, True) for line in near),
        *((fact_line(f), True) for f, score in ranked if score > 0),
        *((line, False) for line in recent),
        *((fact_line(f), False) for f, score in ranked if score <= 0),
    ]
    lines = [HEADER]
    said: list[set[str]] = []
    used = estimate_tokens(HEADER) + estimate_tokens(FOOTER) + 2
    background, allowance = 0, int(budget_tokens * BACKGROUND_SHARE)
    for line, related in ((inline(text), related) for text, related in candidates):  # stored text never leaves the section
        words = gist(line)
        if any(words <= earlier for earlier in said):
            continue  # a restatement of a line already in (a fact that says what a relation says)
        cost = estimate_tokens(line) + 1
        if used + cost > budget_tokens or (not related and background + cost > allowance):
            continue
        lines.append(line)
        said.append(words)
        used += cost
        background += 0 if related else cost
    if len(lines) == 1:
        return ""
    lines.append(FOOTER)
    return "\n".join(lines)
