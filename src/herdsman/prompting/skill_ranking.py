"""Rank the skills by how well they fit a request that names none: the pre-selection offered to
the model (``skills.auto_select``).

Each skill is a small document: its name (words weighted double), its description and its
``examples``. A request scores, for each skill, the sum of the weights of the terms the two share,
each term weighted by how few skills hold it (``log(1 + N / df)``: "csv" in three skills counts
less than "flowchart" in one), divided by the fourth root of the skill's length so a long
description does not win by size alone. Terms are language-neutral: words of scripts written with
spaces, cut to a crude stem (:func:`herdsman.memory.facts.stem`: "slides" and "slide" meet), and,
for scripts written without spaces (Chinese, Japanese, Thai...), each pair of neighbouring
characters, so "幻灯片" meets "幻灯" in a skill's Chinese example. A request in one language meets
a skill written in another only through what they share (file kinds, names, English words), which
is what ``examples`` in the user's languages are for.

Written by hand rather than with a BM25 library (bm25s, rank-bm25): twenty-odd documents of a few
hundred characters are scored in microseconds with a dict, the tokenizer (stems, CJK pairs) is the
part that matters and those libraries leave it to the caller, and a numeric stack in the hot path
of every model call buys nothing here.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from herdsman.memory.facts import UNSPACED, normalize, stem
from herdsman.memory.injection import STOPWORDS
from herdsman.skills.model import Skill

_UNSPACED_CHAR = re.compile(f"^[{UNSPACED}]$")
# words every request and skill is made of: they say nothing about which skill fits
GENERIC = STOPWORDS | frozenset(
    "use using used make made create write file files user users asks ask want need help skill skills "
    "mnt data outputs output uploads workspace turn into it's them one two like get put save".split()
)
NAME_WEIGHT = 2
# A skill is a candidate from this score (about one telling term shared) and, after the first,
# while it keeps this share of the best score; at most MAX_CANDIDATES are offered.
MIN_SCORE = 0.9
KEEP_SHARE = 0.5
MAX_CANDIDATES = 3
# ``activate`` takes the best skill only when it leads the next by this factor.
CLEAR_LEAD = 1.8


def terms(text: str) -> list[str]:
    """The terms of ``text``: stems of spaced words (two letters and more, not generic) and pairs
    of neighbouring characters of unspaced scripts (a lone one stays whole)."""
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if len(run) == 1:
            out.append(run[0])
        out.extend(a + b for a, b in zip(run, run[1:], strict=False))
        run.clear()

    for word in normalize(text).split():
        if _UNSPACED_CHAR.match(word):
            run.append(word)
            continue
        flush()
        if len(word) >= 2 and word not in GENERIC and not word.isdigit():
            out.append(stem(word))
    flush()
    return out


def skill_terms(skill: Skill) -> Counter[str]:
    """A skill's terms with their weights: its name's words count :data:`NAME_WEIGHT` times."""
    counts: Counter[str] = Counter()
    for term in terms(skill.name.replace("-", " ")):
        counts[term] += NAME_WEIGHT
    for term in terms(" ".join([skill.description, *skill.examples])):
        counts[term] += 1
    return counts


@dataclass(frozen=True)
class Candidate:
    """A skill that may fit the request, with its score and the terms it matched on."""

    skill: Skill
    score: float
    matched: tuple[str, ...]


class SkillRanker:
    """Scores requests against a fixed set of skills (built once, used on every model call)."""

    def __init__(self, skills: Mapping[str, Skill] | Iterable[Skill]) -> None:
        """``skills``: the usable skills (by name, or a sequence)."""
        values = list(skills.values()) if isinstance(skills, Mapping) else list(skills)
        self.skills = sorted(values, key=lambda s: s.name)
        self._terms = {s.name: skill_terms(s) for s in self.skills}
        df = Counter(t for counts in self._terms.values() for t in counts)
        n = len(self.skills)
        self._idf = {t: math.log(1 + n / d) for t, d in df.items()}
        self._norm = {name: max(1, sum(c.values())) ** 0.25 for name, c in self._terms.items()}

    def scores(self, request: str) -> list[Candidate]:
        """Every skill sharing a term with ``request``, best first (ties by name)."""
        asked = set(terms(request))
        out = []
        for skill in self.skills:
            counts = self._terms[skill.name]
            shared = sorted(t for t in asked if t in counts)
            if not shared:
                continue
            score = sum(self._idf[t] * min(counts[t], NAME_WEIGHT) for t in shared) / self._norm[skill.name]
            out.append(Candidate(skill, round(score, 3), tuple(shared)))
        return sorted(out, key=lambda c: (-c.score, c.skill.name))

    def candidates(self, request: str) -> list[Candidate]:
        """The skills worth offering for ``request`` (see :data:`MIN_SCORE`), best first."""
        ranked = [c for c in self.scores(request) if c.score >= MIN_SCORE]
        if not ranked:
            return []
        best = ranked[0].score
        return [c for c in ranked if c.score >= best * KEEP_SHARE][:MAX_CANDIDATES]

    def clear_choice(self, request: str) -> Skill | None:
        """The best skill when it leads the next by :data:`CLEAR_LEAD` (what ``activate`` takes)."""
        ranked = [c for c in self.scores(request) if c.score >= MIN_SCORE]
        if not ranked:
            return None
        if len(ranked) > 1 and ranked[0].score < ranked[1].score * CLEAR_LEAD:
            return None
        return ranked[0].skill


def candidates_note(candidates: Sequence[Candidate]) -> str:
    """The system-message section that offers the candidates to the model."""
    lines = [
        "<skill_candidates>",
        "No skill was named, but these skills may fit the user's request. If one does, read its "
        "SKILL.md with read_file first and follow it; if none does, go on without a skill.",
    ]
    for c in candidates:
        first = c.skill.description.split(". ")[0].rstrip(".")
        lines.append(f"- {c.skill.name}: read {c.skill.virtual_path}. {first}.")
    lines.append("</skill_candidates>")
    return "\n".join(lines)
