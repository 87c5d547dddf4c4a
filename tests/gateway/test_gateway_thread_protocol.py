"""The thread streaming protocol (``POST /threads/{id}/commands`` and ``.../stream/events``)
driven by the official SDK's ``client.threads.stream()``: a turn's messages and tool calls as
the SDK's projections expose them, a sub-agent as a subgraph, an interrupt answered with
``run.respond``, a cancel, ``since`` replay, clear errors, one user kept out of another's
thread, and the same through the Redis stream bridge."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client

from tests.gateway.gateway_support import HOLD, held_turn_on_own_redis, running_gateway, user_message
from tests.support import make_config

TIMEOUT = 30


def _root_end(event: dict[str, Any]) -> bool:
    params = event["params"]
    return (
        event["method"] == "lifecycle"
        and not params["namespace"]
        and params["data"]["event"] in ("completed", "failed", "interrupted")
    )


CHANNELS = ["values", "updates", "messages", "tools", "lifecycle", "input", "tasks", "custom"]


async def _events_until_end(thread) -> list[dict[str, Any]]:
    """The events of the run just started, up to the root's last lifecycle event."""
    seen = []
    async with asyncio.timeout(TIMEOUT):
        async for event in thread.subscribe(CHANNELS):
            seen.append(event)
            if _root_end(event):
                return seen
    raise AssertionError(f"the stream ended before the run did: {[e['method'] for e in seen]}")


async def _paused_run_events(url: str, thread_id: str) -> list[dict[str, Any]]:
    """The events of a thread's run that stopped at an interrupt, read off the wire from the
    start (``since: 0``) once the thread is paused. The SDK's own subscriptions end as soon as
    its lifecycle watcher sees the interrupt, which may be before they read the run's end."""
    async with httpx.AsyncClient(base_url=url, timeout=TIMEOUT) as http, asyncio.timeout(TIMEOUT):
        while (await http.get(f"/threads/{thread_id}")).json()["status"] != "interrupted":
            await asyncio.sleep(0.05)
        seen: list[dict[str, Any]] = []
        body = {"channels": CHANNELS, "since": 0}
        async with http.stream("POST", f"/threads/{thread_id}/stream/events", json=body) as response:
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    seen.append(json.loads(line[6:]))
                    if _root_end(seen[-1]):
                        return seen
    raise AssertionError(f"the stream ended before the run did: {[e['method'] for e in seen]}")


async def _command(url: str, thread_id: str, body: Any, key: str | None = None) -> httpx.Response:
    headers = {"x-api-key": key} if key else {}
    async with httpx.AsyncClient(base_url=url, timeout=TIMEOUT) as http:
        if isinstance(body, (bytes, str)):
            return await http.post(f"/threads/{thread_id}/commands", content=body, headers=headers)
        return await http.post(f"/threads/{thread_id}/commands", json=body, headers=headers)


async def test_a_turn_streams_its_messages_tool_calls_and_values(client) -> None:
    async with client.threads.stream(assistant_id="lead_agent") as thread:
        started = await thread.run.start(input=user_message("write notes.txt hello there"))
        streams, handles = [], []  # each fills as the projection reads on: awaited once it is done

        async def read_messages() -> None:
            async for stream in thread.messages:
                streams.append(stream)

        async def read_tool_calls() -> None:
            async for call in thread.tool_calls:
                handles.append(call)

        async with asyncio.timeout(TIMEOUT):
            await asyncio.gather(read_messages(), read_tool_calls())
            messages = [await stream.text for stream in streams]
            calls = [(call.name, call.input, await call.output) for call in handles]
            output = await thread.output
    assert started["run_id"]
    assert calls == [
        (
            "write_file",
            {"path": "/mnt/user-data/outputs/notes.txt", "content": "hello there"},
            "Wrote 11 bytes to /mnt/user-data/outputs/notes.txt",
        )
    ]
    assert messages[-1] == "done: Wrote 11 bytes to /mnt/user-data/outputs/notes.txt"
    assert output["messages"][-1]["content"] == messages[-1]
    run = await client.runs.get(thread.thread_id, started["run_id"])
    assert run["status"] == "success"
    assert (await client.threads.get(thread.thread_id))["status"] == "idle"


async def test_events_arrive_in_order_with_lifecycle_first_and_last(client) -> None:
    async with client.threads.stream(assistant_id="lead_agent") as thread:
        await thread.run.start(input=user_message("write a.txt hi"))
        events = await _events_until_end(thread)
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert len({e["event_id"] for e in events}) == len(events)
    assert events[0]["method"] == "lifecycle" and events[0]["params"]["data"]["event"] == "running"
    assert events[-1]["params"]["data"] == {"event": "completed", "graph_name": "lead_agent"}
    texts = [e["params"]["data"] for e in events if e["method"] == "messages"]
    assert [t["event"] for t in texts[:2]] == ["message-start", "content-block-start"]
    tools = [e["params"]["data"]["event"] for e in events if e["method"] == "tools"]
    assert tools == ["tool-started", "tool-finished"]
    started = next(i for i, e in enumerate(events) if e["method"] == "tools")
    finished = max(i for i, e in enumerate(events) if e["method"] == "tools")
    assert events[started]["params"]["node"] == "model" and events[finished]["params"]["node"] == "tools"
    values = [e for e in events if e["method"] == "values"]
    assert (
        values[-1]["params"]["data"]["messages"][-1]["content"] == "done: Wrote 2 bytes to /mnt/user-data/outputs/a.txt"
    )


async def test_a_second_turn_on_the_same_stream(client) -> None:
    async with client.threads.stream(assistant_id="lead_agent") as thread:
        await thread.run.start(input=user_message("first"))
        first = await _events_until_end(thread)
        await thread.run.start(input=user_message("second"))
        second = await _events_until_end(thread)
    assert first[-1]["params"]["data"]["event"] == second[-1]["params"]["data"]["event"] == "completed"
    assert second[0]["seq"] > first[-1]["seq"]  # one numbering for the thread
    final = [e for e in second if e["method"] == "values"][-1]["params"]["data"]
    assert [m["content"] for m in final["messages"]] == ["first", "echo: first", "second", "echo: second"]


async def test_a_sub_agent_streams_as_a_subgraph(client) -> None:
    async with client.threads.stream(assistant_id="lead_agent") as thread:
        await thread.run.start(input=user_message("delegate look around"))
        found = []

        async def read_subgraphs() -> None:
            async for child in thread.subgraphs:
                found.append(child)

        async with asyncio.timeout(TIMEOUT):
            await read_subgraphs()
            children = []
            for child in found:
                streams = [stream async for stream in child.messages]
                children.append(
                    (child.graph_name, child.trigger_call_id, child.status, [await s.text for s in streams])
                )
            output = await thread.output
    task_call = next(m for m in output["messages"] if m["type"] == "ai" and m.get("tool_calls"))["tool_calls"][0]
    assert task_call["name"] == "task"
    assert children == [("tools", task_call["id"], "completed", ["echo: look around"])]
    assert (await client.threads.get(thread.thread_id))["status"] == "idle"


async def test_a_sub_agent_namespace_opens_and_closes(client) -> None:
    async with client.threads.stream(assistant_id="lead_agent") as thread:
        await thread.run.start(input=user_message("delegate count to 3"))
        events = await _events_until_end(thread)
    lifecycle = [(e["params"]["namespace"], e["params"]["data"]) for e in events if e["method"] == "lifecycle"]
    children = [(ns, d) for ns, d in lifecycle if ns]
    assert len(children) == 2
    (ns, opened), (ns2, closed) = children
    call_id = ns[0].removeprefix("tools:")
    assert ns == ns2 and opened == {
        "event": "started",
        "graph_name": "tools",
        "cause": {"type": "toolCall", "tool_call_id": call_id},
    }
    assert closed == {"event": "completed", "graph_name": "tools"}
    inside = [e for e in events if e["params"]["namespace"] == ns and e["method"] == "messages"]
    assert inside, "the sub-agent's own messages stream under its namespace"


async def test_an_interrupt_is_answered_with_respond(hitl_gateway) -> None:
    sdk = get_client(url=hitl_gateway.url, api_key=None)
    try:
        async with sdk.threads.stream(assistant_id="lead_agent") as thread:
            await thread.run.start(input=user_message("ask shall I deploy"))
            async with asyncio.timeout(TIMEOUT):
                while not thread.interrupted:
                    await asyncio.sleep(0.05)
            (pending,) = thread.interrupts
            assert pending["value"] == {"question": "shall I deploy", "choices": ["yes", "no"]}
            assert pending["namespace"] == [] and pending["interrupt_id"]
            assert (await sdk.threads.get(thread.thread_id))["status"] == "interrupted"

            await thread.run.respond("yes")
            async with asyncio.timeout(TIMEOUT):
                output = await thread.output
        assert output["messages"][-1]["content"] == "done: the user said yes"
        assert (await sdk.threads.get(thread.thread_id))["status"] == "idle"
        runs = await sdk.runs.list(thread.thread_id)
        assert [r["status"] for r in runs] == ["success", "success"]

        answered = await _command(
            hitl_gateway.url,
            thread.thread_id,
            {
                "id": 9,
                "method": "input.respond",
                "params": {"interrupt_id": pending["interrupt_id"], "namespace": [], "response": "again"},
            },
        )
        assert answered.status_code == 200 and answered.json()["error"] == "no_such_interrupt"
        assert "already answered" in answered.json()["message"]
    finally:
        await sdk.aclose()


async def test_a_late_stream_learns_of_the_pending_interrupt(hitl_gateway) -> None:
    sdk = get_client(url=hitl_gateway.url, api_key=None)
    try:
        async with sdk.threads.stream(assistant_id="lead_agent") as thread:
            await thread.run.start(input=user_message("ask proceed"))
            first = await _paused_run_events(hitl_gateway.url, thread.thread_id)
            assert first[-1]["params"]["data"]["event"] == "interrupted"
        async with sdk.threads.stream(thread.thread_id, assistant_id="lead_agent") as again:
            async with asyncio.timeout(TIMEOUT):
                while not again.interrupted:
                    await asyncio.sleep(0.05)
            assert again.interrupts[0]["value"]["question"] == "proceed"
            await again.run.respond("no")
            async with asyncio.timeout(TIMEOUT):
                while (await sdk.threads.get(thread.thread_id))["status"] != "idle":
                    await asyncio.sleep(0.05)
        state = await sdk.threads.get_state(thread.thread_id)
        assert state["values"]["messages"][-1]["content"] == "done: the user said no"
    finally:
        await sdk.aclose()


async def test_a_cancelled_run_ends_interrupted(client, gateway, model) -> None:
    async with client.threads.stream(assistant_id="lead_agent") as thread:
        started = await thread.run.start(input=user_message(f"wait {HOLD}"))
        await asyncio.to_thread(model.wait_until_held)
        await client.runs.cancel(thread.thread_id, started["run_id"], wait=True)
        events = await _events_until_end(thread)
    assert events[-1]["params"]["data"] == {"event": "interrupted", "graph_name": "lead_agent"}
    assert (await client.runs.get(thread.thread_id, started["run_id"]))["status"] == "interrupted"
    assert not thread.interrupts  # stopped, not asked anything


async def test_since_replays_the_same_events(client, gateway) -> None:
    async with client.threads.stream(assistant_id="lead_agent") as thread:
        started = await thread.run.start(input=user_message(f"hello {HOLD}"))
        async with httpx.AsyncClient(base_url=gateway.url, timeout=TIMEOUT) as http:

            async def read(body: dict[str, Any], count: int) -> list[dict[str, Any]]:
                got = []
                async with http.stream("POST", f"/threads/{thread.thread_id}/stream/events", json=body) as response:
                    assert response.status_code == 200
                    assert response.headers["content-type"].startswith("text/event-stream")
                    event_id = None
                    async for line in response.aiter_lines():
                        if line.startswith("id: "):
                            event_id = line[4:]
                        if line.startswith("data: "):
                            got.append(json.loads(line[6:]))
                        if not line and got and event_id is not None:
                            assert event_id == str(got[-1]["seq"])  # the SSE id is the seq
                        if len(got) == count:
                            return got
                return got

            # running, the input's values, the held model task's start (the events before the hold)
            everything = await read({"channels": ["lifecycle", "values", "tasks"]}, 3)
            replayed = await read({"channels": ["lifecycle", "values", "tasks"], "since": everything[0]["seq"]}, 2)
            lifecycle_only = await read({"channels": ["lifecycle"]}, 1)
        await client.runs.cancel(thread.thread_id, started["run_id"])
    assert [e["method"] for e in everything] == ["lifecycle", "values", "tasks"]
    assert replayed == everything[1:3]
    assert lifecycle_only == everything[:1] and everything[0]["params"]["data"]["event"] == "running"


async def test_bad_commands_get_clear_errors(client, gateway) -> None:
    thread = await client.threads.create()
    tid = thread["thread_id"]
    not_json = await _command(gateway.url, tid, b"{run")
    assert not_json.status_code == 400 and "JSON" in not_json.json()["detail"]
    no_id = await _command(gateway.url, tid, {"method": "run.start", "params": {}})
    assert no_id.status_code == 400
    assert no_id.json() == {
        "type": "error",
        "id": None,
        "error": "invalid_argument",
        "message": no_id.json()["message"],
    }
    assert "integer id" in no_id.json()["message"]
    bool_id = await _command(gateway.url, tid, {"id": True, "method": "run.start"})
    assert bool_id.status_code == 400
    unstorable = await _command(gateway.url, tid, b'{"id": 1, "method": "run.start", "params": {"input": "\\ud800"}}')
    assert unstorable.status_code == 422

    async def error_of(body: dict[str, Any]) -> dict[str, Any]:
        response = await _command(gateway.url, tid, {"id": 7, **body})
        assert response.status_code == 200
        data = response.json()
        assert data["type"] == "error" and data["id"] == 7
        return data

    assert (await error_of({"method": "run.stop"}))["error"] == "unknown_command"
    assert "assistant_id" in (await error_of({"method": "run.start", "params": {"input": None}}))["message"]
    unknown_agent = await error_of({"method": "run.start", "params": {"assistant_id": "no-such-agent", "input": None}})
    assert unknown_agent["error"] == "invalid_argument" and "no-such-agent" in unknown_agent["message"]
    bad_input = await error_of(
        {"method": "run.start", "params": {"assistant_id": "lead_agent", "input": {"messages": 3}}}
    )
    assert bad_input["error"] == "invalid_argument"
    assert (await error_of({"method": "run.start", "params": {"assistant_id": "lead_agent", "config": []}}))[
        "error"
    ] == "invalid_argument"
    assert (await error_of({"method": "input.respond", "params": {"namespace": []}}))["error"] == "invalid_argument"
    for bad_checkpoint in (3, "", "no-such-checkpoint"):
        forked = await error_of(
            {
                "method": "run.start",
                "params": {
                    "assistant_id": "lead_agent",
                    "input": None,
                    "config": {"configurable": {"checkpoint_id": bad_checkpoint}},
                },
            }
        )
        assert forked["error"] == "invalid_argument" and "checkpoint" in forked["message"], forked
    nothing_pending = await error_of(
        {"method": "input.respond", "params": {"interrupt_id": "x", "namespace": [], "response": 1}}
    )
    assert nothing_pending["error"] == "no_such_interrupt" and "waits for none" in nothing_pending["message"]
    assert (await error_of({"method": "subscription.subscribe", "params": {"channels": ["nope"]}}))[
        "error"
    ] == "invalid_argument"
    assert (await error_of({"method": "params", "params": []}))["error"] == "unknown_command"
    assert (await error_of({"method": "agent.getTree", "params": []}))["error"] == "invalid_argument"

    async with httpx.AsyncClient(base_url=gateway.url, timeout=TIMEOUT) as http:
        for body, words in [
            ({"channels": []}, "non-empty"),
            ({"channels": ["values", "nope"]}, "nope"),
            ({"channels": ["values"], "since": True}, "since"),
            ({"channels": ["values"], "depth": -1}, "depth"),
            ({"channels": ["values"], "namespaces": "tools"}, "namespaces"),
            ([], "JSON object"),
        ]:
            response = await http.post(f"/threads/{tid}/stream/events", json=body)
            assert response.status_code == 400 and words in response.json()["detail"], (body, response.text)
        missing = await http.post(
            "/threads/00000000-0000-4000-8000-000000000000/stream/events", json={"channels": ["values"]}
        )
        assert missing.status_code == 404

    async with client.threads.stream(tid, assistant_id="lead_agent") as stream:
        with pytest.raises(RuntimeError, match=r"Protocol error \[invalid_argument\]: .*no-such-agent"):
            stream.assistant_id = "no-such-agent"
            await stream.run.start(input=user_message("hi"))
        # The same session goes on after the error. (Closing it at once, while the SDK's lifecycle
        # watcher is still opening its stream, can hang the client on Python 3.11: its
        # asyncio.wait_for swallows the close's cancellation when the stream opens at that instant.)
        stream.assistant_id = "lead_agent"
        await stream.run.start(input=user_message("after the error"))
        async with asyncio.timeout(TIMEOUT):
            output = await stream.output
        assert output["messages"][-1]["content"] == "echo: after the error"
    # nothing was left half done: the thread still runs
    assert (await client.runs.wait(tid, "lead_agent", input=user_message("still fine")))["messages"][-1][
        "content"
    ] == "echo: still fine"


async def test_one_user_never_reaches_another_users_thread(secured) -> None:
    ana = get_client(url=secured.url, api_key="key-ana")
    bo = get_client(url=secured.url, api_key="key-bo")
    try:
        async with ana.threads.stream(assistant_id="lead_agent") as thread:
            await thread.run.start(input=user_message("private plans"))
            async with asyncio.timeout(TIMEOUT):
                await thread.output
        tid = thread.thread_id
        for body in [
            {
                "id": 1,
                "method": "run.start",
                "params": {"assistant_id": "lead_agent", "input": user_message("mine now")},
            },
            {"id": 2, "method": "agent.getTree", "params": {}},
            {"id": 3, "method": "input.respond", "params": {"interrupt_id": "x", "namespace": [], "response": 1}},
        ]:
            response = await _command(secured.url, tid, body, key="key-bo")
            assert response.status_code == 404, response.text
        async with httpx.AsyncClient(base_url=secured.url, timeout=TIMEOUT) as http:
            peek = await http.post(
                f"/threads/{tid}/stream/events", json={"channels": ["values"]}, headers={"x-api-key": "key-bo"}
            )
            assert peek.status_code == 404
            anonymous = await http.post(f"/threads/{tid}/stream/events", json={"channels": ["values"]})
            assert anonymous.status_code == 401
        async with bo.threads.stream(tid, assistant_id="lead_agent") as intruder:
            with pytest.raises(httpx.HTTPStatusError) as refused:
                await intruder.run.start(input=user_message("mine now"))
            assert refused.value.response.status_code == 404
        state = await ana.threads.get_state(tid)
        assert [m["content"] for m in state["values"]["messages"]] == ["private plans", "echo: private plans"]
        assert len(await ana.runs.list(tid)) == 1
    finally:
        await ana.aclose()
        await bo.aclose()


async def test_the_agent_tree_shows_the_sub_agents(client, gateway) -> None:
    async with client.threads.stream(assistant_id="lead_agent") as thread:
        await thread.run.start(input=user_message("delegate look around"))
        await _events_until_end(thread)
        response = await _command(gateway.url, thread.thread_id, {"id": 4, "method": "agent.getTree", "params": {}})
    tree = response.json()["result"]["tree"]
    (child,) = tree["children"]
    assert tree["namespace"] == [] and tree["status"] == "completed" and tree["graph_name"] == "lead_agent"
    assert (
        child["namespace"][0].startswith("tools:") and child["status"] == "completed" and child["graph_name"] == "tools"
    )


async def test_run_start_with_input_answers_a_pending_interrupt(hitl_gateway) -> None:
    sdk = get_client(url=hitl_gateway.url, api_key=None)
    try:
        async with sdk.threads.stream(assistant_id="lead_agent") as thread:
            await thread.run.start(input=user_message("ask go on"))
            first = await _paused_run_events(hitl_gateway.url, thread.thread_id)
            assert [e["method"] for e in first[-2:]] == ["input.requested", "lifecycle"]
            await thread.run.start(input="yes")  # the thread waits: the input is the answer
            async with asyncio.timeout(TIMEOUT):
                output = await thread.output
        assert output["messages"][-1]["content"] == "done: the user said yes"
    finally:
        await sdk.aclose()


async def test_a_new_session_on_a_thread_waits_for_its_own_run(client) -> None:
    async with client.threads.stream(assistant_id="lead_agent") as thread:
        await thread.run.start(input=user_message("first"))
        async with asyncio.timeout(TIMEOUT):
            await thread.output
    for text in ("second", "third"):  # the last run's "completed" must not end the next session's wait
        async with client.threads.stream(thread.thread_id, assistant_id="lead_agent") as again:
            await asyncio.sleep(0.2)  # its lifecycle watcher attaches before the run starts
            await again.run.start(input=user_message(text))
            async with asyncio.timeout(TIMEOUT):
                output = await again.output
        assert output["messages"][-1]["content"] == f"echo: {text}"


async def test_the_protocol_streams_through_the_redis_bridge(home, model, redis_url) -> None:
    config = make_config(home, gateway={"stream_bridge": "redis", "redis_url": redis_url})
    with running_gateway(config, model=model) as served:
        sdk = get_client(url=served.url, api_key=None)
        try:
            async with sdk.threads.stream(assistant_id="lead_agent") as thread:
                await thread.run.start(input=user_message("write r.txt via redis"))
                events = await _events_until_end(thread)
                async with asyncio.timeout(TIMEOUT):
                    output = await thread.output
        finally:
            await sdk.aclose()
    assert [e["params"]["data"]["event"] for e in events if e["method"] == "tools"] == ["tool-started", "tool-finished"]
    assert output["messages"][-1]["content"] == "done: Wrote 9 bytes to /mnt/user-data/outputs/r.txt"


async def test_a_turn_goes_on_through_a_redis_restart(home, model) -> None:
    """Redis restarts (empty) while a run waits on its model: the run publishes its next events
    on a new connection instead of failing, and the thread's event log (no client reconnects for
    it) subscribes again, so the SDK's stream gets the rest of the turn and its end."""
    async with held_turn_on_own_redis(home, model) as held:
        held.redis.stop()
        await asyncio.sleep(1.0)  # the log's read fails meanwhile: it waits and tries again
        held.redis.start()
        model.release()
        events = await _events_until_end(held.thread)
        async with asyncio.timeout(TIMEOUT):
            output = await held.thread.output
        run = await held.sdk.runs.get(held.thread.thread_id, held.started["run_id"])
    assert run["status"] == "success"
    assert events[-1]["params"]["data"]["event"] == "completed"
    assert output["messages"][-1]["content"] == "echo: wait for it"


async def test_a_gateway_that_only_accepts_runs_streams_a_turn_another_process_executes(home, redis_url) -> None:
    """The scale-out topology: the gateway the client talks to queues the run (``runs.workers:
    0``) and another process executes it; the thread's stream still carries the whole turn and
    its end (the run was never handed to the thread's event log, which showed nothing)."""
    base = {"checkpointer": {"type": "sqlite"}, "gateway": {"stream_bridge": "redis", "redis_url": redis_url}}
    with (
        running_gateway(make_config(home, runs={"workers": 0}, **base)) as front,
        running_gateway(make_config(home, **base)),
    ):
        sdk = get_client(url=front.url, api_key=None)
        try:
            async with sdk.threads.stream(assistant_id="lead_agent") as thread:
                started = await thread.run.start(input=user_message("write w.txt elsewhere"))
                events = await _events_until_end(thread)
                async with asyncio.timeout(TIMEOUT):
                    output = await thread.output
            run = await sdk.runs.get(thread.thread_id, started["run_id"])
        finally:
            await sdk.aclose()
    assert run["status"] == "success"
    assert [e["params"]["data"]["event"] for e in events if e["method"] == "tools"] == ["tool-started", "tool-finished"]
    assert events[-1]["params"]["data"]["event"] == "completed"
    assert output["messages"][-1]["content"] == "done: Wrote 9 bytes to /mnt/user-data/outputs/w.txt"


async def test_run_start_from_a_checkpoint_forks_the_thread(client) -> None:
    """``run.start`` with ``config.configurable.checkpoint_id`` (the protocol has no other place
    for it) continues from that checkpoint: the turn after it is left out of the new branch."""
    async with client.threads.stream(assistant_id="lead_agent") as thread:
        for text in ("first", "second"):
            await thread.run.start(input=user_message(text))
            await _events_until_end(thread)
    history = await client.threads.get_history(thread.thread_id, limit=50)
    after_first = next(
        s
        for s in reversed(history)
        if [m["content"] for m in s["values"].get("messages", [])] == ["first", "echo: first"]
    )
    async with client.threads.stream(thread.thread_id, assistant_id="lead_agent") as again:
        await asyncio.sleep(0.2)  # its lifecycle watcher attaches before the run starts
        await again.run.start(
            input=user_message("third"),
            config={"configurable": {"checkpoint_id": after_first["checkpoint"]["checkpoint_id"]}},
        )
        async with asyncio.timeout(TIMEOUT):
            output = await again.output
    assert [m["content"] for m in output["messages"]] == ["first", "echo: first", "third", "echo: third"]
