"""memory.consolidate_after_days: old facts fold into one summary per category at each sweep, with provenance."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path

import pytest
from langgraph.store.memory import InMemoryStore
from pydantic import ValidationError

from herdsman.config.schema import MemoryConfig
from herdsman.memory.audit import records
from herdsman.memory.consolidation import MAX_SUMMARY_CHARS
from herdsman.memory.facts import Fact
from herdsman.memory.injection import render_memory
from herdsman.memory.retention import sweep
from herdsman.memory.store import MemoryStore, facts_namespace, user_label
from tests.memory.test_memory_cli import seed
from tests.support import run_cli_here

NOW = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)


def days_ago(n: int) -> str:
    return (NOW - dt.timedelta(days=n)).isoformat(timespec="seconds")


def aged(store: MemoryStore, user: str, content: str, category: str, age: int) -> Fact:
    fact = replace(Fact.new(content, category, 0.9), created_at=days_ago(age), updated_at=days_ago(age))
    store.store.put(facts_namespace(user), fact.id, fact.to_value())
    return fact


def test_old_facts_of_a_category_become_one_summary_that_names_them() -> None:
    store = MemoryStore(InMemoryStore())
    old = [
        aged(store, "ann", text, "project", age)
        for text, age in [
            ("Atlas is written in Go", 200),
            ("Atlas uses PostgreSQL 16", 150),
            ("Atlas deploys on Fridays", 120),
        ]
    ]
    recent = aged(store, "ann", "Atlas moved its CI to GitHub Actions", "project", 5)
    taste = aged(store, "ann", "Ann prefers dark themes", "preference", 300)  # alone in its category: kept as is
    bob = [aged(store, "bob", f"Bob's project {n} is in Rust", "project", 200) for n in "xyz"]

    sweep(store, MemoryConfig(consolidate_after_days=90), now=NOW)

    facts = {f.id: f for f in store.facts("ann")}
    summaries = [f for f in facts.values() if f.sources]
    assert len(summaries) == 1 and set(facts) == {summaries[0].id, recent.id, taste.id}
    summary = summaries[0]
    assert summary.category == "project" and summary.sources == tuple(f.id for f in old)  # oldest first
    assert summary.content == (
        "Earlier (project): Atlas is written in Go; Atlas uses PostgreSQL 16; Atlas deploys on Fridays."
    )
    assert summary.updated_at == days_ago(200)  # as old as its oldest fact: retention still counts from there
    trail = records(store.store, user_label("ann"))
    folded = [a for a in trail if a["action"] == "consolidate"]
    assert [(a["id"], a["sources"], a["origin"]) for a in folded] == [
        (summary.id, [f.id for f in old], "consolidation")
    ]
    assert {a["id"] for a in trail if a["action"] == "delete" and a["origin"] == "consolidation"} == {f.id for f in old}
    assert len([f for f in store.facts("bob") if f.sources]) == 1  # every user is swept, each on their own
    assert not {f.id for f in bob} & {f.id for f in store.facts("bob")}

    memory = render_memory(store.facts("ann"), "", "what is Atlas written in?", 1000)
    assert f"[f:{summary.id}]" in memory and "Atlas is written in Go" in memory


def test_a_summary_is_not_folded_again_and_a_second_sweep_changes_nothing() -> None:
    store = MemoryStore(InMemoryStore())
    for n in range(3):
        aged(store, "ann", f"Ann reads paper number {n} each week", "behavior", 100)
    config = MemoryConfig(consolidate_after_days=30)
    sweep(store, config, now=NOW)
    first = store.facts("ann")
    sweep(store, config, now=NOW + dt.timedelta(days=400))
    assert store.facts("ann") == first and len(first) == 1


def test_long_groups_are_split_and_retention_still_removes_summaries() -> None:
    store = MemoryStore(InMemoryStore())
    for n in range(40):
        aged(store, "ann", f"Service number {n} of the fleet runs behind the shared load balancer", "project", 100)
    sweep(store, MemoryConfig(consolidate_after_days=30), now=NOW)
    summaries = store.facts("ann")
    assert len(summaries) > 1 and all(len(f.content) <= MAX_SUMMARY_CHARS + 40 for f in summaries)
    assert sum(len(f.sources) for f in summaries) == 40
    sweep(store, MemoryConfig(consolidate_after_days=30, retention_days=99), now=NOW)
    assert store.facts("ann") == []


def test_too_few_old_facts_or_no_setting_leave_memory_alone() -> None:
    store = MemoryStore(InMemoryStore())
    aged(store, "ann", "Atlas is written in Go", "project", 200)
    aged(store, "ann", "Atlas uses PostgreSQL 16", "project", 200)
    aged(store, "ann", "Atlas deploys on Fridays", "project", 20)
    before = store.facts("ann")
    assert sweep(store, MemoryConfig(), now=NOW) == 0
    sweep(store, MemoryConfig(consolidate_after_days=90), now=NOW)
    assert store.facts("ann") == before
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        MemoryConfig(consolidate_after_days=0)


def test_a_summary_survives_the_store_api_round_trip() -> None:
    """The Store API shows a summary with its sources and takes the record back as it was shown."""
    from herdsman.memory.user_store import UserStore

    store = MemoryStore(InMemoryStore())
    for n in range(3):
        aged(store, "ann", f"Ann reads paper number {n} each week", "behavior", 100)
    sweep(store, MemoryConfig(consolidate_after_days=30), now=NOW)
    summary = store.facts("ann")[0]
    mine = UserStore(store.store, "ann")
    shown = mine.get(["memory", "facts"], summary.id)
    assert shown is not None and shown["value"]["sources"] == list(summary.sources)
    mine.put(["memory", "facts"], summary.id, shown["value"])  # no "unknown field" refusal


def test_sweep_consolidates_from_the_cli(tmp_path: Path) -> None:
    seed(tmp_path)
    (tmp_path / "config.yaml").write_text(
        "home: .herdsman\nmemory: {enabled: true, user_id: ann, consolidate_after_days: 30}\n"
    )
    from herdsman.config import load_config
    from herdsman.memory.backend import close_store, open_store

    raw = open_store(load_config(tmp_path / "config.yaml").config)
    store = MemoryStore(raw)
    for n in range(3):
        store.store.put(
            facts_namespace("ann"),
            f"k{n}",
            replace(
                Fact.new(f"Ann reviewed design doc {n} with the team", "knowledge"),
                updated_at="2020-01-01T00:00:00+00:00",
            ).to_value(),
        )
    close_store(raw)
    swept = run_cli_here("memory", "sweep", cwd=tmp_path)
    assert swept.returncode == 0 and "removed 3 item(s)" in swept.stdout
    listed = run_cli_here("memory", "list", cwd=tmp_path).stdout
    assert "Earlier (knowledge)" in listed and "Ann writes CLI tools in Rust" in listed
