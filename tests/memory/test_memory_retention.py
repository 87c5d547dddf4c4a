"""memory.retention_days, per category: nothing in a user's memory outlives it, whoever wrote it."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path
from typing import Any

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

NOW = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)


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
            store.store.put(
                ("memory", user_label(user), "graph", "entities"),
                entity.id,
                {**entity.to_value(), "updated_at": days_ago(age)},
            )
    return relation.id


def test_retention_keys_are_the_fact_categories_the_graph_the_audit_trail_and_the_queue() -> None:
    assert set(MEMORY_RETENTION_KEYS) == {*CATEGORIES, "graph", "audit", "pending"}
    assert MemoryConfig(retention_days={"graph": 90, "behavior": 30}).retention_for("pending") == 30  # the shortest
    assert MemoryConfig(retention_days={"graph": 90, "pending": 2}).retention_for("pending") == 2
    assert MemoryConfig().retention_for("pending") is None
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
    store.store.put(
        audit_namespace(user_label("ann")),
        old_audit,
        {**records(store.store, user_label("ann"))[0], "at": days_ago(61)},
    )

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


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_no_kind_of_record_outlives_its_retention_on_the_real_stores(kind: str, home: Path, request: Any) -> None:
    """Facts, a consolidated summary, the context summary, entities, relations and their history,
    the audit trail, queued turns: everything older than its retention is gone after the sweep,
    what is younger stays."""
    from herdsman.memory.backend import close_store, memory_db_path
    from herdsman.memory.queue import UpdateQueue
    from tests.memory.test_memory_graph import AWS, GCP, real_store
    from tests.support import make_config

    raw = real_store(kind, home, request)
    queue = UpdateQueue(memory_db_path(make_config(home, memory={"enabled": True})))
    try:
        store, graph = MemoryStore(raw), GraphStore(raw)
        for n in range(3):  # old enough to be folded into a summary by the sweep, which is as old as they are
            store.put("ann", Fact.new(f"Ann deploys on day {n} of the sprint", "behavior"))
        store.set_summary("ann", "Ann leads Atlas.")
        graph.put_relation("ann", ExtractedRelation(**AWS), Origin("updater", "t-0"))
        graph.put_relation("ann", ExtractedRelation(**GCP), Origin("updater", "t-0"))  # AWS becomes history
        queue.enqueue("t-old", "ann", [{"role": "user", "content": "We deploy Atlas on Fridays."}])
        far = dt.datetime.now(dt.UTC) + dt.timedelta(days=40)  # everything above is 40 days old then
        young = (far - dt.timedelta(days=1)).isoformat(timespec="seconds")
        fresh = replace(Fact.new("Ann reviews code on Mondays", "behavior"), created_at=young, updated_at=young)
        raw.put(facts_namespace("ann"), fresh.id, fresh.to_value())
        queue.enqueue("t-new", "ann", [{"role": "user", "content": "Review my branch."}])
        with queue._tx() as cur:  # queued a day before `far`
            cur.execute(
                "UPDATE memory_pending SET created_at = ? WHERE thread_id = 't-new'",
                ((far - dt.timedelta(days=1)).timestamp(),),
            )
        config = MemoryConfig(
            retention_days={"behavior": 30, "profile": 30, "graph": 30, "audit": 30}, consolidate_after_days=20
        )
        assert records(raw, user_label("ann")) and len(graph.relations("ann")) == 2

        assert sweep(store, config, now=far, queue=queue) > 0

        assert [f.id for f in store.facts("ann")] == [fresh.id]  # the summary of the old ones went too
        assert store.summary("ann") == ""
        assert graph.relations("ann") == [] and graph.entities("ann") == []
        assert [row["thread_id"] for row in queue.pending()] == ["t-new"]
        assert records(raw, user_label("ann")) == []  # every record, the sweep's own deletions too, is that old then
    finally:
        queue.close()
        close_store(raw)


def test_an_export_carries_nothing_past_retention(home: Path) -> None:
    from herdsman.memory.backend import close_store, open_store
    from herdsman.memory.governance import export_user
    from tests.support import make_config

    raw = open_store(make_config(home, memory={"enabled": True}))
    try:
        store = MemoryStore(raw)
        old = aged_fact(store, "ann", "Ann deploys on Fridays", "behavior", 400)
        kept = store.put("ann", Fact.new("Ann reviews code on Mondays", "behavior"))
        assert {f["id"] for f in export_user(store, "ann")["facts"]} == {old.id, kept.id}  # no config: as kept
        exported = export_user(store, "ann", MemoryConfig(retention_days={"behavior": 30}))
        assert [f["id"] for f in exported["facts"]] == [kept.id] and store.get("ann", old.id) is None
    finally:
        close_store(raw)


async def test_what_is_past_retention_is_never_injected_or_found_even_before_the_sweep(home: Path) -> None:
    """Between two sweeps, an old fact, relation or context summary stays in the store; the lead's
    memory section and the memory tool must not use it (the fresh ones are used)."""
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from herdsman.agents.lead import create_lead_agent, run_config
    from herdsman.memory.service import MemoryService
    from herdsman.memory.tool import about
    from herdsman.models.scripted import ScriptedChatModel
    from tests.support import make_config

    config = make_config(
        home, memory={"enabled": True, "mode": "tool", "retention_days": {"behavior": 30, "graph": 30, "profile": 30}}
    )
    service = MemoryService.open(config, store=InMemoryStore())
    store = service.store
    age = (dt.datetime.now(dt.UTC) - NOW).days + 400  # 400 days old today
    aged_fact(store, "default", "Ann deploys Atlas on Fridays", "behavior", age)
    store.put("default", Fact.new("Ann deploys Atlas on Mondays now", "behavior"))
    aged_relation(store, "default", "Atlas", "Heroku", age)
    GraphStore(store.store).put_relation(
        "default", ExtractedRelation(subject="Atlas", predicate="uses", object="Fly"), Origin()
    )
    store.set_summary("default", "Ann ran Atlas on Heroku.")
    summary = store.store.get(("memory", user_label("default"), "profile"), "summary")
    if summary is not None:
        store.store.put(
            ("memory", user_label("default"), "profile"), "summary", {**summary.value, "updated_at": days_ago(age)}
        )
    search = {"tool_calls": [{"name": "memory", "args": {"action": "search", "query": "Atlas deploys"}}]}
    lead = ScriptedChatModel(responses=[search, "noted"])
    agent = create_lead_agent(config, model=lead, checkpointer=InMemorySaver(), memory=service)
    state = await agent.ainvoke(
        {"messages": [HumanMessage("When does Atlas deploy, and where?")]}, run_config(config, "t1")
    )
    section = lead.calls[0].messages[0].text
    assert "Mondays" in section and "Fly" in section
    assert "Fridays" not in section and "Heroku" not in section
    found = next(m.text for m in state["messages"] if m.type == "tool")
    assert "Mondays" in found and "Fridays" not in found
    assert "Heroku" not in about(service, "default", "Atlas")
    assert len(store.facts("default")) == 2  # nothing was deleted: reading is not the sweep
