"""The memory graph: entities and relations learned by the updater, contradictions kept as history,
an audit record of every write, and the user's off switch."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from herdsman.agents.lead import create_lead_agent, run_config
from herdsman.memory.audit import Origin, records
from herdsman.memory.extraction import build_prompt, parse_reply
from herdsman.memory.facts import Fact
from herdsman.memory.graph import GraphStore
from herdsman.memory.graph_schema import ExtractedRelation
from herdsman.memory.injection import FOOTER, HEADER, estimate_tokens, render_memory
from herdsman.memory.recall import GraphView
from herdsman.memory.service import MemoryService
from herdsman.memory.store import MemoryStore, user_label
from herdsman.models.scripted import ScriptedChatModel
from tests.support import make_config


def reply(*relations: dict[str, Any], entities: list[dict[str, Any]] | None = None) -> str:
    return json.dumps({"summary": "", "facts": [], "entities": entities or [], "relations": list(relations)})


AWS = {"subject": "Atlas", "predicate": "deploys to", "object": "AWS", "valid_from": "2026-01-10", "confidence": 1}
GCP = {"subject": "Atlas", "predicate": "deploys_to", "object": "GCP", "valid_from": "2026-03-01", "confidence": 1}
ANN = {"subject": "Ann", "predicate": "works on", "object": "Atlas", "confidence": 1}


async def learn(home: Path, replies: list[str], turns: list[str], user: str = "ann") -> tuple[MemoryService, Any]:
    config = make_config(home, memory={"enabled": True, "debounce_seconds": 0})
    service = MemoryService.open(config, ScriptedChatModel(responses=replies))
    agent = create_lead_agent(
        config, model=ScriptedChatModel(respond=lambda m: "Noted."), checkpointer=InMemorySaver(), memory=service
    )
    for i, text in enumerate(turns):
        await agent.ainvoke({"messages": [HumanMessage(text)]}, run_config(config, f"t-{i}", user_id=user))
        await service.worker.drain()
    return service, agent


def test_the_prompt_asks_for_entities_and_relations_and_bad_items_are_dropped() -> None:
    prompt = build_prompt("", [], [{"role": "user", "content": "We deploy Atlas to AWS"}])
    assert '"entities"' in prompt and '"relations"' in prompt and "deploys_to" in prompt
    update = parse_reply(
        json.dumps(
            {
                "facts": [],
                "entities": [{"name": "Atlas", "kind": "project"}, {"name": 3}, "x"],
                "relations": [AWS, {"subject": "Atlas"}, {**GCP, "valid_from": "March"}],
            }
        )
    )
    assert [(e.name, e.kind) for e in update.entities] == [("Atlas", "project")]
    assert [(r.predicate, r.object, r.valid_from) for r in update.relations] == [
        ("deploys_to", "AWS", "2026-01-10"),
        ("deploys_to", "GCP", None),
    ]


async def test_a_contradiction_closes_the_old_relation_and_keeps_it_as_history(home: Path) -> None:
    service, _ = await learn(
        home,
        [reply(AWS, ANN, entities=[{"name": "Atlas", "kind": "project", "aliases": ["atlas-api"]}]), reply(GCP)],
        ["Ann here: I work on Atlas, and we deploy Atlas to AWS.", "Atlas deploys to GCP now, since March."],
    )
    graph = GraphStore(service.store.store)
    names = {e.id: e.name for e in graph.entities("ann")}
    assert sorted(names.values()) == ["AWS", "Ann", "Atlas", "GCP"]
    deploys = {names[r.object]: r for r in graph.relations("ann") if r.predicate == "deploys_to"}
    assert deploys["AWS"].valid_to == "2026-03-01" and deploys["AWS"].valid_from == "2026-01-10"
    assert deploys["GCP"].open and deploys["GCP"].source_thread == "t-1"
    works = [r for r in graph.relations("ann") if r.predicate == "works_on"]
    assert len(works) == 1 and works[0].open  # a multi-valued predicate is not closed by anything
    assert graph.find("ann", "atlas-api").name == "Atlas"  # found by its alias
    assert graph.entities("bob") == []

    trail = records(service.store.store, user_label("ann"))
    closed = [a for a in trail if a["action"] == "close"]
    assert [(a["kind"], a["id"], a["thread_id"]) for a in closed] == [("relation", deploys["AWS"].id, "t-1")]
    assert all(a["origin"] == "updater" and a["thread_id"] in ("t-0", "t-1") for a in trail)
    service.close()


async def test_the_same_relation_learned_twice_is_one_record(home: Path) -> None:
    service, _ = await learn(home, [reply(AWS), reply(AWS)], ["We deploy Atlas to AWS.", "Yes, Atlas deploys to AWS."])
    graph = GraphStore(service.store.store)
    assert len(graph.relations("ann")) == 1
    service.close()


async def test_with_graph_off_only_flat_facts_are_learned_and_injected(home: Path) -> None:
    """memory.graph: false is the flat mode: facts only, whatever the memory model lists beside them."""
    config = make_config(home, memory={"enabled": True, "debounce_seconds": 0, "graph": False})
    fact = {
        "content": "Atlas deploys to AWS",
        "category": "project",
        "confidence": 1,
        "quote": "We deploy Atlas to AWS",
    }
    learned = json.dumps({"facts": [fact], "entities": [{"name": "Atlas"}], "relations": [AWS]})
    service = MemoryService.open(config, ScriptedChatModel(responses=[learned]))
    GraphStore(service.store.store).put_relation("ann", ExtractedRelation(**GCP), Origin())  # kept from before
    lead = ScriptedChatModel(respond=lambda m: "Noted.")
    agent = create_lead_agent(config, model=lead, checkpointer=InMemorySaver(), memory=service)
    await agent.ainvoke(
        {"messages": [HumanMessage("We deploy Atlas to AWS.")]}, run_config(config, "t-0", user_id="ann")
    )
    await service.worker.drain()
    graph = GraphStore(service.store.store)
    assert [f.content for f in service.store.facts("ann")] == ["Atlas deploys to AWS"]
    assert [graph.find("ann", "AWS"), len(graph.relations("ann"))] == [None, 1]  # nothing new in the graph
    await agent.ainvoke(
        {"messages": [HumanMessage("Where does Atlas deploy?")]}, run_config(config, "t-1", user_id="ann")
    )
    system = lead.calls[-1].messages[0].text
    assert "Atlas deploys to AWS" in system and "[r:" not in system and "GCP" not in system
    service.close()


async def test_an_ended_relation_is_closed_even_when_its_predicate_is_multi_valued(home: Path) -> None:
    """ "uses" is closed by nothing else: the memory model lists what ended (with another wording of
    the predicate, since it does not see the graph), and the relation becomes history."""
    pager = {
        "subject": "Harbor",
        "predicate": "uses",
        "object": "PagerDuty",
        "valid_from": "2025-01-01",
        "confidence": 1,
    }
    k8s = {"subject": "Harbor", "predicate": "uses", "object": "Kubernetes", "confidence": 1}
    ops = {"subject": "Harbor", "predicate": "on_call_uses", "object": "Opsgenie", "confidence": 1}
    ended = json.dumps(
        {
            "facts": [],
            "relations": [ops],
            "ended": [
                {"subject": "Harbor", "predicate": "on call uses", "object": "PagerDuty", "valid_to": "2026-04-01"},
                {"subject": "Harbor", "predicate": "uses", "object": "Nomad"},  # nothing to close: ignored
            ],
        }
    )
    service, _ = await learn(
        home,
        [reply(pager, k8s), ended],
        [
            "Harbor uses PagerDuty for on-call and runs on Kubernetes, Harbor uses Kubernetes.",
            "We replaced PagerDuty: Harbor's on-call uses Opsgenie since April, not Nomad.",
        ],
    )
    graph = GraphStore(service.store.store)
    view = GraphView(graph.entities("ann"), graph.relations("ann"))
    state = {view.name(r.object): r.valid_to for r in graph.relations("ann")}
    assert state == {"PagerDuty": "2026-04-01", "Kubernetes": None, "Opsgenie": None}
    trail = records(service.store.store, user_label("ann"))
    assert [(a["action"], a["thread_id"]) for a in trail if a["action"] == "close"] == [("close", "t-1")]
    service.close()


def test_a_relation_about_the_user_is_grounded_by_its_object_in_their_words() -> None:
    from herdsman.memory.grounding import STATED, UNSUPPORTED, grounded_relations

    said = [{"role": "user", "content": "I finished my PhD! I work at RIKEN as a postdoc now."}]
    role = ExtractedRelation(subject="Hana", predicate="role", object="postdoc", confidence=1)
    made_up = ExtractedRelation(subject="Hana", predicate="lives_in", object="Berlin", confidence=1)
    assert [r.confidence for r in grounded_relations([role, made_up], said)] == [STATED, UNSUPPORTED]
    # the subject said is not enough: the object must be the user's words too
    atlas = [
        {"role": "user", "content": "I'm Ana, my project Atlas deploys to GCP."},
        {"role": "assistant", "content": "So you work with Google Cloud."},
    ]
    guess = ExtractedRelation(subject="Ana", predicate="works_at", object="Google", confidence=1)
    stated = ExtractedRelation(subject="Atlas", predicate="deploys_to", object="GCP", confidence=1)
    assert [r.confidence for r in grounded_relations([guess, stated], atlas)] == [UNSUPPORTED, STATED]


async def test_relations_nobody_said_are_not_kept(home: Path) -> None:
    made_up = {"subject": "Ann", "predicate": "lives_in", "object": "Berlin", "confidence": 1}
    service, _ = await learn(home, [reply(made_up)], ["Please format this JSON file."])
    assert GraphStore(service.store.store).relations("ann") == []
    service.close()


async def test_memory_turned_off_learns_nothing(home: Path) -> None:
    config = make_config(home, memory={"enabled": True, "debounce_seconds": 0})
    service = MemoryService.open(config, ScriptedChatModel(responses=[reply(AWS)]))
    service.store.set_enabled("ann", False)
    agent = create_lead_agent(
        config, model=ScriptedChatModel(respond=lambda m: "Noted."), checkpointer=InMemorySaver(), memory=service
    )
    await agent.ainvoke(
        {"messages": [HumanMessage("We deploy Atlas to AWS.")]}, run_config(config, "t-0", user_id="ann")
    )
    await service.worker.drain()
    assert service.queue.pending() == [] and GraphStore(service.store.store).relations("ann") == []
    service.close()


# -- recall ---------------------------------------------------------------------------------


def seeded_graph(store: Any) -> GraphStore:
    """Atlas deployed to AWS then GCP; Ann works on Atlas; Zephyr (unrelated) uses Redis; and facts."""
    graph = GraphStore(store)
    origin = Origin("updater", "t-0")
    graph.put_relation("ann", ExtractedRelation(**AWS), origin)
    graph.put_relation("ann", ExtractedRelation(**GCP), origin)
    graph.put_relation("ann", ExtractedRelation(**ANN), origin)
    graph.put_relation("ann", ExtractedRelation(subject="Zephyr", predicate="uses", object="Redis"), origin)
    return graph


def test_injection_starts_from_the_entities_the_request_names_and_cites_ids() -> None:
    memory = MemoryStore(InMemoryStore())
    graph = seeded_graph(memory.store)
    tea = memory.put("ann", Fact.new("Ann drinks green tea every morning", "preference"))
    view = GraphView(graph.entities("ann"), graph.relations("ann"))
    by_object = {view.name(r.object): r for r in view.relations}

    section = render_memory(memory.facts("ann"), "", "Where does atlas deploy?", 1000, graph=view)
    lines = section.splitlines()
    assert lines[2] == f"- Atlas: [r:{by_object['GCP'].id}] deploys to GCP"  # one line per entity, cited
    assert f"- Ann: [r:{by_object['Atlas'].id}] works on Atlas" in lines  # one hop
    assert "AWS" not in section  # not asked about change: the current value only
    assert "Zephyr" not in section and tea.id not in section  # about something: nothing unrelated fills the budget

    tight = estimate_tokens(HEADER) + estimate_tokens(FOOTER) + estimate_tokens(lines[2]) + 4
    small = render_memory(memory.facts("ann"), "", "Where does atlas deploy?", tight, graph=view)
    assert "GCP" in small and "Ann" not in small.replace(HEADER, "")
    assert estimate_tokens(small) <= tight

    idle = render_memory(memory.facts("ann"), "", "Hello there!", 1000, graph=view)
    assert "Zephyr: [r:" in idle and tea.id in idle  # about nothing memory knows: a little of the most recent


def test_history_is_injected_when_the_request_is_about_change() -> None:
    graph = seeded_graph(InMemoryStore())
    view = GraphView(graph.entities("ann"), graph.relations("ann"))
    by_object = {view.name(r.object): r for r in view.relations}
    for asked in ("Where did atlas deploy before?", "Since when does Atlas deploy to GCP?", "Is Atlas still on AWS?"):
        section = render_memory([], "", asked, 1000, graph=view)
        assert (
            f"- Atlas: [r:{by_object['GCP'].id}] deploys to GCP (since 2026-03-01, was AWS until 2026-03-01 "
            f"[r:{by_object['AWS'].id}])"
        ) in section, asked
    ended = GraphStore(InMemoryStore())
    ended.put_relation(
        "ann", ExtractedRelation(subject="Atlas", predicate="uses", object="Redis", valid_from="2025-05-01"), Origin()
    )
    ended.close("ann", ended.relations("ann")[0], "2026-02-01", Origin())
    view = GraphView(ended.entities("ann"), ended.relations("ann"))
    assert render_memory([], "", "What does Atlas use?", 1000, graph=view) == ""  # an ended relation is history
    assert "uses Redis (from 2025-05-01 until 2026-02-01)" in render_memory(
        [], "", "What did Atlas use before?", 1000, graph=view
    )


def test_a_large_graph_never_passes_the_budget() -> None:
    memory = MemoryStore(InMemoryStore())
    graph = GraphStore(memory.store)
    for i in range(60):
        graph.put_relation(
            "ann", ExtractedRelation(subject="Atlas", predicate="depends_on", object=f"Service {i}"), Origin()
        )
        graph.put_relation(
            "ann", ExtractedRelation(subject=f"Project {i}", predicate="hosted_on", object="GCP"), Origin()
        )
    view = GraphView(graph.entities("ann"), graph.relations("ann"))
    for budget in (30, 60, 200, 800):
        section = render_memory([], "A long summary of the user " * 5, "what does atlas depend on?", budget, graph=view)
        assert estimate_tokens(section) <= budget, budget
    section = render_memory([], "", "what does atlas depend on?", 200, graph=view)
    lines = section.splitlines()[2:-1]
    atlas = [i for i, line in enumerate(lines) if "Atlas depends on" in line]
    assert atlas == list(range(len(atlas))) and len(atlas) >= len(lines) - 1  # the named entity's relations first


async def test_the_lead_memory_tool_answers_about_an_entity_with_its_history(home: Path) -> None:
    config = make_config(home, memory={"enabled": True, "debounce_seconds": 0})
    service = MemoryService.open(config, ScriptedChatModel(responses=[]))
    seeded_graph(service.store.store)

    def lead(messages: list[Any]) -> Any:
        if messages[-1].type == "human":
            return {"tool_calls": [{"name": "memory", "args": {"action": "about", "query": "atlas"}}]}
        if messages[-1].type == "tool" and "about" not in messages[-1].text:
            return {"tool_calls": [{"name": "memory", "args": {"action": "add", "content": "Ann likes tea a lot"}}]}
        return "done"

    agent = create_lead_agent(
        config, model=ScriptedChatModel(respond=lead), checkpointer=InMemorySaver(), memory=service
    )
    state = await agent.ainvoke(
        {"messages": [HumanMessage("What do we know about Atlas?")]}, run_config(config, "t-9", user_id="ann")
    )
    answers = [m.text for m in state["messages"] if m.type == "tool"]
    assert "Now:" in answers[0] and "Atlas deploys to GCP (since 2026-03-01" in answers[0]
    assert "History:" in answers[0] and "Atlas deploys to AWS (from 2026-01-10 until 2026-03-01)" in answers[0]
    assert "not available" in answers[1]  # mode auto: the lead's tool is read-only
    assert service.store.facts("ann") == []
    bob = await agent.ainvoke(
        {"messages": [HumanMessage("What do we know about Atlas?")]}, run_config(config, "t-10", user_id="bob")
    )
    assert "Nothing is known about 'atlas'" in [m.text for m in bob["messages"] if m.type == "tool"][0]
    service.close()


# -- on the real stores ---------------------------------------------------------------------


def real_store(kind: str, home: Path, request: Any) -> Any:
    """An opened SQLite or PostgreSQL memory store (a fresh database)."""
    from herdsman.memory.backend import open_store

    if kind == "sqlite":
        return open_store(make_config(home, memory={"enabled": True}))
    import uuid

    import psycopg

    base = request.getfixturevalue("postgres_url")
    name = f"graph_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = base.rsplit("/", 1)[0] + f"/{name}"
    return open_store(make_config(home, memory={"enabled": True, "store": "postgres", "url": url}))


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_history_purge_and_retention_stay_within_one_user_on_real_stores(kind: str, home: Path, request: Any) -> None:
    """Users whose labels share a prefix ("ann", "anna", "ann.b") never touch each other's graph."""
    from herdsman.config.schema import MemoryConfig
    from herdsman.memory.backend import close_store
    from herdsman.memory.governance import export_user, purge_user
    from herdsman.memory.retention import sweep

    raw = real_store(kind, home, request)
    try:
        memory, graph = MemoryStore(raw), GraphStore(raw)
        users = ("ann", "anna", "ann.b")
        for user in users:
            graph.put_relation(user, ExtractedRelation(**AWS), Origin("updater", f"t-{user}"))
            graph.put_relation(user, ExtractedRelation(**GCP), Origin("updater", f"t-{user}"))
            memory.put(user, Fact.new(f"{user} prefers short answers", "preference"))
        for user in users:
            relations = graph.relations(user)
            assert sorted((r.valid_to or "open") for r in relations) == ["2026-03-01", "open"], user
            assert export_user(memory, user)["audit"]
        purge_user(memory, None, "ann")
        assert export_user(memory, "ann") == {
            "enabled": True,
            "summary": "",
            "facts": [],
            "entities": [],
            "relations": [],
            "audit": [],
        }
        for user in ("anna", "ann.b"):
            assert len(graph.relations(user)) == 2 and len(memory.facts(user)) == 1, user
        far = dt.datetime.now(dt.UTC) + dt.timedelta(days=40)
        assert sweep(memory, MemoryConfig(retention_days={"graph": 30}), now=far) > 0
        for user in ("anna", "ann.b"):
            assert graph.relations(user) == [] and graph.entities(user) == [] and len(memory.facts(user)) == 1
    finally:
        close_store(raw)


async def test_a_purge_while_the_memory_model_reads_a_turn_keeps_nothing_of_it(home: Path) -> None:
    """The turn is claimed, the user purges, then the model answers: nothing is written."""
    from herdsman.memory.governance import purge_user

    config = make_config(home, memory={"enabled": True, "debounce_seconds": 0})
    service: MemoryService

    def purging_model(messages: list[Any]) -> str:
        purge_user(service.store, service.queue, "ann")
        return reply(AWS)

    service = MemoryService.open(config, ScriptedChatModel(respond=purging_model))
    service.queue.enqueue(
        "t-0", "ann", [{"role": "user", "content": "We deploy Atlas to AWS."}, {"role": "assistant", "content": "ok"}]
    )
    await service.updater.arun_pending()
    assert GraphStore(service.store.store).relations("ann") == [] and service.queue.pending() == []
    assert records(service.store.store, user_label("ann")) == []
    service.close()
