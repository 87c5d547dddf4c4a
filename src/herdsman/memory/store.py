"""Facts and the context summary of each user, kept in a LangGraph BaseStore.

Layout: facts under the namespace ``("memory", <user>, "facts")`` keyed by :func:`fact_id`;
the user's context summary under ``("memory", <user>, "profile")`` key ``summary``; the user's
off switch under ``("memory", <user>, "settings")`` key ``switch``; beside them the graph
(:mod:`herdsman.memory.graph`) and the audit trail (:mod:`herdsman.memory.audit`), which every
write here adds to.
Writes are idempotent: the same fact written twice is one record (also when a client keeps it
under a key of its own).

``<user>`` is :func:`user_label` of the user id. LangGraph refuses a "." in a label (its SQL
stores keep a namespace as its labels joined by "."): unescaped, a user id such as ``bob.smith``
could not keep memory at all, and its reads would match rows of user ``bob``'s namespaces. Ids
without "." "%" or "*" are their own label, so what memory kept before is where it was.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from langgraph.store.base import BaseStore

from herdsman.memory.audit import Origin, record, scrub
from herdsman.memory.facts import Fact, normalize, now_iso

ROOT = "memory"
LIST_LIMIT = 100_000


_ESCAPES = {"%": "%25", ".": "%2E", "*": "%2A"}


def user_label(user_id: str) -> str:
    """The namespace label of a user: the id, with "%" "." and "*" percent-escaped (reversible)."""
    return "".join(_ESCAPES.get(ch, ch) for ch in user_id)


def user_of_label(label: str) -> str:
    """The user id a :func:`user_label` stands for."""
    for ch, escaped in reversed(_ESCAPES.items()):
        label = label.replace(escaped, ch)
    return label


def facts_namespace(user_id: str) -> tuple[str, ...]:
    """Where a user's facts live."""
    return (ROOT, user_label(user_id), "facts")


def profile_namespace(user_id: str) -> tuple[str, ...]:
    """Where a user's context summary lives."""
    return (ROOT, user_label(user_id), "profile")


def settings_namespace(user_id: str) -> tuple[str, ...]:
    """Where a user's own memory settings live (the off switch, key ``switch``)."""
    return (ROOT, user_label(user_id), "settings")


API = Origin("api")


class MemoryStore:
    """Read and write one user's memory in a BaseStore."""

    def __init__(self, store: BaseStore) -> None:
        """``store``: any LangGraph BaseStore (SQLite, Postgres, in-memory)."""
        self.store = store

    # -- reading ------------------------------------------------------------------------

    def facts(self, user_id: str) -> list[Fact]:
        """Every fact of ``user_id``, most confident, then most recent, first."""
        items = self.store.search(facts_namespace(user_id), limit=LIST_LIMIT)
        facts = [Fact.from_value(item.key, item.value) for item in items]
        return sorted(facts, key=lambda f: (f.confidence, f.updated_at), reverse=True)

    def get(self, user_id: str, fid: str) -> Fact | None:
        """One fact by id, or None."""
        item = self.store.get(facts_namespace(user_id), fid)
        return Fact.from_value(item.key, item.value) if item else None

    def summary(self, user_id: str) -> str:
        """The user's context summary ('' when none)."""
        item = self.store.get(profile_namespace(user_id), "summary")
        return str(item.value.get("text", "")) if item else ""

    def enabled_for(self, user_id: str) -> bool:
        """False when the user turned their memory off (nothing is read, injected or learned)."""
        item = self.store.get(settings_namespace(user_id), "switch")
        return bool(item.value.get("enabled", True)) if item else True

    def set_enabled(self, user_id: str, enabled: bool) -> None:
        """Turn the user's memory on or off (what is kept stays until purged)."""
        self.store.put(settings_namespace(user_id), "switch", {"enabled": bool(enabled), "updated_at": now_iso()})

    def users(self) -> list[str]:
        """Every user with memory."""
        spaces = self.store.list_namespaces(prefix=(ROOT,), max_depth=2, limit=LIST_LIMIT)
        return sorted({user_of_label(ns[1]) for ns in spaces if len(ns) >= 2})

    # -- writing ------------------------------------------------------------------------

    def put(self, user_id: str, fact: Fact, origin: Origin = API, quote: str | None = None) -> Fact:
        """Write ``fact`` (merged into the existing record with the same id); returns what was kept.
        ``quote``: the user's words that say it, kept in the audit record."""
        existing = self.get(user_id, fact.id) or self._saying(user_id, fact.content)
        kept = existing.merged_with(fact) if existing else fact
        self.store.put(facts_namespace(user_id), kept.id, kept.to_value())
        record(self.store, user_label(user_id), "put", "fact", kept.id, origin, detail={"quote": quote or ""})
        return kept

    def update(
        self,
        user_id: str,
        fid: str,
        *,
        content: str | None = None,
        category: str | None = None,
        confidence: float | None = None,
        origin: Origin = API,
    ) -> Fact | None:
        """Change a fact; a new content gives it a new id. None when ``fid`` does not exist."""
        old = self.get(user_id, fid)
        if old is None:
            return None
        changed = Fact.new(
            content if content is not None else old.content,
            category if category is not None else old.category,
            confidence if confidence is not None else old.confidence,
            old.source_thread,
        )
        changed = replace(changed, created_at=old.created_at)
        if changed.id != fid:
            self.store.delete(facts_namespace(user_id), fid)
            scrub(self.store, user_label(user_id), fid)
            record(self.store, user_label(user_id), "delete", "fact", fid, origin)
        self.store.put(facts_namespace(user_id), changed.id, changed.to_value())
        record(self.store, user_label(user_id), "put", "fact", changed.id, origin)
        return changed

    def _saying(self, user_id: str, content: str) -> Fact | None:
        """A fact with this text kept under a key of its own (a client chose it through the Store API)."""
        wanted = normalize(content)
        return next((f for f in self.facts(user_id) if normalize(f.content) == wanted), None)

    def delete(self, user_id: str, fid: str, origin: Origin = API) -> bool:
        """Forget one fact; False when it did not exist."""
        if self.get(user_id, fid) is None:
            return False
        self.store.delete(facts_namespace(user_id), fid)
        scrub(self.store, user_label(user_id), fid)
        record(self.store, user_label(user_id), "delete", "fact", fid, origin)
        return True

    def set_summary(self, user_id: str, text: str, origin: Origin = API) -> None:
        """Replace the user's context summary."""
        self.store.put(profile_namespace(user_id), "summary", {"text": text.strip(), "updated_at": now_iso()})
        record(self.store, user_label(user_id), "put", "summary", "summary", origin)

    def purge(self, user_id: str) -> int:
        """Delete everything kept about the user (facts, summary, graph, audit trail) but their off
        switch; how many items went."""
        label = user_label(user_id)
        spaces = self.store.list_namespaces(prefix=(ROOT, label), limit=LIST_LIMIT)
        removed = 0
        for space in spaces:
            if space[:2] != (ROOT, label) or space == settings_namespace(user_id):
                continue  # a store may match a prefix loosely ("ann" and "anna"): only this user's, exactly
            for item in self.store.search(space, limit=LIST_LIMIT):
                if item.namespace == space:
                    self.store.delete(space, item.key)
                    removed += 1
        return removed

    def prune(self, user_id: str, max_facts: int, retention_days: int | None = None) -> list[str]:
        """Apply retention: drop facts older than ``retention_days``, then the weakest past ``max_facts``.

        Returns the ids dropped.
        """
        facts = self.facts(user_id)
        dropped: list[str] = []
        if retention_days:
            cutoff = (dt.datetime.now(dt.UTC) - dt.timedelta(days=retention_days)).isoformat()
            dropped += [f.id for f in facts if f.updated_at and f.updated_at < cutoff]
        keep = [f for f in facts if f.id not in dropped]
        if len(keep) > max_facts:
            ranked = sorted(keep, key=lambda f: (f.confidence, f.updated_at), reverse=True)
            dropped += [f.id for f in ranked[max_facts:]]
        for fid in dropped:
            self.store.delete(facts_namespace(user_id), fid)
            scrub(self.store, user_label(user_id), fid)
            record(self.store, user_label(user_id), "delete", "fact", fid, Origin("retention"))
        return dropped


__all__ = ["MemoryStore", "facts_namespace", "profile_namespace", "user_label", "user_of_label"]
