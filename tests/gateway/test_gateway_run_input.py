"""Input never bricks a thread: refused run input and configurable keys answer 422 naming the
field, a run that fails while being set up ends as an error and frees its thread, and a thread
whose checkpoint already holds garbage is still listed, read and searched (official SDK client)."""

from __future__ import annotations

import httpx
import pytest

from tests.gateway.gateway_support import user_message


async def _works(client, tid: str, text: str = "still here") -> None:
    """The thread takes a normal run and every read of it answers."""
    values = await client.runs.wait(tid, "lead_agent", input=user_message(text))
    assert values["messages"][-1]["content"] == f"echo: {text}"
    assert (await client.threads.get(tid))["status"] == "idle"
    assert all(r["status"] in ("success", "error") for r in await client.runs.list(tid))


@pytest.mark.parametrize(
    ("run_input", "field"),
    [
        ({"messages": 5}, "input.messages"),
        ({"messages": [{"role": "wizard", "content": "hi"}]}, "input.messages[0]"),
        ({"messages": [{"role": "user", "content": 5}]}, "input.messages[0]"),
        ({"messages": [{"role": "tool", "content": "no call id"}]}, "input.messages[0]"),
        ({"messages": [], "title": 7}, "input.title"),
        ("just text", "input"),
    ],
)
async def test_input_the_graph_cannot_read_is_refused_and_the_thread_keeps_working(client, run_input, field) -> None:
    tid = (await client.threads.create())["thread_id"]
    with pytest.raises(httpx.HTTPStatusError) as info:
        await client.runs.wait(tid, "lead_agent", input=run_input)
    body = info.value.response.json()
    assert info.value.response.status_code == 422
    assert body["detail"].startswith(f"Invalid request: {field}:")
    assert body["errors"][0]["loc"][1] == field.split(".")[0]
    assert await client.runs.list(tid) == []  # nothing was created
    await _works(client, tid)
    assert await client.threads.search(limit=100)  # the owner's listing answers


@pytest.mark.parametrize("key", ["thread_id", "run_id", "checkpoint_id", "graph_id", "__pregel_checkpointer"])
async def test_reserved_configurable_keys_are_refused_naming_the_key(client, key) -> None:
    tid = (await client.threads.create())["thread_id"]
    other = (await client.threads.create())["thread_id"]
    with pytest.raises(httpx.HTTPStatusError) as info:
        await client.runs.create(tid, "lead_agent", input=user_message("x"), config={"configurable": {key: other}})
    assert f"config.configurable.{key}" in info.value.response.json()["detail"]
    assert await client.runs.list(tid) == [] and (await client.threads.get(other))["values"] is None
    await _works(client, tid)  # no pending run left behind: no 409


async def test_configurable_echoing_the_thread_and_a_key_named_config_run_normally(client) -> None:
    tid = (await client.threads.create())["thread_id"]
    config = {"configurable": {"thread_id": tid, "assistant_id": "lead_agent", "config": {"x": 1}, "mine": 2}}
    values = await client.runs.wait(tid, "lead_agent", input=user_message("echoed"), config=config)
    assert values["messages"][-1]["content"] == "echo: echoed"
    await _works(client, tid)


@pytest.mark.parametrize(
    ("run_config", "field"),
    [
        ({"metadata": 5}, "config.metadata"),
        ({"configurable": [1]}, "config.configurable"),
        ({"recursion_limit": 0}, "config.recursion_limit"),
        ({"tags": [1]}, "config.tags"),
    ],
)
async def test_badly_typed_config_is_refused(client, run_config, field) -> None:
    tid = (await client.threads.create())["thread_id"]
    with pytest.raises(httpx.HTTPStatusError) as info:
        await client.runs.create(tid, "lead_agent", input=user_message("x"), config=run_config)
    assert f"{field}:" in info.value.response.json()["detail"]
    await _works(client, tid)


async def test_values_that_cannot_be_stored_are_refused_naming_where(client, gateway) -> None:
    tid = (await client.threads.create())["thread_id"]
    raw = '{"assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": "\\ud800"}]}}'
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        answer = await http.post(f"/threads/{tid}/runs/wait", content=raw, headers={"content-type": "application/json"})
        assert answer.status_code == 422 and "input.messages[0].content" in answer.json()["detail"]
        huge = {"assistant_id": "lead_agent", "input": user_message("x"), "metadata": {"n": 2**70}}
        answer = await http.post(f"/threads/{tid}/runs", json=huge)
        assert answer.status_code == 422 and "metadata.n" in answer.json()["detail"]
        bad_meta = '{"metadata": {"k": "\\udc80"}}'
        answer = await http.post("/threads", content=bad_meta, headers={"content-type": "application/json"})
        assert answer.status_code == 422 and "metadata" in answer.json()["detail"]
    await _works(client, tid)


async def test_a_state_update_the_graph_cannot_read_is_refused(client) -> None:
    tid = (await client.threads.create())["thread_id"]
    await client.runs.wait(tid, "lead_agent", input=user_message("first"))
    with pytest.raises(httpx.HTTPStatusError) as info:
        await client.threads.update_state(tid, {"messages": 5})
    assert "values.messages" in info.value.response.json()["detail"]
    with pytest.raises(httpx.HTTPStatusError):
        await client.runs.wait(tid, "lead_agent", command={"update": {"messages": 5}})
    await _works(client, tid)


async def test_a_run_that_fails_while_being_set_up_ends_as_error_and_frees_the_thread(
    client, gateway, monkeypatch
) -> None:
    runs = gateway.app.state.gateway.runs

    def broken(run):
        raise RuntimeError("set-up failed")

    monkeypatch.setattr(runs.executor, "graph_config", broken)
    tid = (await client.threads.create())["thread_id"]
    run = await client.runs.create(tid, "lead_agent", input=user_message("x"))
    await client.runs.join(tid, run["run_id"])
    failed = await client.runs.get(tid, run["run_id"])
    assert failed["status"] == "error" and failed["error"]["message"] == "set-up failed"
    assert (await client.threads.get(tid))["status"] == "error"
    monkeypatch.undo()
    await _works(client, tid)


async def test_a_thread_whose_checkpoint_holds_garbage_is_still_read_listed_and_searched(client, gateway) -> None:
    graph = gateway.app.state.gateway.graph
    tid = (await client.threads.create(metadata={"tag": "garbage"}))["thread_id"]
    good = (await client.threads.create(metadata={"tag": "garbage"}))["thread_id"]
    await client.runs.wait(tid, "lead_agent", input=user_message("before"))
    await client.runs.wait(good, "lead_agent", input=user_message("fine"))
    # What a run wrote before input was checked: a first step whose writes cannot be applied.
    with pytest.raises(NotImplementedError):
        async for _ in graph.astream({"messages": 5}, {"configurable": {"thread_id": tid}}):
            pass

    thread = await client.threads.get(tid)
    assert "cannot be read" in thread["error"] and thread["values"]["messages"][0]["content"] == "before"
    state = await client.threads.get_state(tid)
    assert state["error"] and state["values"]["messages"][-1]["content"] == "echo: before"
    history = await client.threads.get_history(tid)
    assert history[0]["checkpoint"] == state["checkpoint"] and len(history) > 1
    found = await client.threads.search(metadata={"tag": "garbage"})
    assert {t["thread_id"] for t in found} == {tid, good}
    assert next(t for t in found if t["thread_id"] == good).get("error") is None
    # The next run with input starts past the writes that cannot be applied.
    await _works(client, tid, "recovered")
    thread = await client.threads.get(tid)
    assert thread["error"] is None and thread["values"]["messages"][0]["content"] == "before"
