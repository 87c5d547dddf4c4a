"""Copy a thread: its checkpoints (every namespace, with pending writes) and its files; and drop
the checkpoints one run wrote from its thread (a rollback).

LangGraph's ``BaseCheckpointSaver.copy_thread`` is not implemented by the memory, SQLite or
Postgres savers installed here, so the checkpoints are read with ``alist`` and saved again under
the new thread id, oldest first, each with its parent, through the saver's own ``aput`` (the one
without file versions: the files are copied as versions, below). The files come over through
the file history (:meth:`FileVersions.copy_files`): read by descriptors from the source, written
by descriptors into the copy, never by host paths a sandbox could swap.

``delete_for_runs`` is not implemented by these savers either, so :func:`drop_run_checkpoints`
reads the thread, deletes it and saves again the checkpoints that other runs wrote, the same way;
a cancel that comes meanwhile waits for the last save (a process that dies there still loses the
thread's checkpoints: the savers give no transaction over both).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Coroutine
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from herdsman.runtime.storage.file_versions import plain_aput


async def copy_checkpoints(saver: BaseCheckpointSaver, source: str, target: str) -> int:
    """Save every checkpoint of thread ``source`` again under ``target``; how many there were."""
    found = [t async for t in saver.alist({"configurable": {"thread_id": source}})]
    await _save_again(saver, found, target)
    return len(found)


async def drop_run_checkpoints(saver: BaseCheckpointSaver, thread_id: str, run_id: str) -> int:
    """Delete the checkpoints run ``run_id`` wrote on the thread (every namespace; their
    ``metadata.run_id`` says which), keeping every other one as it was (same ids, parents and
    pending writes); how many were deleted. The thread's head is then the newest one kept."""
    found = [t async for t in saver.alist({"configurable": {"thread_id": thread_id}})]
    kept = [t for t in found if (t.metadata or {}).get("run_id") != run_id]
    if len(kept) == len(found):
        return 0

    async def rewrite() -> None:
        await saver.adelete_thread(thread_id)
        await _save_again(saver, kept, thread_id)

    await _to_the_end(rewrite())
    return len(found) - len(kept)


async def _to_the_end(work: Coroutine[Any, Any, None]) -> None:
    """Await ``work`` to its end even when the caller is cancelled meanwhile (then raise the
    cancel after it): a rewrite stopped between the delete and the last save would lose the
    checkpoints not yet saved again, which belong to other runs (a shutdown cancels a run's task
    while it rolls back)."""
    task = asyncio.ensure_future(work)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.cancelled():
                raise
            cancelled = True
    task.result()
    if cancelled:
        raise asyncio.CancelledError


async def _save_again(saver: BaseCheckpointSaver, found: list[Any], target: str) -> None:
    """Save the checkpoints ``found`` (newest first, as ``alist`` lists them) under thread ``target``."""
    put = plain_aput(saver)
    for saved in reversed(found):  # oldest first: parents before children
        conf = saved.config["configurable"]
        ns = conf.get("checkpoint_ns", "")
        parent = (saved.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        config: dict[str, Any] = {"configurable": {"thread_id": target, "checkpoint_ns": ns}}
        if parent:
            config["configurable"]["checkpoint_id"] = parent
        await put(config, saved.checkpoint, saved.metadata, dict(saved.checkpoint.get("channel_versions") or {}))
        by_task: dict[str, list[tuple[str, Any]]] = defaultdict(list)
        for task_id, channel, value in saved.pending_writes or ():
            by_task[task_id].append((channel, value))
        at: RunnableConfig = {
            "configurable": {"thread_id": target, "checkpoint_ns": ns, "checkpoint_id": conf["checkpoint_id"]}
        }
        for task_id, writes in by_task.items():
            await saver.aput_writes(at, writes, task_id)
