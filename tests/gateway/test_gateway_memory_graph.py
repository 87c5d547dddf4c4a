"""The memory graph and its governance over HTTP: learned from a run made with the langgraph-sdk,
listed, deleted, audited to its thread and run, switched off, exported and purged, per user."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from langgraph_sdk import get_client

from herdsman.memory.audit import Origin
from herdsman.memory.facts import Fact
from herdsman.memory.graph import GraphStore
from herdsman.memory.graph_schema import ExtractedRelation
from herdsman.models.scripted import ScriptedChatModel
from herdsman_gateway.auth import user_id_for_key
from tests.gateway.gateway_support import running_gateway, user_message
from tests.support import make_config

LEARNED = {
    "summary": "",
    "facts": [
        {
            "content": "The user deploys Atlas every Friday",
            "category": "behavior",
            "confidence": 0.9,
            "quote": "We deploy Atlas to GCP on Fridays",
        }
    ],
    "entities": [{"name": "Atlas", "kind": "project"}],
    "relations": [{"subject": "Atlas", "predicate": "deploys_to", "object": "GCP", "confidence": 0.9}],
}


def lead_and_memory_model(messages: list[Any]) -> Any:
    """The memory model learns the graph from the turn that says it; every other call a short answer."""
    prompt = messages[-1].text
    if "long-term memory of an assistant" in prompt:
        return json.dumps(LEARNED if "We deploy Atlas to GCP on Fridays." in prompt else {"facts": []})
    return "Noted."


def system_prompt(model: ScriptedChatModel) -> str:
    calls = [c for c in model.calls if "long-term memory of an assistant" not in c.messages[-1].text]
    return "\n".join(m.text for m in calls[-1].messages if m.type == "system")


async def until(check: Any) -> Any:
    """Wait for the memory worker (it writes after the run); the test fails on its own timeout."""
    while not (found := await check()):
        await asyncio.sleep(0.05)
    return found


async def test_a_run_teaches_the_graph_which_the_owner_lists_audits_edits_switches_off_and_purges(home) -> None:
    config = make_config(home, memory={"enabled": True, "debounce_seconds": 0})
    model = ScriptedChatModel(respond=lead_and_memory_model)
    with running_gateway(config, model=model) as gw:
        client = get_client(url=gw.url, api_key=None)
        thread = await client.threads.create()
        run = await client.runs.create(
            thread["thread_id"], "lead_agent", input=user_message("We deploy Atlas to GCP on Fridays.")
        )
        await client.runs.join(thread["thread_id"], run["run_id"])
        async with httpx.AsyncClient(base_url=gw.url, timeout=30) as http:

            async def graph() -> dict | None:
                body = (await http.get("/api/memory/graph")).json()
                return body if body["relations"] else None

            learned = await asyncio.wait_for(until(graph), 30)
            relation = learned["relations"][0]
            assert (relation["subject_name"], relation["predicate"], relation["object_name"]) == (
                "Atlas",
                "deploys_to",
                "GCP",
            )
            assert relation["valid_to"] is None and relation["source_thread"] == thread["thread_id"]
            assert relation["source_run"] == run["run_id"]
            audit = (await http.get("/api/memory/audit")).json()["records"]
            kinds = {(a["kind"], a["id"]) for a in audit}
            assert ("relation", relation["id"]) in kinds and any(k == "fact" for k, _ in kinds)
            assert {(a["thread_id"], a["run_id"], a["origin"]) for a in audit} == {
                (thread["thread_id"], run["run_id"], "updater")
            }

            # the next run is told, with the relation's id
            await client.runs.wait(None, "lead_agent", input=user_message("Where does Atlas deploy?"))
            assert f"- Atlas: [r:{relation['id']}] deploys to GCP" in system_prompt(model)

            # delete a relation, then an entity (with what names it); unknown ids are 404 and say what to do
            assert (await http.delete(f"/api/memory/relations/{relation['id']}")).status_code == 204
            missing = await http.delete(f"/api/memory/relations/{relation['id']}")
            assert missing.status_code == 404 and "GET /api/memory/graph" in missing.json()["detail"]
            atlas = next(e for e in learned["entities"] if e["name"] == "Atlas")
            assert (await http.delete(f"/api/memory/entities/{atlas['id']}")).status_code == 204
            assert (await http.delete(f"/api/memory/entities/{atlas['id']}")).status_code == 404
            names = {e["name"] for e in (await http.get("/api/memory/graph")).json()["entities"]}
            assert names == {"GCP"}
            assert {(a["action"], a["origin"]) for a in (await http.get("/api/memory/audit")).json()["records"]} >= {
                ("delete", "api")
            }

            # off: nothing injected, nothing learned; bad bodies are 422
            for bad in ({}, {"enabled": "maybe"}, {"enabled": False, "colour": 1}):
                res = await http.put("/api/memory/settings", json=bad)
                assert res.status_code == 422, (bad, res.text)
            assert (await http.put("/api/memory/settings", json={"enabled": False})).json() == {"enabled": False}
            assert (await http.get("/api/memory/settings")).json() == {"enabled": False}
            quiet = await client.threads.create()
            before = len(model.calls)
            await client.runs.wait(
                quiet["thread_id"], "lead_agent", input=user_message("We deploy Atlas to GCP on Fridays.")
            )
            assert "<memory>" not in system_prompt(model)
            queued = {row["thread_id"] for row in gw.app.state.gateway.memory.queue.pending()}
            # a queued turn stays listed until the memory model has read it: neither happened
            assert quiet["thread_id"] not in queued
            assert all(
                "We deploy Atlas" not in c.messages[-1].text
                for c in model.calls[before:]
                if "long-term memory of an assistant" in c.messages[-1].text
            )
            assert (await http.get("/api/memory")).json()["enabled"] is False

            # export everything, then purge everything (the switch stays)
            export = (await http.get("/api/memory/export")).json()["default"]
            assert set(export) == {"enabled", "summary", "facts", "entities", "relations", "audit"}
            assert export["facts"] and export["audit"]
            assert (await http.delete("/api/memory")).status_code == 204
            after = (await http.get("/api/memory/export")).json()["default"]
            assert after == {"enabled": False, "summary": "", "facts": [], "entities": [], "relations": [], "audit": []}
        await client.aclose()


async def test_no_route_reads_or_changes_another_users_memory(home) -> None:
    config = make_config(home, memory={"enabled": True, "mode": "tool"}, gateway={"api_keys": ["key-ana", "key-bo"]})
    with running_gateway(config) as gw:
        service = gw.app.state.gateway.memory
        ana_user, bo_user = user_id_for_key("key-ana"), user_id_for_key("key-bo")
        graph = GraphStore(service.store.store)
        ana_rel = graph.put_relation(
            ana_user, ExtractedRelation(subject="Orion", predicate="hosted_on", object="Azure"), Origin()
        )
        ana_entity = graph.find(ana_user, "Orion")
        service.store.put(ana_user, Fact.new("Ana likes chess openings", "preference"))
        graph.put_relation(bo_user, ExtractedRelation(subject="Vega", predicate="uses", object="Kafka"), Origin())
        ana, bo = {"x-api-key": "key-ana"}, {"x-api-key": "key-bo"}
        async with httpx.AsyncClient(base_url=gw.url) as http:
            for method, path in [
                ("GET", "/api/memory/graph"),
                ("GET", "/api/memory/audit"),
                ("GET", "/api/memory/settings"),
                ("PUT", "/api/memory/settings"),
                ("DELETE", "/api/memory"),
                ("DELETE", f"/api/memory/entities/{ana_entity.id}"),
            ]:
                res = await http.request(method, path, json={"enabled": False} if method == "PUT" else None)
                assert res.status_code == 401, (method, path)
            seen = json.dumps(
                [
                    (await http.get(p, headers=bo)).json()
                    for p in ("/api/memory/graph", "/api/memory/audit", "/api/memory/export", "/api/memory")
                ]
            )
            assert "Vega" in seen
            assert "Orion" not in seen and ana_rel.id not in seen and ana_entity.id not in seen and "chess" not in seen
            assert (await http.delete(f"/api/memory/relations/{ana_rel.id}", headers=bo)).status_code == 404
            assert (await http.delete(f"/api/memory/entities/{ana_entity.id}", headers=bo)).status_code == 404
            assert (await http.put("/api/memory/settings", headers=bo, json={"enabled": False})).status_code == 200
            assert (await http.delete("/api/memory", headers=bo)).status_code == 204
            mine = (await http.get("/api/memory/export", headers=ana)).json()[ana_user]
            assert mine["enabled"] is True and [r["id"] for r in mine["relations"]] == [ana_rel.id]
            assert [f["content"] for f in mine["facts"]] == ["Ana likes chess openings"]
            assert (await http.get("/api/memory/graph", headers=bo)).json() == {"entities": [], "relations": []}
            # the Store API names the same namespaces, scoped to the caller
            res = await http.post("/store/items/search", headers=bo, json={"namespace_prefix": ["memory", "graph"]})
            assert res.status_code == 200 and "Orion" not in res.text
            res = await http.post("/store/items/search", headers=ana, json={"namespace_prefix": ["memory", "graph"]})
            assert "Orion" in res.text
            # ... where the graph, the audit trail and the switch are read-only: they change only through memory
            for space in (["memory", "graph", "relations"], ["memory", "audit"], ["memory", "settings"]):
                res = await http.put(
                    "/store/items", headers=ana, json={"namespace": space, "key": ana_rel.id, "value": {"x": 1}}
                )
                assert res.status_code == 422 and '["memory", "facts"]' in res.json()["detail"], (space, res.text)
            assert (await http.get("/api/memory/graph", headers=ana)).json()["relations"][0]["object_name"] == "Azure"

            # a correction: the relation stopped being true; only its owner can say so, with a date after it began
            path = f"/api/memory/relations/{ana_rel.id}"
            assert (await http.patch(path, headers=bo, json={"valid_to": "2099-01-01"})).status_code == 404
            for bad, words in (
                ({"valid_to": "soon"}, "not a date"),
                ({"valid_to": "2001-01-01"}, "before the relation began"),
                ({}, "valid_to"),
                ({"valid_to": "2099-01-01", "x": 1}, "x"),
            ):
                res = await http.patch(path, headers=ana, json=bad)
                assert res.status_code == 422 and words in res.json()["detail"], (bad, res.text)
            ended = await http.patch(path, headers=ana, json={"valid_to": "2099-01-01"})
            assert ended.status_code == 200 and ended.json()["valid_to"] == "2099-01-01"
            assert ended.json()["subject_name"] == "Orion"
            again = await http.patch(path, headers=ana, json={"valid_to": "2099-02-01"})
            assert again.status_code == 409 and "already ended" in again.json()["detail"]
            trail = (await http.get("/api/memory/audit", headers=ana)).json()["records"]
            assert ("close", "relation", ana_rel.id, "api") in {
                (a["action"], a["kind"], a["id"], a["origin"]) for a in trail
            }


async def test_the_owner_corrects_a_relation_over_rest_and_no_one_else_can(home) -> None:
    """A relation that was wrong gets its object or predicate corrected: a new id, the same validity,
    what it replaced named in the audit trail; another user can neither see nor change it."""
    config = make_config(home, memory={"enabled": True, "mode": "tool"}, gateway={"api_keys": ["key-ana", "key-bo"]})
    with running_gateway(config) as gw:
        service = gw.app.state.gateway.memory
        ana_user = user_id_for_key("key-ana")
        graph = GraphStore(service.store.store)
        wrong = graph.put_relation(
            ana_user,
            ExtractedRelation(subject="Orion", predicate="deploys_to", object="AWS", valid_from="2026-01-10"),
            Origin(),
        )
        other = graph.put_relation(
            ana_user, ExtractedRelation(subject="Orion", predicate="uses", object="GCP"), Origin()
        )
        ana, bo = {"x-api-key": "key-ana"}, {"x-api-key": "key-bo"}
        path = f"/api/memory/relations/{wrong.id}"
        async with httpx.AsyncClient(base_url=gw.url) as http:
            assert (await http.patch(path, json={"object": "GCP"})).status_code == 401
            assert (await http.patch(path, headers=bo, json={"object": "GCP"})).status_code == 404
            for bad, words in (
                ({"object": "x"}, "object must name an entity"),
                ({"predicate": "!!"}, "predicate"),
                ({"object": "GCP", "valid_to": "2099-01-01"}, "not both"),
                ({}, "valid_to"),
                ({"object": 3}, "object"),
            ):
                res = await http.patch(path, headers=ana, json=bad)
                assert res.status_code == 422 and words in res.json()["detail"], (bad, res.text)
            assert graph.get_relation(ana_user, wrong.id) == wrong  # a refused correction changed nothing

            res = await http.patch(path, headers=ana, json={"object": "Azure"})
            assert res.status_code == 200, res.text
            fixed = res.json()
            assert (fixed["subject_name"], fixed["predicate"], fixed["object_name"]) == ("Orion", "deploys_to", "Azure")
            assert fixed["id"] != wrong.id and fixed["valid_from"] == "2026-01-10" and fixed["valid_to"] is None
            assert (
                await http.patch(path, headers=ana, json={"object": "GCP"})
            ).status_code == 404  # the old id is gone

            res = await http.patch(f"/api/memory/relations/{fixed['id']}", headers=ana, json={"predicate": "Hosted on"})
            assert res.status_code == 200 and res.json()["predicate"] == "hosted_on"
            final = res.json()["id"]
            listed = (await http.get("/api/memory/graph", headers=ana)).json()
            assert sorted((r["predicate"], r["object_name"]) for r in listed["relations"]) == [
                ("hosted_on", "Azure"),
                ("uses", "GCP"),
            ]
            assert "Azure" in {e["name"] for e in listed["entities"]}
            assert (await http.get("/api/memory/graph", headers=bo)).json() == {"entities": [], "relations": []}

            trail = (await http.get("/api/memory/audit", headers=ana)).json()["records"]
            corrections = [(a["id"], a["sources"], a["origin"]) for a in trail if a["action"] == "correct"]
            assert corrections == [(fixed["id"], [wrong.id], "api"), (final, [fixed["id"]], "api")]
            assert {wrong.id, fixed["id"]} <= {a["id"] for a in trail if a["action"] == "delete"}
            assert graph.get_relation(ana_user, other.id) == other  # the other relation is untouched


async def test_an_export_over_rest_carries_nothing_past_retention(home) -> None:
    """The hourly sweep may not have come yet: the export applies the owner's retention first."""
    from dataclasses import replace

    from herdsman.memory.store import facts_namespace

    config = make_config(home, memory={"enabled": True, "retention_days": {"behavior": 30}})
    with running_gateway(config) as gw:
        service = gw.app.state.gateway.memory
        old = replace(Fact.new("Ann deploys on Fridays", "behavior"), updated_at="2020-01-01T00:00:00+00:00")
        service.store.store.put(facts_namespace("default"), old.id, old.to_value())  # after the gateway's first sweep
        kept = service.store.put("default", Fact.new("Ann reviews code on Mondays", "behavior"))
        async with httpx.AsyncClient(base_url=gw.url) as http:
            exported = (await http.get("/api/memory/export")).json()["default"]
            assert [f["id"] for f in exported["facts"]] == [kept.id]
            assert ("delete", "fact", old.id, "retention") in {
                (a["action"], a["kind"], a["id"], a["origin"]) for a in exported["audit"]
            }
            assert old.id not in (await http.get("/api/memory")).text
