"""Assistants = custom agents (#14), driven with the official langgraph-sdk client.

A custom agent is the lead with its own instructions, model, skills, tools, sub-agent types and
step limit, kept as a versioned, owned record; runs on it use those settings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import APIStatusError, ConflictError

from herdsman.config import HerdsmanConfig
from tests.gateway.gateway_support import running_gateway, scripted_model, user_message
from tests.support import make_config

SOUL = "You are Captain Parrot. Answer like a ship's parrot."


def scripted(name: str, record: Path, responses: list[Any]) -> dict[str, Any]:
    """A configured scripted model that records every call it gets in ``record``."""
    return {
        "name": name,
        "use": "herdsman.models.scripted:ScriptedChatModel",
        "responses": responses,
        "on_exhausted": "repeat_last",
        "record_file": str(record),
    }


def calls(record: Path) -> list[dict[str, Any]]:
    """The calls a scripted model recorded (messages and the names of the tools it was offered)."""
    return [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []


def system_prompt(call: dict[str, Any]) -> str:
    return next(m["content"] for m in call["messages"] if m["type"] == "system")


async def status_of(call) -> int:
    """The HTTP status an SDK call failed with."""
    with pytest.raises((APIStatusError, httpx.HTTPStatusError)) as info:
        await call
    return info.value.response.status_code


async def test_create_version_and_manage_a_custom_agent(client) -> None:
    agent = await client.assistants.create(
        "lead_agent",
        name="Researcher",
        description="Digs into things",
        context={"instructions": "Cite sources.", "skills": ["deep-research"], "max_steps": 5},
        metadata={"team": "red"},
    )
    aid = agent["assistant_id"]
    assert agent["version"] == 1 and agent["graph_id"] == "lead_agent" and agent["name"] == "Researcher"
    assert agent["context"]["instructions"] == "Cite sources."
    assert agent["config"]["configurable"] == agent["context"]  # mirrored, as LangGraph's server does
    assert (await client.assistants.get(aid))["description"] == "Digs into things"

    updated = await client.assistants.update(aid, context={"instructions": "Cite two sources."}, metadata={"tier": 2})
    assert updated["version"] == 2 and updated["name"] == "Researcher"
    assert updated["context"] == {"instructions": "Cite two sources."}
    assert updated["metadata"] == {"team": "red", "tier": 2}
    versions = await client.assistants.get_versions(aid)
    assert [v["version"] for v in versions] == [2, 1]
    assert versions[1]["context"]["instructions"] == "Cite sources."

    back = await client.assistants.set_latest(aid, 1)
    assert back["version"] == 1 and back["context"]["instructions"] == "Cite sources."
    assert (await client.assistants.get(aid))["context"]["instructions"] == "Cite sources."
    assert [v["version"] for v in await client.assistants.get_versions(aid)] == [2, 1]  # nothing was lost
    assert (await client.assistants.update(aid, name="Researcher 3"))["version"] == 3

    other = await client.assistants.create("lead_agent", name="Writer")
    names = [a["name"] for a in await client.assistants.search()]
    assert names == ["Writer", "Researcher 3", "lead_agent"]  # newest first, the built-in one too
    assert [a["name"] for a in await client.assistants.search(name="research")] == ["Researcher 3"]
    assert [a["assistant_id"] for a in await client.assistants.search(metadata={"team": "red"})] == [aid]
    assert [a["name"] for a in await client.assistants.search(sort_by="name", sort_order="asc")] == [
        "lead_agent",
        "Researcher 3",
        "Writer",
    ]
    page = await client.assistants.search(limit=1, offset=1, select=["assistant_id", "name"], response_format="object")
    assert page["assistants"] == [{"assistant_id": aid, "name": "Researcher 3"}] and page["next"] == "2"
    assert await client.assistants.count() == 3
    assert await client.assistants.count(graph_id="lead_agent", name="writ") == 1

    await client.assistants.delete(other["assistant_id"])
    assert await status_of(client.assistants.get(other["assistant_id"])) == 404
    assert await status_of(client.assistants.get_versions(other["assistant_id"])) == 404
    assert await client.assistants.count() == 2


async def test_bad_settings_are_refused_naming_the_field_and_the_valid_values(client, gateway) -> None:
    cases = [
        ({"model_name": "gpt-9"}, "context.model_name", "embedded"),
        ({"skills": ["no-such-skill"]}, "context.skills", "deep-research"),
        ({"tools": ["bash", "teleport"]}, "context.tools", "read_file"),
        ({"subagent_types": ["wizard"]}, "context.subagent_types", "general-purpose"),
        ({"max_steps": 0}, "context.max_steps", "1 to"),
        ({"instructions": 42}, "context.instructions", "text"),
    ]
    for context, field, hint in cases:
        with pytest.raises(APIStatusError) as info:
            await client.assistants.create("lead_agent", context=context)
        assert info.value.response.status_code == 422, context
        detail = info.value.response.json()["detail"]
        assert field in detail and hint in detail, detail
    agent = await client.assistants.create("lead_agent", name="Fine")
    with pytest.raises(APIStatusError) as info:
        await client.assistants.update(agent["assistant_id"], context={"tools": ["teleport"]})
    assert info.value.response.status_code == 422 and "teleport" in info.value.response.json()["detail"]
    assert (await client.assistants.get(agent["assistant_id"]))["version"] == 1  # a refused change makes no version

    assert await status_of(client.assistants.create("other_graph")) == 404
    assert await status_of(client.assistants.create("lead_agent", assistant_id="not-a-uuid")) == 422
    assert (
        await status_of(client.assistants.create("lead_agent", config={"configurable": {"a": 1}}, context={"a": 2}))
        == 400
    )
    assert await status_of(client.assistants.create("lead_agent", config={"configurable": {"thread_id": "x"}})) == 422
    assert await status_of(client.assistants.create("lead_agent", context={"__pregel_x": 1})) == 422
    with pytest.raises(ConflictError):
        await client.assistants.create("lead_agent", assistant_id=agent["assistant_id"], name="Again")
    same = await client.assistants.create(
        "lead_agent", assistant_id=agent["assistant_id"], if_exists="do_nothing", name="Again"
    )
    assert same["name"] == "Fine" and same["version"] == 1

    # the built-in lead is read-only
    for call in (
        client.assistants.update("lead_agent", name="mine"),
        client.assistants.delete("lead_agent"),
        client.assistants.set_latest("lead_agent", 1),
    ):
        with pytest.raises(ConflictError, match="built in"):
            await call
    assert await status_of(client.assistants.set_latest(agent["assistant_id"], 7)) == 404
    thread = await client.threads.create()
    with pytest.raises(httpx.HTTPStatusError, match="POST /assistants/search") as info:
        await client.runs.wait(thread["thread_id"], "00000000-0000-0000-0000-000000000000", input=user_message("hi"))
    assert info.value.response.status_code == 404
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        res = await http.post("/assistants", json={"graph_id": "lead_agent", "name": "x" * 201})
        assert res.status_code == 422 and "name" in res.json()["detail"]
        res = await http.post("/assistants", json={"graph_id": "lead_agent", "metadata": {"blob": "x" * 70_000}})
        assert res.status_code == 422 and "keep it under" in res.json()["detail"]


async def test_a_run_on_a_custom_agent_uses_its_model_instructions_and_tools(home: Path) -> None:
    other_calls = home / "other.jsonl"
    models = [
        scripted("main", home / "main.jsonl", ["from main"]),
        scripted(
            "other", other_calls, [{"tool_calls": [{"name": "bash", "args": {"command": "echo hi"}}]}, "from other"]
        ),
    ]
    lead = scripted_model()  # serves "main", the lead's default model
    with running_gateway(make_config(home, models=models, title={"enabled": False}), model=lead) as served:
        client = get_client(url=served.url, api_key=None)
        try:
            agent = await client.assistants.create(
                "lead_agent",
                name="Parrot",
                context={
                    "model_name": "other",
                    "instructions": SOUL,
                    "tools": ["read_file", "ls"],
                    "subagent_types": [],
                    "max_steps": 7,
                },
            )
            thread = await client.threads.create()
            tid = thread["thread_id"]
            out = await client.runs.wait(tid, agent["assistant_id"], input=user_message("hi"))
            assert out["messages"][-1]["content"] == "from other"  # its model
            refused = [m for m in out["messages"] if m["type"] == "tool"]
            assert "may not use the tool 'bash'" in refused[0]["content"]  # a tool outside its list is refused
            first = calls(other_calls)[0]
            assert sorted(first["tools"]) == ["ls", "read_file"]  # offered only its tools
            prompt = system_prompt(first)
            assert SOUL in prompt and "<agent_instructions>" in prompt  # its instructions
            assert "- bash" not in prompt.split("<tools>")[1].split("</tools>")[0]
            assert "<subagents>" not in prompt  # no delegation
            assert lead.calls == []

            run = (await client.runs.list(tid))[0]
            assert run["assistant_id"] == agent["assistant_id"]
            assert run["kwargs"]["config"]["configurable"]["max_steps"] == 7  # its step limit (StepLimitMiddleware)
            listed = await client.threads.search(metadata={"assistant_id": agent["assistant_id"]})
            assert [t["thread_id"] for t in listed] == [tid]  # the thread list knows which agent it uses

            # the run's own config wins over the agent's
            out = await client.runs.wait(
                tid, agent["assistant_id"], input=user_message("again"), config={"configurable": {"model_name": "main"}}
            )
            assert out["messages"][-1]["content"] == "echo: again"
            assert SOUL in lead.calls[-1].messages[0].text and sorted(lead.calls[-1].tools) == ["ls", "read_file"]

            # the plain lead on the same gateway is untouched
            plain = await client.threads.create()
            await client.runs.wait(plain["thread_id"], "lead_agent", input=user_message("hello"))
            last = lead.calls[-1]
            assert SOUL not in last.messages[0].text and {"bash", "task"} <= set(last.tools)
        finally:
            await client.aclose()


async def test_an_agent_delegates_only_to_its_sub_agent_types(client) -> None:
    agent = await client.assistants.create("lead_agent", name="Shell only", context={"subagent_types": ["bash"]})
    subgraphs = await client.assistants.get_subgraphs(agent["assistant_id"])
    assert list(subgraphs) == ["bash"] and subgraphs["bash"]["input_schema"]["properties"]["prompt"]
    assert set(await client.assistants.get_subgraphs("lead_agent")) >= {"bash", "general-purpose"}
    assert list(await client.assistants.get_subgraphs("lead_agent", namespace="bash")) == ["bash"]
    assert await client.assistants.get_subgraphs(agent["assistant_id"], namespace="general-purpose") == {}

    thread = await client.threads.create()
    out = await client.runs.wait(thread["thread_id"], agent["assistant_id"], input=user_message("delegate count to 3"))
    result = [m for m in out["messages"] if m["type"] == "tool"][0]["content"]
    assert "may not use subagent_type 'general-purpose'" in result and "['bash']" in result


async def test_delete_with_threads_removes_the_agents_threads_only(client) -> None:
    agent = await client.assistants.create("lead_agent", name="Temp")
    on_agent = await client.threads.create()
    await client.runs.wait(on_agent["thread_id"], agent["assistant_id"], input=user_message("hi"))
    on_lead = await client.threads.create()
    await client.runs.wait(on_lead["thread_id"], "lead_agent", input=user_message("hi"))
    await client.assistants.delete(agent["assistant_id"], delete_threads=True)
    assert await status_of(client.threads.get(on_agent["thread_id"])) == 404
    assert (await client.threads.get(on_lead["thread_id"]))["status"] == "idle"
    assert await status_of(client.runs.wait(None, agent["assistant_id"], input=user_message("hi"))) == 404


async def test_users_never_see_or_use_each_others_agents(home: Path) -> None:
    config = make_config(home, gateway={"api_keys": ["key-ana", "key-bo"]})
    with running_gateway(config) as served:
        ana = get_client(url=served.url, api_key="key-ana")
        bo = get_client(url=served.url, api_key="key-bo")
        try:
            mine = await ana.assistants.create("lead_agent", name="Ana's", context={"instructions": "Be Ana's."})
            aid = mine["assistant_id"]
            assert [a["name"] for a in await ana.assistants.search()] == ["Ana's", "lead_agent"]
            assert [a["name"] for a in await bo.assistants.search()] == ["lead_agent"]
            assert await bo.assistants.count() == 1
            assert await bo.assistants.search(metadata={"owner": mine["metadata"]["owner"]}) == []
            for call in (
                bo.assistants.get(aid),
                bo.assistants.update(aid, name="Bo's now"),
                bo.assistants.delete(aid),
                bo.assistants.get_versions(aid),
                bo.assistants.set_latest(aid, 1),
                bo.assistants.get_subgraphs(aid),
                bo.assistants.get_graph(aid),
                bo.assistants.get_schemas(aid),
                bo.runs.wait(None, aid, input=user_message("hi")),
            ):
                assert await status_of(call) == 404
            assert await status_of(bo.assistants.create("lead_agent", assistant_id=aid, if_exists="do_nothing")) == 409
            stolen = await bo.assistants.create(
                "lead_agent", name="Bo's", metadata={"owner": mine["metadata"]["owner"]}
            )
            assert (
                stolen["metadata"]["owner"] != mine["metadata"]["owner"]
            )  # the owner is the caller, whatever was sent
            assert (await ana.assistants.get(aid))["name"] == "Ana's" and (await ana.assistants.get(aid))[
                "version"
            ] == 1
            out = await ana.runs.wait(None, aid, input=user_message("hi"))
            assert out["messages"][-1]["content"] == "echo: hi"
        finally:
            await ana.aclose()
            await bo.aclose()


async def agents_survive_a_restart(config: HerdsmanConfig) -> None:
    """An agent and its versions, made on one gateway, are there on the next one on the same database."""
    with running_gateway(config) as served:
        client = get_client(url=served.url, api_key=None)
        try:
            agent = await client.assistants.create("lead_agent", name="Keeper", context={"instructions": "Keep."})
            await client.assistants.update(agent["assistant_id"], context={"instructions": "Keep more."})
        finally:
            await client.aclose()
    with running_gateway(config) as served:
        client = get_client(url=served.url, api_key=None)
        try:
            again = await client.assistants.get(agent["assistant_id"])
            assert again["version"] == 2 and again["context"]["instructions"] == "Keep more."
            assert [v["version"] for v in await client.assistants.get_versions(agent["assistant_id"])] == [2, 1]
            out = await client.runs.wait(None, agent["assistant_id"], input=user_message("still here"))
            assert out["messages"][-1]["content"] == "echo: still here"
        finally:
            await client.aclose()


async def test_agents_and_their_versions_survive_a_restart(home: Path) -> None:
    await agents_survive_a_restart(make_config(home, checkpointer={"type": "sqlite"}))
