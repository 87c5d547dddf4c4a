"""Is a fact backed by the user's own words? Check the quote the memory model gives with each fact.

The memory model answers each fact with ``quote``: the user's words that say it, copied. A fact
is kept only when, structurally:

1. the quote occurs in a user message of the conversation: compared as a sequence of words
   (Unicode NFKC, case folded, punctuation and spacing ignored; each character of a script written
   without spaces, such as Chinese or Japanese, is a word of its own), so "I work at Acme." is
   quoted by "i work at  Acme"; fragments joined by "..." or "…" may come from different
   messages ("I'm Ana … I work at Acme");
2. every *anchor* of the fact, its numbers and its names (words with a capital letter), is in the
   quote: "Ana works at Google" is refused for "my project Atlas deploys to GCP" because "Google"
   is not there, "the user is 35" for "I graduated in 2010" because "35" is not. The fact's
   first word may be a name the user said elsewhere in the conversation or that memory already
   holds (their own: "Ann uses Neovim" quoting "I use Neovim"), never a name nobody said;
3. most of the fact's content words are in the quote (:data:`COVERED`, 0.7): English-like words
   compared by :func:`~herdsman.memory.facts.stem` and by prefix ("asked" and "ask"), runs of an
   unspaced script by their character pairs ("住在上海" is in "我住在上海浦东"). A fact drawn
   from words that say something else ("lives in Berlin" from "I work for a Berlin startup") fails
   here.

A date the quote writes as ISO (2026-03-01) may be named by its English month in the fact
("since March 2026").

A fact written in another script than its quote (an English fact about a Chinese quote) can only be
compared by what survives translation: its names and numbers must be in the quote and be at least
half of its content words ("Atlas deploys to GCP" about "我的项目Atlas部署在GCP上"). The words that refer to
the user rather than say something about them ("the user", "their", "用户", "prefers", "喜欢") are not
counted: that list (:data:`META_WORDS`) is English and Chinese, and says so. Written by hand: no
library checks that a paraphrase is entailed by a quote without a model call per fact; this check is
deliberately strict, since a fact refused costs less than a guess remembered.
"""

from __future__ import annotations

import calendar
import re
import unicodedata
from collections.abc import Iterable

from herdsman.memory.facts import UNSPACED, normalize, stem

COVERED = 0.7
"""The share of a fact's content words that its quote must hold."""

_UNSPACED = UNSPACED
_RUN = re.compile(rf"[{_UNSPACED}]+|[^\W_{_UNSPACED}]+")
_ELLIPSIS = re.compile(r"\.{3,}|…+|⋯+")
_NUMBER = re.compile(r"^\d+$")
_ISO_MONTH = re.compile(r"\b\d{4}-(\d{2})(?:-\d{2})?\b")
# English and Chinese words that name the user or their wish rather than say anything about them
META_WORDS = frozenset(
    "the a an user users user's their they them he she his her him team we our us i my me is are was were be been "
    "has have had and or of to in on at as by for with that this from into likes like wants want prefers prefer "
    "preference name s".split()
)
META_UNSPACED = (
    "该用户",
    "使用者",
    "用户",
    "他们",
    "她们",
    "我们",
    "团队",
    "喜欢",
    "偏好",
    "希望",
    "想要",
    "他",
    "她",
    "我",
)


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def words(text: str) -> list[str]:
    """``text`` as the words a quote is compared in (:func:`~herdsman.memory.facts.normalize`):
    NFKC, case folded, no punctuation, each character of an unspaced script on its own."""
    return normalize(text).split()


def _occurs(needle: list[str], haystack: list[str]) -> bool:
    if not needle:
        return False
    wanted = " " + " ".join(needle) + " "
    return wanted in " " + " ".join(haystack) + " "


def fragments(quote: str) -> list[str]:
    """The pieces of a quote, split at "..." or "…" (a quote may skip words between them)."""
    return [part for part in (p.strip() for p in _ELLIPSIS.split(quote)) if words(part)]


def quoted(quote: str, user_texts: Iterable[str]) -> bool:
    """True when every fragment of ``quote`` occurs, word for word, in one of ``user_texts``."""
    said = [words(text) for text in user_texts]
    parts = fragments(quote)
    return bool(parts) and all(any(_occurs(words(part), text) for text in said) for part in parts)


def anchors(content: str) -> list[str]:
    """The names and numbers of ``content`` (case folded): words with a capital letter or digits,
    but the words that refer to the user (:data:`META_WORDS`)."""
    found: list[str] = []
    for token in _RUN.findall(unicodedata.normalize("NFKC", content)):
        folded = token.casefold()
        if folded in META_WORDS or folded in found:
            continue
        if any(ch.isdigit() for ch in token) or any(ch.isupper() for ch in token):
            found.append(folded)
    return found


def _months(text: str) -> list[str]:
    """The English names of the months of the ISO dates in ``text`` ("2026-03-01": march, mar)."""
    names = []
    for month in _ISO_MONTH.findall(text):
        if 1 <= int(month) <= 12:
            names += [calendar.month_name[int(month)].casefold(), calendar.month_abbr[int(month)].casefold()]
    return names


def _same_name(anchor: str, word: str) -> bool:
    return word == anchor or word == anchor + "s" or anchor == word + "s"


def _units(text: str) -> set[str]:
    """The content units of ``text``: stems of spaced words (numbers whole), character pairs of
    unspaced runs (a lone character alone), without :data:`META_WORDS` / :data:`META_UNSPACED`."""
    folded = _fold(text)
    for meta in META_UNSPACED:
        folded = folded.replace(meta, " ")
    units: set[str] = set()
    for run in _RUN.findall(folded):
        if re.match(rf"[{_UNSPACED}]", run):
            units |= {run[i : i + 2] for i in range(len(run) - 1)} or {run}
        elif _NUMBER.match(run):
            units.add(run)
        elif len(run) > 2 and run not in META_WORDS:
            units.add(stem(run))
    return units


def _unspaced(text: str) -> bool:
    return re.search(rf"[{_UNSPACED}]", text) is not None


def _unit_in(unit: str, quote_text: str, quote_units: set[str]) -> bool:
    if unit in quote_units:
        return True
    if re.match(rf"[{_UNSPACED}]", unit):
        return unit in quote_text
    if _NUMBER.match(unit) or len(unit) < 3:
        return False
    return any(len(q) >= 3 and (q.startswith(unit) or unit.startswith(q)) for q in quote_units if not _NUMBER.match(q))


def unsupported(content: str, quote: str | None, user_texts: Iterable[str], known: Iterable[str] = ()) -> str | None:
    """Why ``quote`` does not support ``content`` (a sentence for the audit), or None when it does.

    ``user_texts``: the user's messages of the conversation the fact was drawn from; ``known``:
    what memory already holds of the user (facts, summary), where the fact's subject, the user's
    own name, may have been learned instead.
    """
    texts = list(user_texts)
    if not quote or not words(quote):
        return "no quote of the user's words supports it"
    if not quoted(quote, texts):
        return "the quote is not in the user's messages"
    quote_words = words(quote) + _months(quote)
    said_anywhere = [w for text in [*texts, *known] for w in words(text)]
    names = anchors(content)
    first = words(content)[:1]
    subject = (
        names[0]
        if names and first and names[0] == first[0] and any(_same_name(names[0], w) for w in said_anywhere)
        else None
    )
    missing = [a for a in names if a != subject and not any(_same_name(a, w) for w in quote_words)]
    if missing:
        return "not in the user's words: " + ", ".join(missing)
    rest = content if subject is None else content.replace(content.split()[0], " ", 1)
    units = _units(rest)
    if _unspaced(content) != _unspaced(quote):
        # written in another script than the quote (a translation): only its names and numbers can be
        # compared, and they must be most of what it says
        if len(names) - (subject is not None) < len(units) / 2:
            return "written in another language than the quote, and its names and numbers are not most of it"
        return None
    quote_units = _units(" ".join([quote, *_months(quote)]))
    quote_text = "".join(words(quote))
    hits = sum(_unit_in(u, quote_text, quote_units) for u in units)
    if units and hits < COVERED * len(units):
        return f"the quote does not say it ({hits} of {len(units)} content words)"
    return None


__all__ = ["COVERED", "META_UNSPACED", "META_WORDS", "anchors", "fragments", "quoted", "unsupported", "words"]
