"""Threads, state and history through the official langgraph-sdk client."""

from __future__ import annotations

from typing import TypedDict

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import ConflictError, NotFoundError

from herdsman_gateway.routes.assistants import json_schema_or_keys
from tests.gateway.gateway_support import user_message


async def test_create_get_patch_delete_thread(client) -> None:
    thread = await client.threads.create(metadata={"project": "kiwi"})
    assert thread["status"] == "idle" and thread["metadata"] == {"project": "kiwi"}
    got = await client.threads.get(thread["thread_id"])
    assert got["thread_id"] == thread["thread_id"] and got["values"] is None
    patched = await client.threads.update(thread["thread_id"], metadata={"stage": "draft"})
    assert patched["metadata"] == {"project": "kiwi", "stage": "draft"}
    mine = await client.threads.create(thread_id="my-thread-1")
    assert mine["thread_id"] == "my-thread-1"
    with pytest.raises(ConflictError):
        await client.threads.create(thread_id="my-thread-1")
    again = await client.threads.create(thread_id="my-thread-1", if_exists="do_nothing")
    assert again["created_at"] == mine["created_at"]
    await client.threads.delete(thread["thread_id"])
    with pytest.raises(NotFoundError):
        await client.threads.get(thread["thread_id"])


async def test_search_threads_by_metadata_and_status(client) -> None:
    ran = await client.threads.create(metadata={"owner_name": "ana"})
    await client.runs.wait(ran["thread_id"], "lead_agent", input=user_message("hi"))
    idle = await client.threads.create(metadata={"owner_name": "bo"})
    everything = await client.threads.search(limit=10)
    assert [t["thread_id"] for t in everything] == [idle["thread_id"], ran["thread_id"]]  # newest first
    by_graph = await client.threads.search(metadata={"graph_id": "lead_agent"})
    assert [t["thread_id"] for t in by_graph] == [ran["thread_id"]]
    by_assistant = await client.threads.search(metadata={"assistant_id": "lead_agent"})
    assert [t["thread_id"] for t in by_assistant] == [ran["thread_id"]]
    assert by_graph[0]["values"]["messages"][-1]["content"] == "echo: hi"
    by_owner = await client.threads.search(metadata={"owner_name": "bo"})
    assert [t["thread_id"] for t in by_owner] == [idle["thread_id"]]
    assert len(await client.threads.search(status="idle", limit=1)) == 1
    assert await client.threads.search(ids=[ran["thread_id"]], limit=5) == [by_graph[0]]
    assert await client.threads.count() == 2
    assert await client.threads.count(metadata={"graph_id": "lead_agent"}) == 1
    assert await client.threads.count(values={"title": "hi"}) == 1
    assert await client.assistants.count(graph_id="lead_agent") == 1


async def test_history_and_branch_from_a_checkpoint(client) -> None:
    thread = await client.threads.create()
    tid = thread["thread_id"]
    await client.runs.wait(tid, "lead_agent", input=user_message("first"))
    await client.runs.wait(tid, "lead_agent", input=user_message("second"))
    history = await client.threads.get_history(tid, limit=100)
    assert (
        history[0]["checkpoint"]["checkpoint_id"]
        == (await client.threads.get_state(tid))["checkpoint"]["checkpoint_id"]
    )
    # Newest first, each state's parent is the next one in the list.
    for newer, older in zip(history, history[1:], strict=False):
        assert newer["parent_checkpoint"]["checkpoint_id"] == older["checkpoint"]["checkpoint_id"]
    end_of_first = next(s for s in history if len(s["values"].get("messages", [])) == 2 and not s["next"])
    at = await client.threads.get_state(tid, checkpoint_id=end_of_first["checkpoint"]["checkpoint_id"])
    assert [m["content"] for m in at["values"]["messages"]] == ["first", "echo: first"]
    # Regenerate from there: the new branch does not contain "second".
    await client.runs.wait(
        tid, "lead_agent", input=user_message("instead"), checkpoint_id=end_of_first["checkpoint"]["checkpoint_id"]
    )
    state = await client.threads.get_state(tid)
    assert [m["content"] for m in state["values"]["messages"]] == ["first", "echo: first", "instead", "echo: instead"]
    assert state["parent_checkpoint"] is not None
    only_input = await client.threads.get_history(tid, limit=100, metadata={"source": "input"})
    assert only_input and all(s["metadata"]["source"] == "input" for s in only_input)


async def test_update_state_writes_a_checkpoint(client) -> None:
    thread = await client.threads.create()
    tid = thread["thread_id"]
    await client.runs.wait(tid, "lead_agent", input=user_message("hello"))
    before = await client.threads.get_state(tid)
    result = await client.threads.update_state(tid, {"title": "Renamed"}, as_node="model")
    after = await client.threads.get_state(tid)
    assert (
        after["checkpoint"]["checkpoint_id"]
        == result["checkpoint"]["checkpoint_id"]
        != before["checkpoint"]["checkpoint_id"]
    )
    assert after["values"]["title"] == "Renamed"


async def test_unknown_ids_answer_404_with_a_clear_message(client, gateway) -> None:
    with pytest.raises(NotFoundError):
        await client.threads.get("no-such-thread")
    with pytest.raises(NotFoundError):
        await client.threads.get_state("no-such-thread")
    thread = await client.threads.create()
    with pytest.raises(NotFoundError):
        await client.runs.get(thread["thread_id"], "no-such-run")
    with pytest.raises(NotFoundError):
        await client.threads.get_state(thread["thread_id"], checkpoint_id="no-such-checkpoint")
    with pytest.raises(NotFoundError):
        await client.assistants.get("other_agent")
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        res = await http.post("/threads/no-such-thread/runs/wait", json={"assistant_id": "lead_agent"})
        assert res.status_code == 404 and "POST /threads" in res.json()["detail"]
        res = await http.get(f"/threads/{thread['thread_id']}/runs/no-such-run/stream")
        assert res.status_code == 404 and "no-such-run" in res.json()["detail"]


async def test_malformed_json_answers_422_with_a_clear_message(gateway) -> None:
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        res = await http.post("/threads", content=b'{"metadata": ', headers={"content-type": "application/json"})
        assert res.status_code == 422
        assert "not valid JSON" in res.json()["detail"]
        res = await http.post("/threads/search", json={"limit": "ten"})
        assert res.status_code == 422 and res.json()["detail"].startswith("Invalid request: limit:")
        res = await http.post("/runs/wait", json={"input": {}})
        assert res.status_code == 422 and "assistant_id is required" in res.json()["detail"]
        res = await http.post("/runs/wait", json={"assistant_id": "lead_agent", "stream_mode": ["values", "telepathy"]})
        assert res.status_code == 422 and "telepathy" in res.json()["detail"]


async def test_thread_routes_are_also_under_api_langgraph(gateway) -> None:
    sdk = get_client(url=gateway.url + "/api/langgraph", api_key=None)
    try:
        thread = await sdk.threads.create()
        parts = [
            p
            async for p in sdk.runs.stream(
                thread["thread_id"], "lead_agent", input=user_message("x"), stream_resumable=True
            )
        ]
        assert parts[0].event == "metadata" and "end" not in {p.event for p in parts}  # as LangGraph's server
        assert (await sdk.threads.get(thread["thread_id"]))["values"]["messages"][-1]["content"] == "echo: x"
        assert [a["assistant_id"] for a in await sdk.assistants.search()] == ["lead_agent"]
    finally:
        await sdk.aclose()


async def test_assistant_graph_and_schemas(client) -> None:
    assistant = await client.assistants.get("lead_agent")
    assert assistant["graph_id"] == "lead_agent" and assistant["assistant_id"] == "lead_agent"
    with pytest.raises(NotFoundError, match="Graph 'other' not found"):  # as LangGraph's server answers
        await client.assistants.search(graph_id="other")
    graph = await client.assistants.get_graph("lead_agent")
    assert {"model", "tools"} <= {n["id"] for n in graph["nodes"]}
    schemas = await client.assistants.get_schemas("lead_agent")
    for key in ("input_schema", "output_schema", "state_schema"):  # rendered in full, not just key names
        properties = schemas[key]["properties"]
        assert properties["messages"]["type"] == "array", (key, properties["messages"])
        assert set(schemas[key]["$defs"]["ActiveSkill"]["properties"]) == {
            "name",
            "message_id",
            "also",
            "chosen",
        }  # also: skills picked with it; chosen: by the harness, not the user


async def test_run_can_create_its_thread_and_state_at_checkpoint(client, gateway) -> None:
    values = await client.runs.wait("fresh-thread", "lead_agent", input=user_message("hi"), if_not_exists="create")
    assert values["messages"][-1]["content"] == "echo: hi"
    state = await client.threads.get_state("fresh-thread")
    again = await client.threads.get_state("fresh-thread", checkpoint=state["checkpoint"])
    assert again["values"] == state["values"]
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        bad = await http.post(
            "/threads/..%2Fescape/runs/wait", json={"assistant_id": "lead_agent", "if_not_exists": "create"}
        )
        assert bad.status_code in (404, 422)
        bad = await http.post("/threads", json={"thread_id": "../escape"})
        assert bad.status_code == 422 and "invalid thread id" in bad.json()["detail"]


def test_a_schema_that_cannot_be_rendered_falls_back_to_its_keys() -> None:
    class Legacy(TypedDict):
        notes: str
        count: int

    def refuse() -> dict:
        raise ValueError("pydantic cannot render this")

    assert json_schema_or_keys(refuse, Legacy) == {
        "title": "Legacy",
        "type": "object",
        "properties": {"notes": {}, "count": {}},
    }


async def test_update_state_answers_like_langgraphs_server_and_moves_next(client) -> None:
    """The reference answers {checkpoint, configurable, checkpoint_id}; an update as the model
    with a tool call makes the tools the next step, and a run with no input carries it out."""
    tid = (await client.threads.create())["thread_id"]
    await client.runs.wait(tid, "lead_agent", input=user_message("hello"))
    assert (await client.threads.get_state(tid))["next"] == []
    call = {"name": "ls", "args": {"path": "/mnt/user-data/outputs"}, "id": "call_ls_1"}
    result = await client.threads.update_state(
        tid, {"messages": [{"type": "ai", "content": "", "tool_calls": [call]}]}, as_node="model"
    )
    assert (
        result["checkpoint"] == result["configurable"]
        and result["checkpoint_id"] == result["checkpoint"]["checkpoint_id"]
    )
    state = await client.threads.get_state(tid)
    assert state["checkpoint"]["checkpoint_id"] == result["checkpoint_id"]
    # an update as the model moves the thread on past the model, to the tool call it made
    assert state["next"] == ["tools"]
    final = await client.runs.wait(tid, "lead_agent", input=None)
    tool = [m for m in final["messages"] if m["type"] == "tool"]
    assert tool and tool[-1]["tool_call_id"] == "call_ls_1"
    assert (await client.threads.get_state(tid))["next"] == []
