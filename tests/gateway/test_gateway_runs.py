"""Runs through the official langgraph-sdk client: background runs, cancel, busy threads,
multitask strategies, and a thread that survives a gateway restart."""

from __future__ import annotations

import asyncio

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import BadRequestError, ConflictError

from herdsman.models.scripted import ScriptedChatModel
from herdsman.runtime.storage.record_store import open_record_store
from herdsman.runtime.storage.threads import ThreadStore
from tests.gateway.gateway_support import HOLD, HOLD_MID, running_gateway, scripted_model, user_message
from tests.support import make_config


async def _until(check, what: str, tries: int = 500) -> None:
    """Poll ``check`` (an async predicate) until true; fail naming ``what``."""
    for _ in range(tries):
        if await check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


async def _held_run(client, model, tid: str, **kwargs):
    run = await client.runs.create(tid, "lead_agent", input=user_message(f"hold on {HOLD}"), **kwargs)
    await asyncio.to_thread(model.wait_until_held)
    return run


async def test_background_run_join_list_and_get(client) -> None:
    thread = await client.threads.create()
    tid = thread["thread_id"]
    run = await client.runs.create(tid, "lead_agent", input=user_message("background"))
    assert run["status"] in ("pending", "running") and run["assistant_id"] == "lead_agent"
    values = await client.runs.join(tid, run["run_id"])
    assert values["messages"][-1]["content"] == "echo: background"
    got = await client.runs.get(tid, run["run_id"])
    assert got["status"] == "success"
    second = await client.runs.wait(tid, "lead_agent", input=user_message("again"))
    assert second["messages"][-1]["content"] == "echo: again"
    listed = await client.runs.list(tid)
    assert len(listed) == 2 and listed[1]["run_id"] == run["run_id"]


async def test_run_on_a_busy_thread_is_enqueued_by_default_and_rejected_when_asked(client, model) -> None:
    """As LangGraph's server: no multitask_strategy means enqueue; reject answers 409."""
    tid = (await client.threads.create())["thread_id"]
    held = await _held_run(client, model, tid)
    assert (await client.threads.get(tid))["status"] == "busy"
    with pytest.raises(ConflictError) as info:
        await client.runs.create(tid, "lead_agent", input=user_message("me too"), multitask_strategy="reject")
    assert "in progress" in info.value.response.text and "multitask_strategy" in info.value.response.text
    queued = await client.runs.create(tid, "lead_agent", input=user_message("after you"))
    assert queued["multitask_strategy"] == "enqueue" and queued["status"] == "pending"
    model.release()
    await client.runs.join(tid, held["run_id"])
    final = await client.runs.join(tid, queued["run_id"])
    assert [m["content"] for m in final["messages"] if m["type"] == "ai"][-1] == "echo: after you"
    assert (await client.threads.get(tid))["status"] == "idle"


async def test_cancel_a_running_run(client, model) -> None:
    tid = (await client.threads.create())["thread_id"]
    held = await _held_run(client, model, tid)
    await client.runs.cancel(tid, held["run_id"], wait=True)
    run = await client.runs.get(tid, held["run_id"])
    assert run["status"] == "interrupted"
    thread = await client.threads.get(tid)
    assert thread["status"] == "interrupted"  # as LangGraph's server shows the thread of a cancelled run
    # The input the run had already checkpointed is kept; the thread takes new runs.
    assert thread["values"]["messages"][0]["content"].startswith("hold on")
    model.release()
    after = await client.runs.wait(tid, "lead_agent", input=user_message("next"))
    assert after["messages"][-1]["content"] == "echo: next"


async def test_a_stopped_answer_keeps_what_was_said(client, model) -> None:
    """Stop while the answer streams: the words the user saw stay in the thread as the agent's
    message, the thread is interrupted (as LangGraph's server shows it) with nothing pending, and the
    next turn sees them."""
    tid = (await client.threads.create())["thread_id"]
    seen = ""
    stream = client.runs.stream(
        tid, "lead_agent", input=user_message(f"tell me a long story {HOLD_MID}"), stream_mode="messages-tuple"
    )
    async for part in stream:
        if part.event == "metadata":
            run_id = part.data["run_id"]
        elif part.event == "messages":
            seen += part.data[0]["content"]
            if seen == "echo: tell m":  # three 4-character chunks, then the model holds
                break
    await stream.aclose()
    await client.runs.cancel(tid, run_id, wait=True)
    assert (await client.runs.get(tid, run_id))["status"] == "interrupted"
    thread = await client.threads.get(tid)
    assert thread["status"] == "interrupted"
    said = thread["values"]["messages"][-1]
    assert said["type"] == "ai" and said["content"] == seen
    assert (await client.threads.get_state(tid))["next"] == []
    model.release()
    after = await client.runs.wait(tid, "lead_agent", input=user_message("go on"))
    assert [m["content"] for m in after["messages"]][-3:] == [seen, "go on", "echo: go on"]
    assert seen in [m.text for m in model.calls[-1].messages]


async def test_multitask_interrupt_rollback_and_enqueue(client, model) -> None:
    tid = (await client.threads.create())["thread_id"]
    held = await _held_run(client, model, tid)
    # interrupt: the running run stops, the new one runs on top of what it left.
    replaced = await client.runs.wait(
        tid, "lead_agent", input=user_message("interrupting"), multitask_strategy="interrupt"
    )
    assert (await client.runs.get(tid, held["run_id"]))["status"] == "interrupted"
    assert [m["content"] for m in replaced["messages"]][-2:] == ["interrupting", "echo: interrupting"]
    assert replaced["messages"][0]["content"].startswith("hold on")

    # rollback: the running run is undone and forgotten.
    tid2 = (await client.threads.create())["thread_id"]
    await client.runs.wait(tid2, "lead_agent", input=user_message("kept"))
    model._gate.clear()
    model._waiting.clear()
    held2 = await _held_run(client, model, tid2)
    rolled = await client.runs.wait(tid2, "lead_agent", input=user_message("instead"), multitask_strategy="rollback")
    assert [m["content"] for m in rolled["messages"]] == ["kept", "echo: kept", "instead", "echo: instead"]
    assert held2["run_id"] not in [r["run_id"] for r in await client.runs.list(tid2)]

    # enqueue: the new run waits for the running one, then runs after it.
    tid3 = (await client.threads.create())["thread_id"]
    model._waiting.clear()
    held3 = await _held_run(client, model, tid3)
    queued = await client.runs.create(tid3, "lead_agent", input=user_message("queued"), multitask_strategy="enqueue")
    assert (await client.runs.get(tid3, queued["run_id"]))["status"] == "pending"
    model.release()
    values = await client.runs.join(tid3, queued["run_id"])
    assert [m["content"] for m in values["messages"]][-2:] == ["queued", "echo: queued"]
    assert values["messages"][0]["content"].startswith("hold on")
    assert (await client.runs.get(tid3, held3["run_id"]))["status"] == "success"


async def test_on_disconnect_cancel_stops_the_run(client, model) -> None:
    tid = (await client.threads.create())["thread_id"]
    created = []
    stream = client.runs.stream(
        tid, "lead_agent", input=user_message(f"bye {HOLD}"), on_disconnect="cancel", on_run_created=created.append
    )
    await stream.__anext__()
    await asyncio.to_thread(model.wait_until_held)
    await stream.aclose()

    async def interrupted() -> bool:
        return (await client.runs.get(tid, created[0]["run_id"]))["status"] == "interrupted"

    await _until(interrupted, "the run to be cancelled after the client left")

    async def thread_interrupted() -> bool:  # as LangGraph's server: interrupted, with the run's input kept
        return (await client.threads.get(tid))["status"] == "interrupted"

    await _until(thread_interrupted, "the thread to show the cancelled run")
    thread = await client.threads.get(tid)
    assert [m["content"] for m in thread["values"]["messages"]] == [f"bye {HOLD}"]


async def test_resume_without_pending_interrupt_is_a_clear_400(client) -> None:
    tid = (await client.threads.create())["thread_id"]
    await client.runs.wait(tid, "lead_agent", input=user_message("hi"))
    with pytest.raises(BadRequestError) as info:
        await client.runs.create(tid, "lead_agent", command={"resume": "yes"})
    assert info.value.response.status_code == 400
    assert "not waiting at an interrupt" in info.value.response.text


async def test_failed_run_streams_an_error_event(config) -> None:
    broken = ScriptedChatModel(responses=[{"error": "the model is down"}])
    with running_gateway(config, model=broken) as served:
        sdk = get_client(url=served.url, api_key=None)
        try:
            tid = (await sdk.threads.create())["thread_id"]
            parts = [p async for p in sdk.runs.stream(tid, "lead_agent", input=user_message("hi"))]
            errors = [p.data for p in parts if p.event == "error"]
            assert errors and set(errors[0]) == {"error", "message"}
            assert "the model is down" in errors[0]["message"]
            assert parts[-1].event == "error"  # the last part: the stream ends after it
            runs = await sdk.runs.list(tid)
            assert runs[0]["status"] == "error"
            assert (await sdk.threads.get(tid))["status"] == "error"
        finally:
            await sdk.aclose()


async def test_thread_resumes_after_a_gateway_restart(home) -> None:
    config = make_config(home, checkpointer={"type": "sqlite"})
    with running_gateway(config) as first:
        sdk = get_client(url=first.url, api_key=None)
        tid = (await sdk.threads.create(metadata={"topic": "kiwi"}))["thread_id"]
        await sdk.runs.wait(tid, "lead_agent", input=user_message("remember kiwi"))
        await sdk.aclose()
    model = scripted_model()
    with running_gateway(config, model=model) as second:
        sdk = get_client(url=second.url, api_key=None)
        try:
            thread = await sdk.threads.get(tid)
            assert thread["metadata"]["topic"] == "kiwi"
            assert [t["thread_id"] for t in await sdk.threads.search(metadata={"graph_id": "lead_agent"})] == [tid]
            values = await sdk.runs.wait(tid, "lead_agent", input=user_message("what was it?"))
            assert [m["content"] for m in values["messages"]] == [
                "remember kiwi",
                "echo: remember kiwi",
                "what was it?",
                "echo: what was it?",
            ]
            assert len(await sdk.runs.list(tid)) == 2
        finally:
            await sdk.aclose()
    # The model of the second process saw the whole conversation.
    assert [m.text for m in model.calls[0].messages if m.type != "system"][:3] == [
        "remember kiwi",
        "echo: remember kiwi",
        "what was it?",
    ]


async def test_runs_lost_in_a_crash_are_marked_and_the_thread_is_usable(home) -> None:
    config = make_config(home, checkpointer={"type": "sqlite"})
    with running_gateway(config) as first:
        sdk = get_client(url=first.url, api_key=None)
        tid = (await sdk.threads.create())["thread_id"]
        await sdk.runs.wait(tid, "lead_agent", input=user_message("before the crash"))
        await sdk.aclose()
    # What a killed process leaves behind: a run saved as running on a busy thread.
    async with open_record_store(config) as store:
        records = ThreadStore(store)
        await records.put_run(
            {
                "run_id": "lost-run",
                "thread_id": tid,
                "status": "running",
                "created_at": "9999",
                "updated_at": "9999",
                "assistant_id": "lead_agent",
                "metadata": {},
                "multitask_strategy": "reject",
                "kwargs": {},
                "error": None,
            }
        )
        await records.update(tid, status="busy")
    with running_gateway(config) as second:
        sdk = get_client(url=second.url, api_key=None)
        try:
            lost = await sdk.runs.get(tid, "lost-run")
            assert lost["status"] == "error" and "gateway stopped" in lost["error"]["message"]
            assert (await sdk.threads.get(tid))["status"] == "idle"
            values = await sdk.runs.wait(tid, "lead_agent", input=user_message("after"))
            assert [m["content"] for m in values["messages"]][-2:] == ["after", "echo: after"]
            assert values["messages"][0]["content"] == "before the crash"
        finally:
            await sdk.aclose()


async def test_rolling_back_a_queued_run_leaves_the_thread_alone(client, model) -> None:
    tid = (await client.threads.create())["thread_id"]
    held = await _held_run(client, model, tid)
    queued = await client.runs.create(tid, "lead_agent", input=user_message("later"), multitask_strategy="enqueue")
    await client.runs.cancel(tid, queued["run_id"], action="rollback")
    assert [r["run_id"] for r in await client.runs.list(tid)] == [held["run_id"]]
    model.release()
    values = await client.runs.join(tid, held["run_id"])
    assert [m["content"] for m in values["messages"]] == ["hold on [hold]", "echo: hold on"]
    assert len(await client.threads.search(status="idle")) == 1


async def test_rollback_of_the_first_run_leaves_an_empty_thread(client, model) -> None:
    tid = (await client.threads.create())["thread_id"]
    held = await _held_run(client, model, tid)
    values = await client.runs.wait(tid, "lead_agent", input=user_message("instead"), multitask_strategy="rollback")
    assert [m["content"] for m in values["messages"]] == ["instead", "echo: instead"]
    runs = await client.runs.list(tid)
    assert len(runs) == 1 and runs[0]["run_id"] != held["run_id"] and runs[0]["status"] == "success"


async def test_a_rolled_back_run_leaves_none_of_its_checkpoints_in_the_history(client, model) -> None:
    """As LangGraph's server: multitask_strategy rollback deletes the stopped run and the
    checkpoints it wrote; the thread's history shows only the earlier run's and the new run's."""
    tid = (await client.threads.create())["thread_id"]
    first = await client.runs.create(tid, "lead_agent", input=user_message("kept"))
    await client.runs.join(tid, first["run_id"])
    before = {h["checkpoint"]["checkpoint_id"] for h in await client.threads.get_history(tid, limit=100)}
    held = await _held_run(client, model, tid)
    during = await client.threads.get_history(tid, limit=100)
    assert held["run_id"] in {h["metadata"].get("run_id") for h in during}  # it had written checkpoints
    await client.runs.wait(tid, "lead_agent", input=user_message("instead"), multitask_strategy="rollback")
    history = await client.threads.get_history(tid, limit=100)
    assert held["run_id"] not in {h["metadata"].get("run_id") for h in history}
    assert before <= {h["checkpoint"]["checkpoint_id"] for h in history}  # the earlier run's are all kept
    newest_kept = next(h for h in history if h["checkpoint"]["checkpoint_id"] in before)
    assert [m["content"] for m in newest_kept["values"]["messages"]] == ["kept", "echo: kept"]
    assert [m["content"] for m in history[0]["values"]["messages"]] == [
        "kept",
        "echo: kept",
        "instead",
        "echo: instead",
    ]


async def test_stopping_the_gateway_interrupts_its_runs_and_keeps_their_steps(home) -> None:
    config = make_config(home, checkpointer={"type": "sqlite"})
    model = scripted_model()
    with running_gateway(config, model=model) as first:
        sdk = get_client(url=first.url, api_key=None)
        tid = (await sdk.threads.create())["thread_id"]
        run = await _held_run(sdk, model, tid)
        await sdk.aclose()
    with running_gateway(config) as second:
        sdk = get_client(url=second.url, api_key=None)
        try:
            assert (await sdk.runs.get(tid, run["run_id"]))["status"] == "interrupted"
            thread = await sdk.threads.get(tid)
            assert thread["status"] == "idle"
            assert thread["values"]["messages"][0]["content"] == "hold on [hold]"
        finally:
            await sdk.aclose()


async def test_a_run_picks_a_configured_model_and_an_unknown_one_is_a_400(home) -> None:
    """``config.configurable.model_name`` (what the web UI's model picker sends) picks the lead's model."""
    models = [
        {
            "name": "main",
            "use": "herdsman.models.scripted:ScriptedChatModel",
            "responses": ["from main"],
            "on_exhausted": "repeat_last",
        },
        {
            "name": "other",
            "use": "herdsman.models.scripted:ScriptedChatModel",
            "responses": ["from other"],
            "on_exhausted": "repeat_last",
        },
    ]
    with running_gateway(make_config(home, models=models, title={"enabled": False})) as served:
        client = get_client(url=served.url, api_key=None)
        try:
            tid = (await client.threads.create())["thread_id"]
            picked = await client.runs.wait(
                tid, "lead_agent", input=user_message("hi"), config={"configurable": {"model_name": "other"}}
            )
            assert picked["messages"][-1]["content"] == "from other"
            assert picked["usage"]["lead"]["model"] == "other"
            default = await client.runs.wait(tid, "lead_agent", input=user_message("hi again"))
            assert default["messages"][-1]["content"] == "echo: hi again"  # the gateway's lead model (the test's echo)
            with pytest.raises(BadRequestError) as info:
                await client.runs.create(
                    tid, "lead_agent", input=user_message("hi"), config={"configurable": {"model_name": "gpt-9"}}
                )
            assert "model 'gpt-9' is not configured" in info.value.response.text
            assert "main, other" in info.value.response.text
        finally:
            await client.aclose()


async def test_concurrent_users_each_follow_the_script_in_order(config) -> None:
    """One scripted agent serving many users at once: each thread gets the script from its start,
    in order, whatever the other threads' runs do meanwhile; cycle starts it again."""
    script = [
        {"tool_calls": [{"name": "ls", "args": {"path": "/mnt/user-data/outputs"}}], "delay": 0.02},
        {"content": "answer one", "delay": 0.01},
        "answer two",
    ]
    model = ScriptedChatModel(responses=script, on_exhausted="cycle", chunk_delay=0.005)
    with running_gateway(config, model=model) as served:
        sdk = get_client(url=served.url, api_key=None)
        try:
            tids = [(await sdk.threads.create())["thread_id"] for _ in range(8)]

            async def two_turns(tid: str) -> list[str]:
                for text in ("first", "second", "third"):
                    await sdk.runs.wait(tid, "lead_agent", input=user_message(text))
                messages = (await sdk.threads.get_state(tid))["values"]["messages"]
                return [m["content"] or "tool call" for m in messages if m["type"] == "ai"]

            said = await asyncio.gather(*(two_turns(t) for t in tids))
        finally:
            await sdk.aclose()
    assert said == [["tool call", "answer one", "answer two", "tool call", "answer one"]] * 8
    assert len(model.calls) == 8 * 5


async def test_the_thread_is_settled_when_its_stream_ends(client) -> None:
    """A client that reads the thread (or its runs) as soon as the stream or wait ends sees it idle
    and the run done, as LangGraph's server answers (the thread is settled before the stream's
    end is sent; the web UI's thread list refreshes then)."""
    tid = (await client.threads.create())["thread_id"]
    for i in range(15):
        async for _ in client.runs.stream(tid, "lead_agent", input=user_message(f"turn {i}")):
            pass
        assert (await client.threads.get(tid))["status"] == "idle", f"busy after the stream of turn {i} ended"
        await client.runs.wait(tid, "lead_agent", input=user_message(f"wait {i}"))
        assert (await client.threads.get(tid))["status"] == "idle", f"busy after the wait of turn {i} ended"
        assert all(r["status"] == "success" for r in await client.runs.list(tid))
