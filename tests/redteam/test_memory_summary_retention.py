"""Red team: the context summary does not outlive ``memory.retention_days``.

Finding (graph memory governance, #17): retention deleted facts (by category), the graph and the
audit trail, but never the user's context summary, the memory model's running prose about the
user, re-injected into every system prompt: with ``retention_days: 10`` it was kept for ever.
It now goes by the ``profile`` retention.
"""

from __future__ import annotations

import datetime as dt

from langgraph.store.memory import InMemoryStore

from herdsman.config.schema import MemoryConfig
from herdsman.memory.audit import records
from herdsman.memory.retention import sweep
from herdsman.memory.store import MemoryStore, profile_namespace, user_label

NOW = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)


def test_an_old_summary_is_swept_and_a_recent_one_stays() -> None:
    store = MemoryStore(InMemoryStore())
    store.set_summary("ann", "Ann is moving to Lyon and job hunting.")
    store.set_summary("bob", "Bob works on Atlas.")
    old = (NOW - dt.timedelta(days=11)).isoformat(timespec="seconds")
    store.store.put(
        profile_namespace("ann"), "summary", {"text": "Ann is moving to Lyon and job hunting.", "updated_at": old}
    )
    store.store.put(profile_namespace("bob"), "summary", {"text": "Bob works on Atlas.", "updated_at": NOW.isoformat()})

    assert sweep(store, MemoryConfig(retention_days=10), now=NOW) >= 1

    assert store.summary("ann") == "" and store.summary("bob") == "Bob works on Atlas."
    assert any(r["kind"] == "summary" and r["origin"] == "retention" for r in records(store.store, user_label("ann")))
    assert sweep(store, MemoryConfig(retention_days={"graph": 5}), now=NOW) == 0  # no profile retention: kept
