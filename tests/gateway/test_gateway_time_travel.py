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
    after_run = dict(zip(("third", "second", "first"), ends[:3]))
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
    await client.threads.update_state(tid, {"messages": [{"type": "ai", "content": "noted"}]},
                                      as_node="model", checkpoint_id=after_run["second"])
    assert outputs(config, tid) == expected["second"]


async def test_a_rolled_back_run_takes_its_files_with_it(client, model, config) -> None:
    tid = (await client.threads.create())["thread_id"]
    await client.runs.wait(tid, "lead_agent", input=user_message("write kept.txt yes"))
    await client.runs.create(tid, "lead_agent", input=user_message(f"write gone.txt no {HOLD_AFTER_TOOL}"))
    await asyncio.to_thread(model.wait_until_held)  # gone.txt is written; the answer waits
    assert outputs(config, tid) == {"gone.txt": "no", "kept.txt": "yes"}
    rolled = await client.runs.wait(tid, "lead_agent", input=user_message("write new.txt instead"),
                                    multitask_strategy="rollback")
    assert [m["content"] for m in rolled["messages"]][-1].startswith("done: Wrote")
    assert outputs(config, tid) == {"kept.txt": "yes", "new.txt": "instead"}
