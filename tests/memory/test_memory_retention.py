"""memory.retention_days, per category: nothing in a user's memory outlives it, whoever wrote it."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path

import pytest
from langgraph.store.memory import InMemoryStore
from pydantic import ValidationError

from herdsman.config.schema import MEMORY_RETENTION_KEYS, MemoryConfig
from herdsman.memory.audit import Origin, audit_namespace, records
from herdsman.memory.facts import CATEGORIES, Fact
from herdsman.memory.graph import GraphStore, relations_namespace
from herdsman.memory.graph_schema import ExtractedRelation
from herdsman.memory.retention import sweep
from herdsman.memory.store import MemoryStore, facts_namespace, user_label

NOW = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)


def days_ago(n: int) -> str:
    return (NOW - dt.timedelta(days=n)).isoformat(timespec="seconds")


def aged_fact(store: MemoryStore, user: str, content: str, category: str, age: int) -> Fact:
    fact = replace(Fact.new(content, category), updated_at=days_ago(age), created_at=days_ago(age))
    store.store.put(facts_namespace(user), fact.id, fact.to_value())
    return fact


def aged_relation(store: MemoryStore, user: str, subject: str, obj: str, age: int) -> str:
    graph = GraphStore(store.store)
    relation = graph.put_relation(user, ExtractedRelation(subject=subject, predicate="uses", object=obj), Origin())
    store.store.put(relations_namespace(user), relation.id, {**relation.to_value(), "updated_at": days_ago(age)})
    for entity in graph.entities(user):
        if entity.name in (subject, obj):
            store.store.put(("memory", user_label(user), "graph", "entities"), entity.id,
                            {**entity.to_value(), "updated_at": days_ago(age)})
    return relation.id


def test_retention_keys_are_the_fact_categories_the_graph_and_the_audit_trail() -> None:
    assert set(MEMORY_RETENTION_KEYS) == {*CATEGORIES, "graph", "audit"}
    with pytest.raises(ValidationError, match="has no category colour"):
        MemoryConfig(retention_days={"colour": 3})
    with pytest.raises(ValidationError, match="1 or more"):
        MemoryConfig(retention_days={"graph": 0})
    assert MemoryConfig(retention_days=30).retention_for("audit") == 30
    assert MemoryConfig(retention_days={"graph": 9}).retention_for("preference") is None


def test_a_sweep_removes_everything_past_its_category_retention_for_every_user() -> None:
    store = MemoryStore(InMemoryStore())
    config = MemoryConfig(retention_days={"behavior": 30, "preference": 365, "graph": 90, "audit": 60})
    old_habit = aged_fact(store, "ann", "Ann deploys on Fridays", "behavior", 31)
    new_habit = aged_fact(store, "ann", "Ann reviews code on Mondays", "behavior", 29)
    taste = aged_fact(store, "ann", "Ann prefers dark themes", "preference", 200)
    profile = aged_fact(store, "bob", "Bob lives in Lyon these days", "profile", 4000)  # no retention for profile
    bob_habit = aged_fact(store, "bob", "Bob naps after lunch daily", "behavior", 45)
    stale = aged_relation(store, "ann", "Zephyr", "Redis", 91)
    fresh = aged_relation(store, "ann", "Atlas", "Postgres", 10)
    old_audit = records(store.store, user_label("ann"))[0]["key"]
    store.store.put(audit_namespace(user_label("ann")), old_audit,
                    {**records(store.store, user_label("ann"))[0], "at": days_ago(61)})

    removed = sweep(store, config, now=NOW)

    assert {f.id for f in store.facts("ann")} == {new_habit.id, taste.id}
    assert {f.id for f in store.facts("bob")} == {profile.id}
    graph = GraphStore(store.store)
    assert [r.id for r in graph.relations("ann")] == [fresh]
    assert sorted(e.name for e in graph.entities("ann")) == ["Atlas", "Postgres"]  # Zephyr and Redis went with it
    assert stale not in {r.id for r in graph.relations("ann")}
    trail = records(store.store, user_label("ann"))
    assert old_audit not in {a["key"] for a in trail}
    deleted = {(a["kind"], a["id"]) for a in trail if a["origin"] == "retention"}
    assert ("fact", old_habit.id) in deleted and ("relation", stale) in deleted
    assert bob_habit.id not in {f.id for f in store.facts("bob")}
    assert removed >= 6


def test_one_number_applies_to_every_category_and_none_keeps_everything(tmp_path: Path) -> None:
    store = MemoryStore(InMemoryStore())
    aged_fact(store, "ann", "Ann prefers dark themes", "preference", 11)
    aged_relation(store, "ann", "Atlas", "Postgres", 11)
    assert sweep(store, MemoryConfig(), now=NOW) == 0
    assert sweep(store, MemoryConfig(retention_days=10), now=NOW) > 0
    assert store.facts("ann") == [] and GraphStore(store.store).relations("ann") == []
    assert GraphStore(store.store).entities("ann") == []
