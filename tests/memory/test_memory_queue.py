"""The durable update queue: debounced per thread, leased, at-least-once, and crash-proof."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from langgraph.store.memory import InMemoryStore

from herdsman.config.schema import MemoryConfig
from herdsman.memory.queue import UpdateQueue
from herdsman.memory.store import MemoryStore
from herdsman.memory.updater import MemoryUpdater
from herdsman.models.scripted import ScriptedChatModel
from tests.support import REPO

TURN = [{"role": "user", "content": "I always deploy with Helm."}, {"role": "assistant", "content": "Noted."}]
REPLY = json.dumps(
    {
        "summary": "",
        "facts": [
            {
                "content": "The user deploys with Helm",
                "category": "preference",
                "confidence": 0.9,
                "quote": "I always deploy with Helm.",
            }
        ],
    }
)


def test_turns_of_one_thread_are_debounced_into_one_update(tmp_path: Path) -> None:
    queue = UpdateQueue(tmp_path / "q.sqlite")
    queue.enqueue("t1", "ann", TURN[:1], delay=10)
    queue.enqueue("t1", "ann", TURN[1:], delay=10)
    queue.enqueue("t2", "bob", TURN, delay=0)
    now = time.time()
    assert [u.thread_id for u in queue.claim(now=now)] == ["t2"]
    later = queue.claim(now=now + 11)
    assert len(later) == 1 and later[0].messages == TURN
    assert queue.claim(now=now + 12) == []  # leased


def test_messages_queued_while_processing_are_kept(tmp_path: Path) -> None:
    queue = UpdateQueue(tmp_path / "q.sqlite")
    queue.enqueue("t1", "ann", TURN)
    claimed = queue.claim()[0]
    queue.enqueue("t1", "ann", [{"role": "user", "content": "also: I use Argo"}])
    queue.complete(claimed)
    rest = queue.claim(now=time.time() + 1)
    assert [m["content"] for m in rest[0].messages] == ["also: I use Argo"]


def test_failures_are_retried_then_dropped(tmp_path: Path) -> None:
    queue = UpdateQueue(tmp_path / "q.sqlite")
    queue.enqueue("t1", "ann", TURN)
    store = MemoryStore(InMemoryStore())
    model = ScriptedChatModel(responses=["not json at all", "still not json"])
    updater = MemoryUpdater(store, queue, model, MemoryConfig(max_attempts=2))
    assert updater.run_pending() == 0
    pending = queue.pending()
    assert pending[0]["attempts"] == 1 and "JSON" in pending[0]["last_error"]
    assert updater.run_pending(now=time.time() + 3600) == 0
    assert queue.pending() == [] and store.facts("ann") == []


CRASHER = """
import os, sys, time
from pathlib import Path
from herdsman.memory.queue import UpdateQueue
queue = UpdateQueue(Path(sys.argv[1]))
queue.enqueue("t-crash", "ann", {turn})
claimed = queue.claim()
print("claimed", len(claimed), flush=True)
time.sleep(60)  # killed here: after queueing and claiming, before writing memory
"""


def test_update_survives_a_process_killed_between_queueing_and_writing(tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite"
    proc = subprocess.Popen(
        [sys.executable, "-c", CRASHER.format(turn=repr(TURN)), str(db)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "claimed 1"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    # a new process (here: this one) opens the same queue; the lease of the dead worker runs out
    queue = UpdateQueue(db)
    store = MemoryStore(InMemoryStore())
    updater = MemoryUpdater(store, queue, ScriptedChatModel(responses=[REPLY, REPLY]), MemoryConfig())
    assert updater.run_pending() == 0  # still leased by the dead process
    assert updater.run_pending(now=time.time() + 3600) == 1
    assert [f.content for f in store.facts("ann")] == ["The user deploys with Helm"]
    assert queue.pending() == []
    # at-least-once: processing the same turn again writes nothing new
    queue.enqueue("t-crash", "ann", TURN)
    assert updater.run_pending() == 1
    assert len(store.facts("ann")) == 1


def test_a_reused_thread_id_keeps_each_owners_turns_apart(tmp_path: Path) -> None:
    """Ann's thread is deleted and Bob re-creates the id before Ann's turns are read: each user's
    update holds only their own turns, so Bob's memory never learns what Ann said."""
    queue = UpdateQueue(tmp_path / "q.sqlite")
    queue.enqueue("t1", "ann", [{"role": "user", "content": "my salary is 90k"}], delay=0)
    queue.enqueue("t1", "bob", [{"role": "user", "content": "I like tea"}], delay=0)
    claimed = {u.user_id: [m["content"] for m in u.messages] for u in queue.claim()}
    assert claimed == {"ann": ["my salary is 90k"], "bob": ["I like tea"]}


def test_rows_of_the_old_thread_keyed_table_are_kept(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "q.sqlite"
    old = sqlite3.connect(path)
    old.execute(
        "CREATE TABLE memory_updates (thread_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, messages TEXT NOT NULL, "
        "version INTEGER NOT NULL DEFAULT 1, due_at REAL NOT NULL, leased_until REAL NOT NULL DEFAULT 0, "
        "attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT, created_at REAL NOT NULL, updated_at REAL NOT NULL)"
    )
    old.execute(
        "INSERT INTO memory_updates (thread_id, user_id, messages, due_at, created_at, updated_at) "
        "VALUES ('t1', 'ann', ?, 0, 0, 0)",
        (json.dumps(TURN),),
    )
    old.commit()
    old.close()
    queue = UpdateQueue(path)
    assert [(u.thread_id, u.user_id, u.messages) for u in queue.claim()] == [("t1", "ann", TURN)]
    queue.close()
    assert UpdateQueue(path).pending() == [
        {"thread_id": "t1", "user_id": "ann", "messages": 2, "due_at": 0, "attempts": 0, "last_error": None}
    ]
