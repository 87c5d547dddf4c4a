"""Rank the skills by how well they fit a request that names none: the pre-selection offered to
the model (``skills.auto_select``).

Each skill is a small document: its name (words weighted double), its description and its
``examples``, where a file name counts by its extension as it does in a request ("notes.md" in an
example is ``md``, not a word about notes). A request scores, for each skill, the sum of the
weights of the terms the two share, each term weighted by how few skills hold it (``log(1 + N /
df)``: "csv" in three skills counts less than "flowchart" in one), divided by the fourth root of
the skill's length so a long description does not win by size alone. Terms are language-neutral:
words of scripts written with spaces, cut to a crude stem (:func:`herdsman.memory.facts.stem`:
"slides" and "slide" meet), and, for scripts written without spaces (Chinese, Japanese, Thai...),
each pair of neighbouring characters, so "幻灯片" meets "幻灯" in a skill's Chinese example; characters
that carry no topic (particles, pronouns, measure words: :data:`FUNCTION_CHARS`) cut those runs as
spaces do. Words any request is made of (:data:`GENERIC`) are no terms. A request in one language
meets a skill written in another only through what they share (file kinds, names, English words),
which is what ``examples`` in the user's languages are for.

A request that fits no skill ("explain how a lighthouse works") should get none: a skill is offered
only when it shares a term of its name with the request, or two terms that stand together in one
of its passages (a sentence or clause of its description, or one example), or three terms in all
(:data:`MIN_SHARED`, :data:`MIN_SCATTERED`). Two words from unrelated sentences of a skill are a
coincidence of vocabulary: "the difference between a list and a tuple in Python" meets the test
writer's "a Python file" in one clause and "a script lists the functions" in another, and is no
request for tests.

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
_CLAUSE_END = re.compile(r"(?<=[.;!?])\s+|(?<=[。；！？])")
# words every request and skill is made of: they say nothing about which skill fits
GENERIC = STOPWORDS | frozenset(
    "use using used make made create write file files user users asks ask want need help "
    "mnt data outputs output uploads workspace turn into it's them one two like get put save "
    # what any request says, whatever it asks for
    "tell show give look explain here there each every new short never work time times day days last first "
    "next point out way thing things something good better best quick quickly simple really let let's lets "
    "start three four five six seven eight nine ten run runs "
    # the same words in Chinese ("save", "output", "run", "result", the second pair of "workspace")
    "文件 可以 需要 关于 保存 输出 运行 结果 作区".split()
)
# How long an answer should be ("in about 300 words"): said of any text, and "words" is not "Word".
# Matched as written, not by stem.
LENGTH_UNITS = frozenset("words characters sentences paragraphs lines".split())
# Characters of unspaced scripts that hold no topic (particles, pronouns, measure words, question
# words, "help", "do", "write"): they end a run as a space would, so "帮我画一个流程图" gives "画"
# and the pairs of "流程图", not "我画" or "一个".
FUNCTION_CHARS = frozenset(
    "的了着过吗呢吧啊呀么嘛"  # particles
    "我你您他她它们这那哪谁什怎"  # pronouns, question words
    "是在有和与及或把被给让将就都也还又再很太之其并且而但如所等到从为"  # verbs of grammar, conjunctions
    "一个些份张篇封种下"  # numbers and measure words ("一下", "一份")
    "帮请想做写"  # "help me", "please", "do", "write": said of any request
)
_GENERIC_STEMS = frozenset(stem(word) for word in GENERIC)  # "starter" is as generic as "start"
NAME_WEIGHT = 2
# A skill is a candidate from this score (about one telling term shared), when it shares a term of
# its name with the request, or MIN_SHARED terms that one of its passages holds together, or
# MIN_SCATTERED terms in all (one word of a description, "print" or "program", says little: "Why
# does my loop print twice?" wants no PDF), and, after the first, while it keeps this share of the
# best score; at most MAX_CANDIDATES are offered.
MIN_SCORE = 0.9
MIN_SHARED = 2
MIN_SCATTERED = 3
KEEP_SHARE = 0.5
MAX_CANDIDATES = 3
# ``activate`` takes the best skill only when it leads the next by this factor (and shares
# MIN_SHARED terms with the request besides KIND_TERMS).
CLEAR_LEAD = 1.8
# Kinds of plain file that ordinary tasks read and write whatever they ask ("fix the bug in
# stats.py", "which item in stock.csv..."): they tell which skill fits among those that match on
# something else, but are no request for a skill by themselves. Output formats that only skills
# make (pptx, docx, pdf, png...) are not among them.
KIND_TERMS = frozenset(
    "txt text log csv tsv json jsonl yaml yml toml ini xml md markdown py python python3 js javascript "
    "ts typescript sh bash shell".split()
)
_KIND_STEMS = frozenset(stem(word) for word in KIND_TERMS)


def terms(text: str) -> list[str]:
    """The terms of ``text``: stems of spaced words (two letters and more, not generic, no length
    unit) and pairs of neighbouring characters of unspaced scripts, cut at the characters of
    :data:`FUNCTION_CHARS` (a lone one stays whole)."""
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if len(run) == 1:
            out.append(run[0])
        out.extend(a + b for a, b in zip(run, run[1:], strict=False) if a + b not in GENERIC)
        run.clear()

    for word in normalize(text).split():
        if word in FUNCTION_CHARS:
            flush()
            continue
        if _UNSPACED_CHAR.match(word):
            run.append(word)
            continue
        flush()
        if len(word) >= 2 and not word.isdigit() and word not in LENGTH_UNITS and stem(word) not in _GENERIC_STEMS:
            out.append(stem(word))
    flush()
    return out


# matched from the start of a word only: tried at every character, a long run of letters with no
# dot costs the square of its length (20,000 letters took 2.5 s)
_FILE_NAME = re.compile(r"(?<![\w./-])[\w./-]*[\w-]\.([A-Za-z][A-Za-z0-9]{0,4})(?![\w-])")
HEAD_CHARS = 1500
TAIL_CHARS = 500
"""What of a long request is read: its beginning and its end, where people say what they want
around a paste (a 20 MB message is ranked in the time of 2,000 characters)."""
# a path from the root, the home or the current folder: its folders are places, not topics
_PATH = re.compile(r"(?<![\w.])(?:/|\./|\.\./|~/)[\w.-]+(?:/[\w.-]*)*")


def bounded(request: str) -> str:
    """The part of ``request`` that is ranked: all of it, or its first :data:`HEAD_CHARS` and
    last :data:`TAIL_CHARS` characters."""
    if len(request) <= HEAD_CHARS + TAIL_CHARS:
        return request
    return f"{request[:HEAD_CHARS]}\n{request[-TAIL_CHARS:]}"


def without_file_names(request: str) -> str:
    """``request`` with each file name or path replaced by its extension: "Make test_stats.py
    pass" is no request for tests, but "turn notes.md into slides" keeps its ``md``; a path's
    folders go ("/mnt/user-data/workspace/docs" names no documents)."""
    request = _PATH.sub(lambda m: f" {_extension(m.group(0))} ", request)
    return _FILE_NAME.sub(lambda m: f" {m.group(1)} ", request)


def _extension(path: str) -> str:
    """The extension of ``path``'s last part ("" for a folder)."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[1] if "." in name.strip(".") else ""


def passages(skill: Skill) -> list[frozenset[str]]:
    """The terms of each passage of ``skill``: each sentence or clause of its description (cut
    after ``.``, ``;``, ``!`` or ``?`` and a space, or after their full-width forms) and each example."""
    sentences = _CLAUSE_END.split(skill.description)
    return [frozenset(terms(without_file_names(text))) for text in [*sentences, *skill.examples] if text.strip()]


def skill_terms(skill: Skill) -> Counter[str]:
    """A skill's terms with their weights: its name's words count :data:`NAME_WEIGHT` times."""
    counts: Counter[str] = Counter()
    for term in terms(skill.name.replace("-", " ")):
        counts[term] += NAME_WEIGHT
    for term in terms(without_file_names(" ".join([skill.description, *skill.examples]))):
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
        self._name_terms = {s.name: frozenset(terms(s.name.replace("-", " "))) for s in self.skills}
        self._passages = {s.name: passages(s) for s in self.skills}

    def scores(self, request: str) -> list[Candidate]:
        """Every skill sharing a term with ``request``, best first (ties by name); a file the
        request names counts by its kind only (:func:`without_file_names`)."""
        asked = set(terms(without_file_names(bounded(request))))
        out = []
        for skill in self.skills:
            counts = self._terms[skill.name]
            shared = sorted(t for t in asked if t in counts)
            if not shared:
                continue
            score = sum(self._idf[t] * min(counts[t], NAME_WEIGHT) for t in shared) / self._norm[skill.name]
            out.append(Candidate(skill, round(score, 3), tuple(shared)))
        return sorted(out, key=lambda c: (-c.score, c.skill.name))

    def fitting(self, request: str) -> list[Candidate]:
        """The skills that may fit ``request`` at all (see :data:`MIN_SCORE`), best first."""
        return [c for c in self.scores(request) if c.score >= MIN_SCORE and self._supported(c)]

    def _supported(self, candidate: Candidate) -> bool:
        """Whether what ``candidate`` matched is more than a coincidence of words (see
        :data:`MIN_SHARED`): a term of its name, two terms of one passage, or three in all."""
        matched = set(candidate.matched)
        name = candidate.skill.name
        return (
            len(matched) >= MIN_SCATTERED
            or not self._name_terms[name].isdisjoint(matched)
            or any(len(matched & passage) >= MIN_SHARED for passage in self._passages[name])
        )

    def candidates(self, request: str) -> list[Candidate]:
        """The skills worth offering for ``request`` (see :data:`MIN_SCORE`), best first."""
        ranked = self.fitting(request)
        if not ranked:
            return []
        best = ranked[0].score
        return [c for c in ranked if c.score >= best * KEEP_SHARE][:MAX_CANDIDATES]

    def clear_choice(self, request: str) -> Skill | None:
        """The best skill when it leads the next by :data:`CLEAR_LEAD` and shares at least
        :data:`MIN_SHARED` terms with ``request`` besides the kinds of plain file
        (:data:`KIND_TERMS`; what ``activate`` takes). One shared word names a topic, not a task:
        "Run the tests" meets the test writer's name and asks for no tests written, and "Write a
        Python script primes.py" shares only "script" with it besides kinds, so each is only
        offered (``suggest``), for the model to read or leave."""
        ranked = self.fitting(request)
        if not ranked or len(set(ranked[0].matched) - _KIND_STEMS) < MIN_SHARED:
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
