"""REST for skills (list, show, enable, disable) and memory (view, edit, delete, export), over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_client

from herdsman.memory.facts import Fact
from herdsman.models.scripted import ScriptedChatModel
from herdsman_gateway.auth import user_id_for_key
from tests.gateway.gateway_support import running_gateway, scripted_model, user_message
from tests.support import make_config

ALPHA_PATH = "/mnt/skills/public/alpha/SKILL.md"


def write_skill(root: Path, source: str, name: str, front: str, body: str = "Do the thing.") -> None:
    folder = root / source / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\n{front}\n---\n{body}\n", encoding="utf-8")


@pytest.fixture
def skills_root(tmp_path: Path) -> Path:
    """alpha (public), beta (public, overridden by custom), gamma (needs a secret), broken (no description)."""
    root = tmp_path / "skills"
    write_skill(
        root,
        "public",
        "alpha",
        "name: alpha\ndescription: Analyse data tables.\nexamples: [Average the price column of sales.csv]",
        body="# Alpha steps",
    )
    write_skill(root, "public", "beta", "name: beta\ndescription: The public beta.")
    write_skill(root, "custom", "beta", "name: beta\ndescription: My own beta.")
    write_skill(
        root, "custom", "gamma", "name: gamma\ndescription: Calls an API.\nrequired-secrets: [HERDSMAN_TEST_NEVER_SET]"
    )
    write_skill(root, "custom", "broken", "name: broken")
    return root


def system_prompt(model: ScriptedChatModel) -> str:
    """The system prompt of the model's last call."""
    return "\n".join(m.text for m in model.calls[-1].messages if m.type == "system")


async def run_once(url: str, text: str = "hello", headers: dict | None = None) -> None:
    client = get_client(url=url, api_key=None, headers=headers)
    try:
        thread = await client.threads.create()
        await client.runs.wait(thread["thread_id"], "lead_agent", input=user_message(text))
    finally:
        await client.aclose()


# -- skills ---------------------------------------------------------------------------------


async def test_skills_list_shows_source_switch_status_and_problems(home, skills_root) -> None:
    config = make_config(home, skills={"path": str(skills_root)})
    with running_gateway(config) as gw:
        async with httpx.AsyncClient(base_url=gw.url) as http:
            res = await http.get("/api/skills")
    assert res.status_code == 200, res.text
    body = res.json()
    assert body["skills_enabled"] is True
    by_key = {(s["name"], s["source"]): s for s in body["skills"]}
    assert sorted(by_key) == [
        ("alpha", "public"),
        ("beta", "custom"),
        ("beta", "public"),
        ("broken", "custom"),
        ("gamma", "custom"),
    ]
    alpha = by_key[("alpha", "public")]
    assert alpha == {
        **alpha,
        "description": "Analyse data tables.",
        "enabled": True,
        "status": "enabled",
        "path": ALPHA_PATH,
        "problems": [],
        "examples": ["Average the price column of sales.csv"],
    }
    assert by_key[("beta", "custom")]["status"] == "enabled" and by_key[("beta", "custom")]["examples"] == []
    assert by_key[("beta", "public")]["status"] == "overridden"
    gamma = by_key[("gamma", "custom")]
    assert gamma["status"] == "unavailable" and "HERDSMAN_TEST_NEVER_SET" in gamma["problems"][0]
    broken = by_key[("broken", "custom")]
    assert broken["status"] == "invalid" and "description" in broken["problems"][0]
    assert str(skills_root) not in res.text  # paths as the agent sees them, never host paths


async def test_get_one_skill_with_its_skill_md(home, skills_root) -> None:
    config = make_config(home, skills={"path": str(skills_root)})
    with running_gateway(config) as gw:
        async with httpx.AsyncClient(base_url=gw.url) as http:
            alpha = (await http.get("/api/skills/alpha")).json()
            beta = (await http.get("/api/skills/beta")).json()
            missing = await http.get("/api/skills/nope")
            bad = await http.get("/api/skills/Not_A_Name")
    assert alpha["name"] == "alpha" and "# Alpha steps" in alpha["content"] and alpha["content"].startswith("---")
    assert beta["source"] == "custom" and "My own beta." in beta["content"]  # the one the agent uses
    assert missing.status_code == 404 and "GET /api/skills" in missing.json()["detail"]
    assert bad.status_code == 422 and "lowercase" in bad.json()["detail"]


async def test_switching_a_skill_applies_to_the_next_run_and_survives_a_restart(home, skills_root) -> None:
    config = make_config(home, skills={"path": str(skills_root)})
    model = scripted_model()
    with running_gateway(config, model=model) as gw:
        await run_once(gw.url)
        assert ALPHA_PATH in system_prompt(model)
        async with httpx.AsyncClient(base_url=gw.url) as http:
            res = await http.post("/api/skills/alpha/disable")
            assert res.status_code == 200, res.text
            assert res.json()["enabled"] is False and res.json()["status"] == "disabled"
        await run_once(gw.url)
        assert ALPHA_PATH not in system_prompt(model)
    assert json.loads((home / "skills_state.json").read_text())["skills"] == {"alpha": False}

    model = scripted_model()
    with running_gateway(config, model=model) as gw:  # a new process on the same home
        async with httpx.AsyncClient(base_url=gw.url) as http:
            assert (await http.get("/api/skills/alpha")).json()["enabled"] is False
            await run_once(gw.url)
            assert ALPHA_PATH not in system_prompt(model)
            res = await http.post("/api/skills/alpha/enable")
            assert res.json()["enabled"] is True and res.json()["status"] == "enabled"
        await run_once(gw.url)
        assert ALPHA_PATH in system_prompt(model)


async def test_enable_can_override_config_yaml_and_refuses_what_cannot_work(home, skills_root) -> None:
    config = make_config(home, skills={"path": str(skills_root), "disabled": ["alpha"]})
    with running_gateway(config) as gw:
        async with httpx.AsyncClient(base_url=gw.url) as http:
            assert (await http.get("/api/skills/alpha")).json()["status"] == "disabled"
            assert (await http.post("/api/skills/alpha/enable")).json()["status"] == "enabled"
            broken = await http.post("/api/skills/broken/enable")
            assert broken.status_code == 409 and "description" in broken.json()["detail"]
            missing = await http.post("/api/skills/nope/disable")
            assert missing.status_code == 404 and "GET /api/skills" in missing.json()["detail"]


async def test_switching_is_refused_while_skills_are_off(home, skills_root) -> None:
    config = make_config(home, skills={"path": str(skills_root), "enabled": False})
    with running_gateway(config) as gw:
        async with httpx.AsyncClient(base_url=gw.url) as http:
            listed = (await http.get("/api/skills")).json()
            res = await http.post("/api/skills/alpha/disable")
    assert listed["skills_enabled"] is False and any(s["name"] == "alpha" for s in listed["skills"])
    assert res.status_code == 409 and "skills.enabled" in res.json()["detail"]


# -- memory ---------------------------------------------------------------------------------


def remembering(messages):
    """``remember TEXT`` stores TEXT with the memory tool, then answers."""
    last = messages[-1]
    if last.type == "human" and last.text.startswith("remember "):
        content = last.text.removeprefix("remember ")
        return {
            "tool_calls": [{"name": "memory", "args": {"action": "add", "content": content, "category": "preference"}}]
        }
    return "noted"


async def test_memory_is_off_answers_409_everywhere(gateway) -> None:
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        for method, path in [
            ("GET", "/api/memory"),
            ("GET", "/api/memory/export"),
            ("PATCH", "/api/memory/facts/abc"),
            ("DELETE", "/api/memory/facts/abc"),
        ]:
            res = await http.request(method, path, json={"content": "x y z"} if method == "PATCH" else None)
            assert res.status_code == 409, (path, res.text)
            assert "memory.enabled" in res.json()["detail"]


async def test_memory_view_edit_delete_export(home) -> None:
    config = make_config(home, memory={"enabled": True, "mode": "tool"})
    with running_gateway(config, model=ScriptedChatModel(respond=remembering)) as gw:
        await run_once(gw.url, "remember I prefer green tea")
        await run_once(gw.url, "remember I work on the Lyon project")
        async with httpx.AsyncClient(base_url=gw.url) as http:
            memory = (await http.get("/api/memory")).json()
            assert memory["user_id"] == "default"
            facts = {f["content"]: f for f in memory["facts"]}
            assert sorted(facts) == ["I prefer green tea", "I work on the Lyon project"]
            tea = facts["I prefer green tea"]

            res = await http.patch(f"/api/memory/facts/{tea['id']}", json={"content": "I prefer black tea"})
            assert res.status_code == 200, res.text
            edited = res.json()
            assert edited["content"] == "I prefer black tea" and edited["category"] == "preference"
            assert edited["id"] != tea["id"]  # the id follows the text
            res = await http.patch(f"/api/memory/facts/{edited['id']}", json={"category": "profile"})
            assert res.json()["category"] == "profile" and res.json()["id"] == edited["id"]

            stale = await http.patch(f"/api/memory/facts/{tea['id']}", json={"category": "profile"})
            assert stale.status_code == 404 and "GET /api/memory" in stale.json()["detail"]
            lyon = facts["I work on the Lyon project"]
            same = await http.patch(f"/api/memory/facts/{edited['id']}", json={"content": lyon["content"]})
            assert same.status_code == 409 and lyon["id"] in same.json()["detail"]
            for patch in ({"category": "nonsense"}, {}, {"content": 3}, {"colour": "red"}):
                res = await http.patch(f"/api/memory/facts/{edited['id']}", json=patch)
                assert res.status_code == 422, (patch, res.text)
                assert res.json()["detail"].startswith("Invalid request")

            assert (await http.delete(f"/api/memory/facts/{lyon['id']}")).status_code == 204
            again = await http.delete(f"/api/memory/facts/{lyon['id']}")
            assert again.status_code == 404

            export = await http.get("/api/memory/export")
            assert export.status_code == 200
            assert export.headers["content-disposition"].startswith("attachment")
            assert export.headers["content-type"].startswith("application/json")
            data = export.json()
            assert [f["content"] for f in data["default"]["facts"]] == ["I prefer black tea"]


async def test_each_api_key_sees_only_its_own_memory(home) -> None:
    config = make_config(home, memory={"enabled": True, "mode": "tool"}, gateway={"api_keys": ["key-ana", "key-bo"]})
    with running_gateway(config) as gw:
        store = gw.app.state.gateway.memory.store
        ana_fact = store.put(user_id_for_key("key-ana"), Fact.new("Ana likes chess", "preference"))
        store.put(user_id_for_key("key-bo"), Fact.new("Bo likes go", "preference"))
        ana = {"x-api-key": "key-ana"}
        bo = {"x-api-key": "key-bo"}
        async with httpx.AsyncClient(base_url=gw.url) as http:
            assert (await http.get("/api/memory")).status_code == 401
            assert (await http.get("/api/skills")).status_code == 401
            assert [f["content"] for f in (await http.get("/api/memory", headers=ana)).json()["facts"]] == [
                "Ana likes chess"
            ]
            assert [f["content"] for f in (await http.get("/api/memory", headers=bo)).json()["facts"]] == [
                "Bo likes go"
            ]
            assert (await http.delete(f"/api/memory/facts/{ana_fact.id}", headers=bo)).status_code == 404
            assert (
                await http.patch(f"/api/memory/facts/{ana_fact.id}", headers=bo, json={"category": "other"})
            ).status_code == 404
            export = (await http.get("/api/memory/export", headers=bo)).json()
            assert "Ana likes chess" not in json.dumps(export)
            assert (await http.delete(f"/api/memory/facts/{ana_fact.id}", headers=ana)).status_code == 204


# -- a streamed run's records (written just after its first event) -------------------------


async def test_a_streamed_run_is_listed_and_its_thread_busy_once_its_first_event_arrived(
    gateway, client, model
) -> None:
    tid = (await client.threads.create())["thread_id"]
    body = {"assistant_id": "lead_agent", "input": user_message("[hold] wait"), "stream_mode": ["values"]}
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        async with http.stream("POST", f"/threads/{tid}/runs/stream", json=body) as stream:
            lines = stream.aiter_lines()
            frame = {}
            while (line := await anext(lines)) != "":
                key, _, value = line.partition(": ")
                frame[key] = value
            assert frame["event"] == "metadata"
            run_id = json.loads(frame["data"])["run_id"]
            assert [r["run_id"] for r in (await http.get(f"/threads/{tid}/runs")).json()] == [run_id]
            assert (await http.get(f"/threads/{tid}")).json()["status"] == "busy"
            busy = await http.post(
                f"/threads/{tid}/runs", json={**body, "input": user_message("me too"), "multitask_strategy": "reject"}
            )
            assert busy.status_code == 409
            model.release()
            async for _ in lines:
                pass
        assert (await http.get(f"/threads/{tid}/runs/{run_id}")).json()["status"] == "success"
