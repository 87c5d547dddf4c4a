"""Choose what the model is told about the user: the most relevant memory within a token budget.

In order, until the budget (``memory.max_injected_tokens``) would be passed: the context
summary; one line per entity for the entities the request names and their neighbours, with their
current relations (:mod:`herdsman.memory.recall`; what a relation replaced, and dates, only when
the request is about change or time); the facts relevant to the request (a shared content word,
or a similarity of meaning above :data:`RELATED_FROM`; by relevance, then confidence, then
recency). Only when nothing in memory relates to the request
(a greeting, a new subject) comes background, within :data:`BACKGROUND_SHARE` of the budget: the
other open relations, newest first, then the remaining facts; a request about something is not
padded with what it is not about.

Nothing is said twice: a fact that says nothing a line already in does not say ("Atlas is
written in Go" beside "Atlas: written in Go") is left out, and goes if a relation line saying it
comes later; a relation that a fact says in fuller words (all of its words, or, for a current
value, both of its entities: "The team chose pnpm over npm for Nova" says "Nova: uses pnpm") is
left out of its entity's line; a fact that says less than a fact in goes; a fact stating a value
the graph knows was replaced (:func:`~herdsman.memory.recall.outdated`) is left out unless the
request is about change. Words that only say
when (months, years, "since") count only when the request is about time, since dates are not
shown otherwise. Each item cites its id (``[f:<id>]`` a fact, ``[r:<id>]`` a relation), so the
agent can say where a memory came from. Tokens are estimated at four characters each, the same
estimate everywhere in this module.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from herdsman.memory.embeddings import semantic_scores
from herdsman.memory.facts import Fact, normalize, stem
from herdsman.memory.recall import EntityLine, GraphView, about_change, graph_lines, named, outdated

_WORD = re.compile(r"[a-z0-9][a-z0-9+#.-]*")
STOPWORDS = frozenset(
    "the a an and or but if then of to in on at for with by from is are was were be been it this that "
    "these those i you he she we they me my your our their him her his its them us as so do does did not no yes "
    "can could "
    "would should will shall may might have has had what which who whom how why when where please "
    "about into over under than too very just also any all some more most such only own same".split()
)
# the share of the budget that memory unrelated to the request (recent relations, facts sharing no
# word or meaning with it) may take when nothing is related: a little background, not the whole budget
BACKGROUND_SHARE = 0.25
# Above which relevance score a fact is related to the request: any shared content word; by meaning,
# a cosine similarity above 0.25 (MiniLM puts unrelated sentences below about 0.2, "Hello there!"
# against "Ann prefers short answers" 0.22, and a paraphrase above 0.3), not any positive one,
# which nearly every pair of sentences has.
RELATED_FROM = {"keywords": 0.0, "meaning": 0.25}
HEADER = (
    "<memory>\nWhat you remember about the user from earlier conversations (it may be outdated; "
    "the user's words in this conversation win):"
)
FOOTER = "</memory>"
# A <memory> or </memory> tag inside what is remembered (a fact, an entity's name, the summary):
# its "<" is escaped so no stored text can close the section and speak as the system prompt.
_TAG = re.compile(r"<(?=\s*/?\s*memory\b)", re.IGNORECASE)
# what a line cites, not what it says: "[f:...]", "[r:...]", "[project]"
_CITES = re.compile(r"\[[^\]]*\]")
# words that only say when: month names, years and dates, "since", "until", "now"
_WHEN = re.compile(
    r"\b(?:since|until|now|currently|today|ago|jan(?:uary)?|feb(?:ruary)?|march|apr(?:il)?|june?|july?|aug(?:ust)?"
    r"|sep(?:t|tember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|\d{4}(?:-\d\d){0,2})\b",
    re.IGNORECASE,
)


def inline(text: str) -> str:
    """``text`` as one line of the section: whitespace (newlines too) collapsed, so no stored text
    starts a line of its own, and memory tags escaped (see :data:`_TAG`). NFKC first, and format
    characters (zero-width space, soft hyphen, word joiner...) dropped: a model reads a closing
    tag with a zero-width space after its "<", or one in full-width angle brackets, as the
    closing tag, which the escape would not see."""
    text = "".join(c for c in unicodedata.normalize("NFKC", text) if unicodedata.category(c) != "Cf")
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
    return _scored(facts, query, embedding_model)[0]


def _scored(facts: Sequence[Fact], query: str, embedding_model: str | None) -> tuple[list[tuple[Fact, float]], float]:
    """:func:`scored`, and the score above which a fact is related to ``query`` (:data:`RELATED_FROM`)."""
    scores, by = relevance(query, [f.content for f in facts], embedding_model)
    order = sorted(range(len(facts)), key=lambda i: (scores[i], facts[i].confidence, facts[i].updated_at), reverse=True)
    return [(facts[i], scores[i]) for i in order], RELATED_FROM[by]


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


def gist(line: str, dated: bool = True) -> set[str]:
    """The content words (stems) of a memory line, without its ids and category: what it says;
    not ``dated``, also without the words that only say when (months, years, "since", "now"),
    since dates are not shown then: a fact differs from a relation in what it says, not in when."""
    text = _CITES.sub(" ", line)
    words = normalize(text if dated else _WHEN.sub(" ", text)).split()
    return {stem(w) for w in words if w not in STOPWORDS and w != "s"}  # short words too: "Go" is not "C"


@dataclass
class _Entry:
    """A line chosen for the section: a fact or the context (``text``), or an entity's ``line``.
    ``mentions``: the entities a fact names (by name or alias)."""

    text: str
    words: set[str]
    related: bool
    line: EntityLine | None = None
    mentions: frozenset[str] = frozenset()

    @property
    def cost(self) -> int:
        """Its tokens, with its newline."""
        return estimate_tokens(self.text) + 1


class _Section:
    """The lines chosen so far, within the budget, none restating another (see :meth:`offer`)."""

    def __init__(self, budget_tokens: int, dated: bool, graph: GraphView | None) -> None:
        self.budget, self.dated, self.graph = budget_tokens, dated, graph
        self.replaced = graph.replaced() if graph is not None and not dated else []
        self.allowance = int(budget_tokens * BACKGROUND_SHARE)
        self.entries: list[_Entry] = []

    def _used(self, related: bool | None = None) -> int:
        """Tokens the chosen lines take (only the related ones, or only the others, when ``related`` is given)."""
        return sum(e.cost for e in self.entries if related is None or e.related == related)

    def _room(self, related: bool) -> int:
        """Tokens left for a line; for background, none once something related is in (see the module docstring)."""
        room = self.budget - estimate_tokens(HEADER) - estimate_tokens(FOOTER) - 2 - self._used()
        if related:
            return room
        return 0 if self._used(related=True) else min(room, self.allowance - self._used())

    def _line_entry(self, line: EntityLine, related: bool) -> _Entry:
        """An entity's line as an entry."""
        return _Entry(inline(line.render()), gist(line.states(), self.dated), related, line)

    def _restated(self, line: EntityLine, index: int, by: _Entry) -> bool:
        """Whether ``by`` says what item ``index`` of ``line`` says: all its words, or, for a fact,
        both entities of a current value ("The team chose pnpm over npm for Nova" says "Nova:
        uses pnpm", in the user's fuller words)."""
        if gist(line.states(index), self.dated) <= by.words:
            return True
        return by.line is None and line.plain(index) and set(line.ends[index]) <= by.mentions

    def _entry(self, candidate: str | EntityLine, related: bool) -> _Entry | None:
        """``candidate`` as an entry, without what an entry in already says; None when nothing is left."""
        if isinstance(candidate, str):
            mentions = frozenset(e.id for e in named(self.graph.entities, candidate)) if self.graph else frozenset()
            if self.replaced and outdated(self.replaced, candidate, mentions):
                return None  # what the graph knows was replaced, unless the request is about change
            entry = _Entry(inline(candidate), gist(candidate, self.dated), related, mentions=mentions)
            return None if any(entry.words <= e.words for e in self.entries) else entry
        new = [i for i in range(len(candidate.items)) if not any(self._restated(candidate, i, e) for e in self.entries)]
        return self._line_entry(candidate.keep(new), related) if new else None

    def offer(self, candidate: str | EntityLine, related: bool) -> None:
        """Take ``candidate`` (its first items that fit, for an entity's line) when it says something
        new and fits; then drop what it restates: the facts in already that say nothing more, and
        the items of an entity's line that a fact says as well ("prefers bullet points" beside
        "prefers weekly status reports in bullet points")."""
        room = self._room(related)
        if room <= 0 or (isinstance(candidate, str) and estimate_tokens(inline(candidate)) + 1 > room):
            return  # before reading what it says: a large memory has many a line that cannot fit
        entry = self._entry(candidate, related)
        while entry is not None and entry.cost > room:
            if entry.line is None or len(entry.line.items) == 1:
                return
            entry = self._line_entry(entry.line.keep(range(len(entry.line.items) - 1)), related)  # least relevant goes
        if entry is None:
            return
        kept = []
        for old in self.entries:
            if old.line is None and old.text.startswith("- ") and old.words <= entry.words:
                continue  # a fact the new line says all of
            if old.line is not None and entry.line is None:
                items = [i for i in range(len(old.line.items)) if not self._restated(old.line, i, entry)]
                if not items:
                    continue
                if len(items) < len(old.line.items):
                    old = self._line_entry(old.line.keep(items), old.related)
            kept.append(old)
        self.entries = [*kept, entry]

    def render(self) -> str:
        """The ``<memory>`` section, '' when nothing was chosen."""
        if not self.entries:
            return ""
        return "\n".join((HEADER, *(e.text for e in self.entries), FOOTER))


def render_memory(
    facts: Sequence[Fact],
    summary: str,
    query: str,
    budget_tokens: int,
    embedding_model: str | None = None,
    graph: GraphView | None = None,
) -> str:
    """The ``<memory>`` section for the system prompt, within ``budget_tokens`` ('' when nothing fits)."""
    near, recent = graph_lines(graph, query) if graph is not None else ([], [])
    if budget_tokens <= 0 or (not facts and not summary and not near and not recent):
        return ""
    ranked, threshold = _scored(facts, query, embedding_model)
    candidates: list[tuple[str | EntityLine, bool]] = [  # (line, related to the request)
        *([(f"Context: {summary}", True)] if summary else []),
        *((line, True) for line in near),
        *((fact_line(f), True) for f, score in ranked if score > threshold),
        *((line, False) for line in recent),
        *((fact_line(f), False) for f, score in ranked if score <= threshold),
    ]
    section = _Section(budget_tokens, about_change(query), graph)
    for candidate, related in candidates:
        section.offer(candidate, related)
    return section.render()
