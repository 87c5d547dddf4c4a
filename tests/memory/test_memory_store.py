"""Facts in a LangGraph store: idempotent writes, edits, deletes, summaries, retention."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from langgraph.store.memory import InMemoryStore

from herdsman.memory.backend import open_store
from herdsman.memory.facts import Fact, fact_id
from herdsman.memory.store import MemoryStore, facts_namespace, user_label, user_of_label
from tests.support import make_config


def test_same_fact_twice_is_one_record() -> None:
    store = MemoryStore(InMemoryStore())
    first = store.put("ann", Fact.new("Ann prefers tabs over spaces.", "preference", 0.7, "t1"))
    again = store.put("ann", Fact.new("ann prefers TABS over spaces", "preference", 0.9, "t2"))
    assert first.id == again.id == fact_id("Ann prefers tabs over spaces")
    facts = store.facts("ann")
    assert len(facts) == 1
    # learned again in another thread: the surer of the two, and a little surer still
    assert facts[0].confidence == 0.95 and facts[0].source_thread == "t2"
    assert facts[0].created_at == first.created_at
    retried = store.put("ann", Fact.new("Ann prefers tabs over spaces.", "preference", 0.6, "t2"))
    assert retried.confidence == 0.95  # the same thread again (a retried update) adds nothing
    assert store.facts("bob") == []  # per user


def test_update_delete_summary_and_users() -> None:
    store = MemoryStore(InMemoryStore())
    fact = store.put("ann", Fact.new("Ann works on the billing service.", "project"))
    changed = store.update("ann", fact.id, content="Ann works on the payments service.")
    assert changed is not None and changed.id != fact.id and changed.category == "project"
    assert [f.content for f in store.facts("ann")] == ["Ann works on the payments service."]
    assert store.update("ann", "nope", content="x") is None
    assert store.delete("ann", changed.id) and not store.delete("ann", changed.id)
    store.set_summary("ann", "Ann is migrating billing to a new provider.")
    assert store.summary("ann").startswith("Ann is migrating")
    assert store.users() == ["ann"]


def test_retention_keeps_the_strongest_and_forgets_the_old() -> None:
    store = MemoryStore(InMemoryStore())
    for i in range(6):
        store.put("ann", Fact.new(f"Fact number {i} about Ann", "other", 0.5 + i * 0.05))
    old = replace(Fact.new("A very old fact about Ann", "other", 1.0), updated_at="2000-01-01T00:00:00+00:00")
    store.store.put(facts_namespace("ann"), old.id, old.to_value())
    dropped = store.prune("ann", max_facts=3, retention_days=30)
    assert old.id in dropped
    kept = [f.content for f in store.facts("ann")]
    assert kept == ["Fact number 5 about Ann", "Fact number 4 about Ann", "Fact number 3 about Ann"]


def test_sqlite_store_under_home_survives_reopening(home: Path) -> None:
    config = make_config(home, memory={"enabled": True})
    first = open_store(config)
    MemoryStore(first).put("ann", Fact.new("Ann lives in Lyon.", "profile"))
    first.conn.close()
    assert (home / "memory.sqlite").is_file()
    reopened = MemoryStore(open_store(config))
    assert [f.content for f in reopened.facts("ann")] == ["Ann lives in Lyon."]


def test_an_updated_sqlite_item_keeps_when_it_was_created_and_its_ttl(home: Path) -> None:
    """SqliteStore's INSERT OR REPLACE would restamp created_at; the store answers it as Postgres does."""
    store = open_store(make_config(home, memory={"enabled": True}))
    store.put(("notes",), "standup", {"text": "at nine"})
    store.put(("notes",), "other", {"text": "untouched"})
    store.conn.execute("UPDATE store SET created_at = '2020-01-02 03:04:05', updated_at = '2020-01-02 03:04:05'")
    store.put(("notes",), "standup", {"text": "at ten"}, ttl=5)
    item = store.get(("notes",), "standup")
    assert item is not None and item.value == {"text": "at ten"}
    assert item.created_at.year == 2020 and item.updated_at.year > 2020
    assert store.conn.execute("SELECT ttl_minutes FROM store WHERE key = 'standup'").fetchone()[0] == 5
    assert sorted(i.key for i in store.search(("notes",))) == ["other", "standup"]
    other = store.get(("notes",), "other")
    assert other is not None and other.value == {"text": "untouched"} and other.updated_at.year == 2020
    store.delete(("notes",), "standup")
    store.put(("notes",), "standup", {"text": "new again"})  # a key put after a delete is new
    again = store.get(("notes",), "standup")
    assert again is not None and again.created_at.year > 2020


def test_a_dotted_user_id_keeps_memory_apart_from_the_user_before_the_dot(home: Path) -> None:
    """LangGraph refuses "." in a label and its SQL stores join labels with ".": the user id is escaped."""
    store = MemoryStore(open_store(make_config(home, memory={"enabled": True})))
    store.put("bob.smith", Fact.new("Bob Smith plays the cello.", "profile"))
    store.set_summary("bob.smith", "Cellist.")
    store.put("bob", Fact.new("Bob plays the drums.", "profile"))
    store.store.put(("memory", "bob", "smith"), "x", {"content": "not a fact of bob.smith"})
    assert [f.content for f in store.facts("bob.smith")] == ["Bob Smith plays the cello."]
    assert store.summary("bob.smith") == "Cellist."
    assert [f.content for f in store.facts("bob")] == ["Bob plays the drums."]
    assert store.users() == ["bob", "bob.smith"]
    assert facts_namespace("bob.smith") == ("memory", "bob%2Esmith", "facts")
    assert facts_namespace("50%*") == ("memory", "50%25%2A", "facts")
    assert user_of_label(user_label("a.b%2E*")) == "a.b%2E*"


def test_a_fact_kept_under_a_key_of_its_own_is_learned_again_in_place() -> None:
    """A client may put a fact under any key through the Store API; learning it again adds no copy."""
    store = MemoryStore(InMemoryStore())
    mine = Fact.new("Ann lives in Lyon.", "profile", 0.6, "t1")
    store.store.put(facts_namespace("ann"), "my-key", mine.to_value())
    kept = store.put("ann", Fact.new("ann lives in LYON", "profile", 0.9, "t2"))
    assert kept.id == "my-key"
    assert [(f.id, f.confidence) for f in store.facts("ann")] == [("my-key", 0.95)]
