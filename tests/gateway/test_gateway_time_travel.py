"""Time travel brings the files back: runs from an earlier checkpoint, update_state from one,
and a rolled-back run, through the official langgraph-sdk client."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.gateway.gateway_support import HOLD_AFTER_TOOL, user_message


def outputs(config, tid: str) -> dict[str, str]:
    folder = Path(config.home) / "threads" / tid / "user-data" / "outputs"
    return {p.name: p.read_text() for p in sorted(folder.iterdir()) if p.is_file()}


async def checkpoint_after(client, tid: str, text: str) -> str:
    """The id of the thread's checkpoint whose last message contains ``text``."""
    for state in await client.threads.get_history(tid, limit=100):
        messages = state["values"].get("messages") or []
        if messages and text in str(messages[-1]["content"]) and not state["next"]:
            return state["checkpoint"]["checkpoint_id"]
    raise AssertionError(f"no checkpoint ends with {text!r}")


async def test_a_run_from_each_checkpoint_sees_that_checkpoints_files(client, config) -> None:
    tid = (await client.threads.create())["thread_id"]
    await client.runs.wait(tid, "lead_agent", input=user_message("write a.txt one"))
    await client.runs.wait(tid, "lead_agent", input=user_message("write b.txt two"))
    await client.runs.wait(tid, "lead_agent", input=user_message("write a.txt changed"))
    assert outputs(config, tid) == {"a.txt": "changed", "b.txt": "two"}
    first = await checkpoint_after(client, tid, "a.txt")  # the newest such: 'changed'
    states = await client.threads.get_history(tid, limit=100)
    ends = [s["checkpoint"]["checkpoint_id"] for s in states if not s["next"] and s["values"].get("messages")]
    after_run = dict(zip(("third", "second", "first"), ends[:3], strict=False))
    assert after_run["third"] == first

    # each end of a run, replayed: exactly the files that run left
    expected = {
        "first": {"a.txt": "one"},
        "second": {"a.txt": "one", "b.txt": "two"},
        "third": {"a.txt": "changed", "b.txt": "two"},
    }
    for name in ("first", "second", "third", "first"):
        await client.runs.wait(tid, "lead_agent", input=user_message("hello"), checkpoint_id=after_run[name])
        assert outputs(config, tid) == expected[name], name

    # a branch written with update_state starts from that checkpoint's files too
    await client.threads.update_state(
        tid, {"messages": [{"type": "ai", "content": "noted"}]}, as_node="model", checkpoint_id=after_run["second"]
    )
    assert outputs(config, tid) == expected["second"]


async def test_a_rolled_back_run_takes_its_files_with_it(client, model, config) -> None:
    tid = (await client.threads.create())["thread_id"]
    await client.runs.wait(tid, "lead_agent", input=user_message("write kept.txt yes"))
    await client.runs.create(tid, "lead_agent", input=user_message(f"write gone.txt no {HOLD_AFTER_TOOL}"))
    await asyncio.to_thread(model.wait_until_held)  # gone.txt is written; the answer waits
    assert outputs(config, tid) == {"gone.txt": "no", "kept.txt": "yes"}
    rolled = await client.runs.wait(
        tid, "lead_agent", input=user_message("write new.txt instead"), multitask_strategy="rollback"
    )
    assert [m["content"] for m in rolled["messages"]][-1].startswith("done: Wrote")
    assert outputs(config, tid) == {"kept.txt": "yes", "new.txt": "instead"}


async def test_rest_lists_compares_and_restores_file_versions(client, gateway, config) -> None:
    import httpx

    tid = (await client.threads.create())["thread_id"]
    await client.runs.wait(tid, "lead_agent", input=user_message("write a.txt one"))
    first = await checkpoint_after(client, tid, "a.txt")
    await client.runs.wait(tid, "lead_agent", input=user_message("write b.txt two"))
    last = await checkpoint_after(client, tid, "b.txt")
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        listed = (await http.get(f"/api/threads/{tid}/snapshots")).json()["snapshots"]
        assert listed[0]["checkpoint_id"] == last and listed[0]["kept"]
        added = [p for s in listed for p in s["changes"]["added"]]
        assert "/mnt/user-data/outputs/a.txt" in added and "/mnt/user-data/outputs/b.txt" in added
        diff = (await http.get(f"/api/threads/{tid}/snapshots/diff", params={"from": first, "to": last})).json()
        assert diff["added"] == ["/mnt/user-data/outputs/b.txt"] and diff["removed"] == diff["changed"] == []
        newest = (await http.get(f"/api/threads/{tid}/snapshots/diff")).json()  # the newest step against the one before
        assert newest["to"] == last and set(newest) >= {"added", "removed", "changed"}
        restored = await http.post(f"/api/threads/{tid}/snapshots/{first}/restore")
        assert restored.status_code == 200 and restored.json()["removed"] == ["/mnt/user-data/outputs/b.txt"]
        assert outputs(config, tid) == {"a.txt": "one"}
        missing = await http.post(f"/api/threads/{tid}/snapshots/no-such-checkpoint/restore")
        assert missing.status_code == 404 and "not kept" in missing.json()["detail"]
        other = (await client.threads.create())["thread_id"]
        stolen = await http.post(f"/api/threads/{other}/snapshots/{first}/restore")
        assert stolen.status_code == 404  # another thread's checkpoint is not this thread's


async def test_a_copied_thread_has_its_own_files_and_history(client, config) -> None:
    tid = (await client.threads.create(metadata={"project": "fork me"}))["thread_id"]
    await client.runs.wait(tid, "lead_agent", input=user_message("write a.txt one"))
    first = await checkpoint_after(client, tid, "a.txt")
    await client.runs.wait(tid, "lead_agent", input=user_message("write b.txt two"))
    copy = await client.threads.copy(tid)
    new = copy["thread_id"]
    assert new != tid and copy["metadata"]["project"] == "fork me"
    assert [m["content"] for m in copy["values"]["messages"]] == [
        m["content"] for m in (await client.threads.get(tid))["values"]["messages"]
    ]
    assert outputs(config, new) == {"a.txt": "one", "b.txt": "two"}
    # the copy goes its own way: its files change, the original's do not
    await client.runs.wait(new, "lead_agent", input=user_message("write c.txt three"))
    assert outputs(config, new) == {"a.txt": "one", "b.txt": "two", "c.txt": "three"}
    assert outputs(config, tid) == {"a.txt": "one", "b.txt": "two"}
    # and its history came along: a run from an old checkpoint of the copy brings back its files
    await client.runs.wait(new, "lead_agent", input=user_message("hello"), checkpoint_id=first)
    assert outputs(config, new) == {"a.txt": "one"}
    assert outputs(config, tid) == {"a.txt": "one", "b.txt": "two"}


async def test_deleting_a_thread_frees_its_file_versions(client, config, monkeypatch) -> None:
    import herdsman.sandbox.history as history_module

    monkeypatch.setattr(history_module, "SWEEP_GRACE", 0.0)
    tid = (await client.threads.create())["thread_id"]
    await client.runs.wait(tid, "lead_agent", input=user_message("write a.txt one"))
    await client.runs.wait(tid, "lead_agent", input=user_message("write a.txt two"))
    objects = Path(config.home) / "threads" / tid / "history" / "objects"
    assert any(p.read_bytes() == b"one" for p in objects.rglob("*") if p.is_file())
    await client.threads.delete(tid)
    left = [p.read_bytes() for p in objects.rglob("*") if p.is_file()]
    assert b"one" not in left  # no checkpoint reaches it any more
    assert not (
        Path(config.home) / "threads" / tid
    ).exists()  # nor its files: a thread made again with its id starts empty


async def test_a_run_from_a_checkpoint_the_thread_never_had_is_refused(client) -> None:
    """A mistyped checkpoint id is a 404 naming where to find the real ones, not a run that starts
    from an empty state; the thread keeps its conversation and takes the next run."""
    import httpx
    import pytest

    tid = (await client.threads.create())["thread_id"]
    await client.runs.wait(tid, "lead_agent", input=user_message("write a.txt one"))
    with pytest.raises(httpx.HTTPStatusError) as refused:
        await client.runs.wait(tid, "lead_agent", input=user_message("again"), checkpoint_id="1f0-no-such-checkpoint")
    assert refused.value.response.status_code == 404
    assert "not found on thread" in refused.value.response.text and "/history" in refused.value.response.text
    done = await client.runs.wait(tid, "lead_agent", input=user_message("and on"))
    assert [m["content"] for m in done["messages"]][0] == "write a.txt one"
