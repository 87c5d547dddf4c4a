"""Streaming runs through the official langgraph-sdk client: modes, SSE framing, reconnects."""

from __future__ import annotations

import json
import sqlite3

import httpx

from herdsman.sandbox.history import HOME_INDEX
from tests.gateway.gateway_support import HOLD, running_gateway, user_message
from tests.support import make_config


async def test_stream_values_updates_messages_and_custom(client, gateway) -> None:
    thread = await client.threads.create()
    created = []
    parts = [
        p
        async for p in client.runs.stream(
            thread["thread_id"],
            "lead_agent",
            input=user_message("write haiku.txt an old silent pond"),
            stream_mode=["values", "messages-tuple", "updates", "custom"],
            stream_resumable=True,
            on_run_created=created.append,
        )
    ]
    names = [p.event for p in parts]
    assert names[0] == "metadata" and parts[0].data["run_id"] == created[0]["run_id"]
    assert "end" not in names  # LangGraph's server ends the response without an "end" part
    assert {"values", "messages", "updates"} <= set(names)
    # Every event has an id, strictly increasing.
    ids = [int(p.id) for p in parts]
    assert ids == sorted(set(ids))
    # updates: the model asked for write_file, the tool ran.
    updates = [p.data for p in parts if p.event == "updates"]
    calls = [c for u in updates for m in u.get("model", {}).get("messages", []) for c in m.get("tool_calls", [])]
    assert calls[0]["name"] == "write_file"
    assert any("tools" in u for u in updates)
    # messages-tuple: [chunk, metadata] pairs that spell the final answer.
    chunks = [p.data for p in parts if p.event == "messages"]
    assert all(meta["langgraph_node"] in ("model", "tools") for _, meta in chunks)
    answer = "".join(
        c["content"] for c, meta in chunks if meta["langgraph_node"] == "model" and c["type"] == "AIMessageChunk"
    )
    final = [p.data for p in parts if p.event == "values"][-1]
    assert final["messages"][-1]["content"] == answer
    assert answer.startswith("done: ")
    # The file is really in the thread's sandbox.
    sandbox = gateway.app.state.gateway.sandbox.acquire(thread["thread_id"])
    assert sandbox.read_text("/mnt/user-data/outputs/haiku.txt") == "an old silent pond"
    # The thread now carries graph_id and assistant_id, so UIs list it.
    got = await client.threads.get(thread["thread_id"])
    assert got["metadata"]["graph_id"] == "lead_agent" and got["metadata"]["assistant_id"] == "lead_agent"
    assert got["status"] == "idle"
    assert got["values"]["messages"][-1]["content"] == answer


async def test_legacy_messages_mode_sends_metadata_then_the_message_so_far(client) -> None:
    """As LangGraph's server: per message, messages/metadata once, then messages/partial with the
    whole message so far for each streamed chunk (no messages/complete for a streamed message)."""
    thread = await client.threads.create()
    parts = [
        p
        async for p in client.runs.stream(
            thread["thread_id"],
            "lead_agent",
            input=user_message("hello there friend, a longer line"),
            stream_mode="messages",
        )
    ]
    names = [p.event for p in parts]
    assert names[0] == "metadata" and names[1] == "messages/metadata"
    ((msg_id, meta),) = parts[1].data.items()
    assert meta["metadata"]["langgraph_node"] == "model"
    partial = [p.data[0] for p in parts if p.event == "messages/partial"]
    assert len(partial) > 1 and {m["id"] for m in partial} == {msg_id}
    assert all(
        a["content"] and b["content"].startswith(a["content"]) for a, b in zip(partial, partial[1:], strict=False)
    )
    assert partial[-1]["content"] == "echo: hello there friend, a longer line" and partial[-1]["type"] == "ai"
    assert "messages/complete" not in names and "end" not in names


async def test_sse_framing_headers_and_event_format(gateway, client) -> None:
    thread = await client.threads.create()
    body = {"assistant_id": "lead_agent", "input": user_message("hi"), "stream_mode": ["values"]}
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        async with http.stream("POST", f"/threads/{thread['thread_id']}/runs/stream", json=body) as res:
            assert res.status_code == 200
            assert res.headers["content-type"].startswith("text/event-stream")
            location = res.headers["content-location"]
            assert location.startswith(f"/threads/{thread['thread_id']}/runs/")
            assert res.headers["location"] == location + "/stream"
            text = (await res.aread()).decode()
    frames = [dict(line.split(": ", 1) for line in f.splitlines()) for f in text.split("\n\n") if f.strip()]
    assert frames[0]["event"] == "metadata" and frames[0]["id"] == "1"
    assert all(json.loads(f["data"]) is not None for f in frames)
    assert [f["id"] for f in frames] == [str(i) for i in range(1, len(frames) + 1)]
    assert frames[-1]["event"] == "values"  # the response ends after the last event: no "end" event


async def test_stateless_run_streams_and_leaves_no_thread(client) -> None:
    parts = [
        p async for p in client.runs.stream(None, "lead_agent", input=user_message("one-off"), stream_mode="values")
    ]
    assert parts[-1].data["messages"][-1]["content"] == "echo: one-off"
    assert await client.threads.search(limit=100) == []


async def test_a_stateless_run_leaves_none_of_its_files_on_disk(gateway, client) -> None:
    """The temporary thread of a stateless run goes with its files: what the agent wrote in the
    sandbox (and the thread's folder) stayed under <home>/threads/<id> for good; and with the rows
    of its file versions in the home's index (one more per stateless run, for good, otherwise)."""
    home = gateway.app.state.gateway.config.resolve_home()
    threads_root = home / "threads"
    before = set(threads_root.iterdir()) if threads_root.exists() else set()
    parts = [
        p
        async for p in client.runs.stream(
            None, "lead_agent", input=user_message("write note.txt one-off"), stream_mode="updates"
        )
    ]
    assert any("note.txt" in json.dumps(p.data) for p in parts), "the agent wrote the file"
    after = set(threads_root.iterdir()) if threads_root.exists() else set()
    assert after == before
    assert not list(threads_root.rglob("note.txt"))
    with sqlite3.connect(home / HOME_INDEX) as index:  # the run's checkpoints had versions there
        assert index.execute("SELECT COUNT(*) FROM versions").fetchone()[0] == 0
        assert index.execute("SELECT COUNT(*) FROM meta").fetchone()[0] == 0


async def test_join_after_disconnect_loses_and_repeats_nothing(client, model) -> None:
    thread = await client.threads.create()
    created = []
    stream = client.runs.stream(
        thread["thread_id"],
        "lead_agent",
        input=user_message(f"steps 3 {HOLD}"),
        stream_mode=["values", "updates", "messages-tuple"],
        stream_resumable=True,
        on_run_created=created.append,
    )
    seen = [await stream.__anext__(), await stream.__anext__()]  # metadata, first values
    await stream.aclose()  # the client goes away mid-run
    run_id = created[0]["run_id"]
    run = await client.runs.get(thread["thread_id"], run_id)
    assert run["status"] == "running"  # on_disconnect defaults to continue
    model.release()
    rest = [p async for p in client.runs.join_stream(thread["thread_id"], run_id, last_event_id=seen[-1].id)]
    ids = [int(p.id) for p in seen + rest]
    assert ids == list(range(1, len(ids) + 1)), "every event exactly once, in order"
    assert "end" not in {p.event for p in rest}
    # A full replay from the start has exactly the same events.
    replay = [p async for p in client.runs.join_stream(thread["thread_id"], run_id)]
    assert [(p.id, p.event, p.data) for p in replay] == [(p.id, p.event, p.data) for p in seen + rest]
    # A join can ask for some modes only.
    only_values = [p async for p in client.runs.join_stream(thread["thread_id"], run_id, stream_mode="values")]
    assert {p.event for p in only_values} == {"metadata", "values"}
    final = await client.runs.get(thread["thread_id"], run_id)
    assert final["status"] == "success"
    last_values = [p for p in rest if p.event == "values"][-1].data  # what a UI shows when the run ends
    state = await client.threads.get_state(thread["thread_id"])
    assert len([m for m in state["values"]["messages"] if m["type"] == "tool"]) == 3
    assert last_values["messages"] == state["values"]["messages"]


async def test_debug_mode_streams_with_subgraphs_on(client) -> None:
    thread = await client.threads.create()
    parts = [
        p
        async for p in client.runs.stream(
            thread["thread_id"],
            "lead_agent",
            input=user_message("hi"),
            stream_mode=["values", "debug"],
            stream_subgraphs=True,
            stream_resumable=True,
        )
    ]
    assert parts[0].event == "metadata" and any(p.event == "debug" for p in parts)


async def test_quiet_streams_send_heartbeat_comments(home, model) -> None:
    config = make_config(home, gateway={"heartbeat_seconds": 0.05})
    with running_gateway(config, model=model) as served:
        async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
            tid = (await http.post("/threads", json={})).json()["thread_id"]
            body = {"assistant_id": "lead_agent", "input": user_message(f"wait {HOLD}")}
            lines: list[str] = []
            async with http.stream("POST", f"/threads/{tid}/runs/stream", json=body) as res:
                async for line in res.aiter_lines():
                    lines.append(line)
                    if line.startswith(": heartbeat"):
                        model.release()
            assert ": heartbeat" in lines
            assert "event: values" in lines[lines.index(": heartbeat") :]  # the run went on after the quiet spell


async def test_events_mode_streams_langchain_callback_events(client) -> None:
    """As LangGraph's server: stream_mode events sends astream_events (v2) as "events" parts, the
    model's tokens among them, and nothing of the modes not asked for."""
    tid = (await client.threads.create())["thread_id"]
    parts = [
        p async for p in client.runs.stream(tid, "lead_agent", input=user_message("tell me more"), stream_mode="events")
    ]
    assert parts[0].event == "metadata" and {p.event for p in parts[1:]} == {"events"}
    kinds = [p.data["event"] for p in parts[1:]]
    assert kinds[0] == "on_chain_start" and kinds[-1] == "on_chain_end"
    assert {"on_chat_model_start", "on_chat_model_stream", "on_chat_model_end"} <= set(kinds)
    said = "".join(p.data["data"]["chunk"]["content"] for p in parts[1:] if p.data["event"] == "on_chat_model_stream")
    assert said == "echo: tell me more"
    assert all({"run_id", "name", "metadata", "data"} <= set(p.data) for p in parts[1:])
    assert (await client.threads.get_state(tid))["values"]["messages"][-1]["content"] == "echo: tell me more"


async def test_tasks_checkpoints_and_debug_modes_have_the_references_shape(client) -> None:
    tid = (await client.threads.create())["thread_id"]
    parts = [
        p
        async for p in client.runs.stream(
            tid, "lead_agent", input=user_message("hi"), stream_mode=["tasks", "checkpoints", "debug"]
        )
    ]
    checkpoints = [p.data for p in parts if p.event == "checkpoints"]
    assert all({"config", "parent_config", "values", "metadata", "next", "tasks"} <= set(c) for c in checkpoints)
    history = await client.threads.get_history(tid, limit=100)
    assert [c["config"]["configurable"]["checkpoint_id"] for c in checkpoints] == [
        h["checkpoint"]["checkpoint_id"] for h in reversed(history)
    ]
    tasks = [p.data for p in parts if p.event == "tasks"]
    started = [t for t in tasks if "input" in t]
    ended = [t for t in tasks if "result" in t]
    assert started and {t["id"] for t in started} == {t["id"] for t in ended}
    assert {"id", "name", "input", "triggers"} <= set(started[0]) and {
        "id",
        "name",
        "error",
        "result",
        "interrupts",
    } <= set(ended[0])
    debug = [p.data for p in parts if p.event == "debug"]
    assert {d["type"] for d in debug} == {"checkpoint", "task", "task_result"}
    for d in (d for d in debug if d["type"] == "checkpoint"):
        payload = d["payload"]
        assert payload["checkpoint"]["checkpoint_id"] == payload["config"]["configurable"]["checkpoint_id"]
        parent = payload["parent_config"]
        if parent is None:
            assert payload["parent_checkpoint"] is None
        else:
            assert payload["parent_checkpoint"]["checkpoint_id"] == parent["configurable"]["checkpoint_id"]
