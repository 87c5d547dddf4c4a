"""The audit trail of a user's memory: one record per write, saying what changed and where from.

Kept in the same BaseStore under ``("memory", <user>, "audit")``, one item per write, keyed by
time (so a listing sorts them), value ``{at, action, kind, id, thread_id, run_id, origin}``:
``action`` is put, close, delete or purge; ``kind`` is fact, summary, entity or relation;
``origin`` is updater (the memory model after a run), tool, api or cli. No content is copied into
the trail: deleting a fact leaves its id and when, not what it said.
"""

from __future__ import annotations

import time
import uuid
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


def record(store: BaseStore, label: str, action: str, kind: str, item_id: str, origin: Origin) -> None:
    """Append one audit record for the user ``label``."""
    key = f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
    store.put(audit_namespace(label), key, {
        "at": now_iso(), "action": action, "kind": kind, "id": item_id,
        "thread_id": origin.thread_id, "run_id": origin.run_id, "origin": origin.origin,
    })


def records(store: BaseStore, label: str) -> list[dict[str, Any]]:
    """Every audit record of the user ``label``, oldest first."""
    items = store.search(audit_namespace(label), limit=LIST_LIMIT)
    return [{"key": item.key, **item.value} for item in sorted(items, key=lambda i: i.key)]
