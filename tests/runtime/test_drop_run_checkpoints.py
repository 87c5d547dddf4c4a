"""Dropping a rolled-back run's checkpoints deletes the thread and saves the other runs' again;
stopping it half-way (a gateway or worker shutting down cancels the run's task while its rollback
runs) must not lose the checkpoints of the other runs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver

from herdsman.runtime.storage.thread_copy import drop_run_checkpoints


class HeldSaver(InMemorySaver):
    """Holds its first save after the thread was deleted, until ``go`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.deleted = False
        self.rewriting = asyncio.Event()
        self.go = asyncio.Event()

    async def adelete_thread(self, thread_id: str) -> None:
        await super().adelete_thread(thread_id)
        self.deleted = True

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        if self.deleted:
            self.rewriting.set()
            await self.go.wait()
        return await super().aput(config, checkpoint, metadata, new_versions)


async def _write(saver: InMemorySaver, runs: list[str]) -> list[str]:
    """One checkpoint per entry of ``runs`` (its run id), each the child of the one before; their ids."""
    config: dict[str, Any] = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    ids = []
    for step, run_id in enumerate(runs):
        checkpoint = create_checkpoint(checkpoint, None, step)
        config = await saver.aput(config, checkpoint, {"run_id": run_id, "step": step}, {})
        ids.append(config["configurable"]["checkpoint_id"])
    return ids


async def _ids(saver: InMemorySaver) -> list[str]:
    return [t.config["configurable"]["checkpoint_id"] async for t in saver.alist({"configurable": {"thread_id": "t"}})]


async def test_a_drop_cancelled_half_way_still_keeps_the_other_runs_checkpoints() -> None:
    saver = HeldSaver()
    ids = await _write(saver, ["earlier"] * 3 + ["rolled-back"] * 2)
    drop = asyncio.create_task(drop_run_checkpoints(saver, "t", "rolled-back"))
    await saver.rewriting.wait()  # the thread is deleted, its kept checkpoints not yet saved again
    drop.cancel()  # as a shutdown cancels the run's task
    await asyncio.sleep(0)
    saver.go.set()
    with pytest.raises(asyncio.CancelledError):
        await drop  # the cancel is still reported to whoever stopped it
    assert sorted(await _ids(saver)) == sorted(ids[:3])


async def test_a_drop_keeps_the_other_runs_checkpoints_with_their_parents() -> None:
    saver = InMemorySaver()
    ids = await _write(saver, ["earlier"] * 3 + ["rolled-back"] * 2)
    assert await drop_run_checkpoints(saver, "t", "rolled-back") == 2
    kept = [t async for t in saver.alist({"configurable": {"thread_id": "t"}})]
    assert [t.config["configurable"]["checkpoint_id"] for t in kept] == ids[2::-1]
    assert [(t.parent_config or {}).get("configurable", {}).get("checkpoint_id") for t in kept] == [
        ids[1],
        ids[0],
        None,
    ]
