"""A remembered fact about a user, and the stable id that makes writing it idempotent.

The id is a hash of the fact's normalized text, so writing the same fact twice (a retried
update, the same thing learned in two threads) updates one record instead of adding a duplicate.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import unicodedata
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

CATEGORIES = ("preference", "profile", "project", "knowledge", "behavior", "other")
# scripts written without spaces between words: each character is a word (Thai, Lao, Myanmar, Khmer, kana, Han)
UNSPACED = (
    "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
)
_WORD = re.compile(rf"[{UNSPACED}]|[^\W_{UNSPACED}]+")


def now_iso() -> str:
    """The current UTC time as an ISO 8601 string (what facts store)."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def cutoff(days: int | None, now: dt.datetime | None = None) -> str | None:
    """The ISO time before which something last updated is more than ``days`` old; None when ``days`` is unset."""
    if not days:
        return None
    return ((now or dt.datetime.now(dt.UTC)) - dt.timedelta(days=days)).isoformat()


def normalize(content: str) -> str:
    """Lowercase words only, in any script: the form two facts are compared in (NFKC, case folded,
    no punctuation; each character of a script written without spaces, such as Chinese, is a word).
    ASCII text keeps the form it always had, so the ids of facts kept before do not change."""
    return " ".join(_WORD.findall(unicodedata.normalize("NFKC", content).casefold()))


def stem(word: str, size: int = 5) -> str:
    """A crude stem of a lowercase word: without a final "s" (but "ss"), its first ``size`` letters,
    so "lives" and "live" share one, as do "prefers" and "preference"."""
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word[:size]


def stems(text: str, ignored: frozenset[str] = frozenset()) -> set[str]:
    """The :func:`stem` of each word of ``text`` longer than two letters and not in ``ignored``."""
    return {stem(w) for w in normalize(text).split() if len(w) > 2 and w not in ignored}


def fact_id(content: str) -> str:
    """The stable id of a fact's content."""
    return hashlib.sha256(normalize(content).encode()).hexdigest()[:16]


class KeyedRecord:
    """A dataclass kept in the store under its ``id`` (the key), its other fields as the value."""

    def to_value(self) -> dict[str, Any]:
        """The record kept in the store (everything but the id, which is the key)."""
        value = asdict(self)  # type: ignore[call-overload]  # a mixin of dataclasses: self is a dataclass instance
        value.pop("id")
        return {k: list(v) if isinstance(v, tuple) else v for k, v in value.items()}  # JSON's shape, in every store

    @classmethod
    def from_value(cls, key: str, value: dict[str, Any]) -> Any:
        """Rebuild the record from its store key and value (fields the value lacks keep their defaults)."""
        names = [f.name for f in fields(cls) if f.name != "id"]  # type: ignore[arg-type]  # a mixin of dataclasses: cls is a dataclass
        return cls(id=key, **{k: value[k] for k in names if k in value})  # type: ignore[call-arg]  # a mixin of dataclasses: each has an id


@dataclass(frozen=True)
class Fact(KeyedRecord):
    """One fact: what, of which kind, how sure, learned where and when; a summary of older facts
    (:mod:`herdsman.memory.consolidation`) lists their ids in ``sources``."""

    id: str
    content: str
    category: str = "other"
    confidence: float = 0.8
    source_thread: str | None = None
    created_at: str = ""
    updated_at: str = ""
    sources: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "sources", tuple(self.sources or ()))  # a list when read back from a store

    @classmethod
    def new(
        cls, content: str, category: str = "other", confidence: float = 0.8, source_thread: str | None = None
    ) -> Fact:
        """A fact with its id and timestamps filled in."""
        stamp = now_iso()
        content = " ".join(content.split())
        category = category if category in CATEGORIES else "other"
        confidence = min(1.0, max(0.0, float(confidence)))
        return cls(fact_id(content), content, category, confidence, source_thread, stamp, stamp)

    def merged_with(self, newer: Fact) -> Fact:
        """This fact learned again: keep its creation time, take the newer details; learned in
        another thread, it is surer (see :mod:`herdsman.memory.grounding`)."""
        from herdsman.memory.grounding import reinforced  # grounding builds on this module

        return replace(
            newer,
            id=self.id,
            created_at=self.created_at or newer.created_at,
            sources=tuple(self.sources) or tuple(newer.sources),
            confidence=reinforced(self.confidence, newer.confidence, self.source_thread == newer.source_thread),
        )
