"""The audit trail of a user's memory: one record per write, saying what changed and where from.

Kept in the same BaseStore under ``("memory", <user>, "audit")``, one item per write, keyed by
time (so a listing sorts them), value ``{at, action, kind, id, thread_id, run_id, origin}``:
``action`` is put, refuse, close, delete, purge, consolidate or correct; ``kind`` is fact, summary, entity or
relation; ``origin`` is updater (the memory model after a run), tool, api, cli, retention or consolidation.
A record may also name ``sources``: the ids a summary was made of (``action`` consolidate), or
the relation a correction replaced (``action`` correct). A fact the memory model learned keeps,
in its put record, ``quote``: the user's words that say it; a fact it proposed and the harness
refused (``action`` refuse) keeps ``content``, ``quote`` (what the model quoted, maybe nothing)
and ``reason``, so the user sees what was guessed and why it was not kept. Nothing else of a
fact's content is copied, and deleting a fact scrubs the words from its records
(:func:`scrub`): what is left is its id and when, not what it said.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.store.base import BaseStore

from herdsman.memory.facts import now_iso

ROOT = "memory"
LIST_LIMIT = 100_000


@dataclass(frozen=True)
class Origin:
    """Where a write came from: the thread and run (when a run wrote it) and which part of herdsman."""

    origin: str = "updater"
    thread_id: str | None = None
    run_id: str | None = None


def audit_namespace(label: str) -> tuple[str, ...]:
    """Where the audit records of the user with namespace label ``label`` live."""
    return (ROOT, label, "audit")


def record(
    store: BaseStore,
    label: str,
    action: str,
    kind: str,
    item_id: str,
    origin: Origin,
    sources: Sequence[str] | None = None,
    detail: dict[str, str] | None = None,
) -> None:
    """Append one audit record for the user ``label`` (``sources``: the ids it was made from;
    ``detail``: the words of a fact's decision, ``quote``, ``content``, ``reason``; empty ones are left out)."""
    key = f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
    value: dict[str, Any] = {
        "at": now_iso(),
        "action": action,
        "kind": kind,
        "id": item_id,
        "thread_id": origin.thread_id,
        "run_id": origin.run_id,
        "origin": origin.origin,
    }
    if sources is not None:
        value["sources"] = list(sources)
    value.update({k: v for k, v in (detail or {}).items() if v})
    store.put(audit_namespace(label), key, value)


def records(store: BaseStore, label: str) -> list[dict[str, Any]]:
    """Every audit record of the user ``label``, oldest first."""
    items = store.search(audit_namespace(label), limit=LIST_LIMIT)
    return [{"key": item.key, **item.value} for item in sorted(items, key=lambda i: i.key)]


WORDS = ("quote", "content")
"""The keys of a record that hold what the user said or what was said about them."""


def scrub(store: BaseStore, label: str, item_id: str) -> None:
    """Remove the words (:data:`WORDS`) from the user ``label``'s records about ``item_id`` (it was deleted)."""
    for item in store.search(audit_namespace(label), filter={"id": item_id}, limit=LIST_LIMIT):
        if any(k in item.value for k in WORDS):
            store.put(audit_namespace(label), item.key, {k: v for k, v in item.value.items() if k not in WORDS})
