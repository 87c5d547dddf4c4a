"""Threads: create, get, update, delete, search (LangGraph API ``/threads``).

A thread's record (metadata, status) is in the thread store, kept up to date by the run
manager (``busy`` while a run is in progress); its values come from the checkpointer.
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Response

from herdsman import pools
from herdsman.logs import get_logger
from herdsman.runtime.runs.run_input import InputTooLargeError, check_size
from herdsman.runtime.runs.runs import FINAL_STATUSES, RunError
from herdsman.runtime.storage.file_versions import file_versions_of
from herdsman.runtime.storage.thread_copy import copy_checkpoints
from herdsman.runtime.storage.thread_files import remove_thread_files as remove_files
from herdsman.runtime.storage.threads import SCAN_LIMIT, ThreadExistsError, ThreadRecord
from herdsman.sandbox.base import SandboxError
from herdsman.sandbox.owners import record_owner
from herdsman.sandbox.paths import validate_thread_id
from herdsman_gateway.auth import OWNER_KEY, current_user, owns, with_owner
from herdsman_gateway.container import Gateway, get_gateway
from herdsman_gateway.schemas import (
    PruneResult,
    Thread,
    ThreadCount,
    ThreadCreate,
    ThreadPatch,
    ThreadPrune,
    ThreadSearch,
)
from herdsman_gateway.state_view import interrupts_json, read_state, safe_json

log = get_logger(__name__)

router = APIRouter(tags=["threads"])


def not_found(thread_id: str) -> HTTPException:
    """The 404 for a thread that does not exist (or belongs to someone else)."""
    return HTTPException(
        404, f"Thread {thread_id} not found; create it with POST /threads or list them with POST /threads/search"
    )


def check_thread_id(thread_id: str) -> str:
    """``thread_id`` when it can name a thread (it names a sandbox folder too), else 422."""
    try:
        return validate_thread_id(thread_id)
    except SandboxError as exc:
        raise HTTPException(422, f"Invalid request: thread_id: {exc}") from None


async def check_thread_room(gw: Gateway, user: str | None) -> None:
    """429 when ``user`` has ``gateway.max_threads_per_user`` threads already (before one is made)."""
    limit = gw.config.gateway.max_threads_per_user
    if limit is None:
        return
    owned = await gw.threads.search(metadata=with_owner(None, user) or None, limit=limit)
    if len(owned) >= limit:
        raise HTTPException(
            429,
            f"You have {limit} threads, the most gateway.max_threads_per_user allows; delete threads you no "
            "longer need (DELETE /threads/{thread_id}, or POST /threads/prune) or ask the operator to raise the limit",
        )


def check_metadata_size(gw: Gateway, metadata: dict[str, Any] | None, thread_id: str | None) -> None:
    """413 when a thread's metadata (after a merge) is over ``runs.max_input_bytes`` as JSON: the
    record keeps it for good and every listing returns it, and patches merge new keys without end."""
    try:
        check_size("metadata", metadata, gw.config.runs.max_input_bytes, thread_id or "")
    except InputTooLargeError as exc:
        raise HTTPException(413, f"Request too large: {exc}") from None


async def load_thread(gw: Gateway, thread_id: str, user: str | None) -> ThreadRecord:
    """The thread's record if ``user`` may see it, else 404."""
    record = await gw.threads.get(thread_id)
    if record is None or not owns(record.metadata, user):
        raise not_found(thread_id)
    return record


async def thread_json(gw: Gateway, record: ThreadRecord, *, with_values: bool = True) -> dict[str, Any]:
    """The LangGraph ``Thread`` JSON: record, live status, latest values and interrupts; a thread
    whose state cannot be read shows its values as last saved and an ``error`` (never fails)."""
    data: dict[str, Any] = {**safe_json(record.to_dict()), "values": None, "interrupts": {}}
    if with_values:
        snapshot, state = await read_state(gw.graph, {"configurable": {"thread_id": record.thread_id}})
        data["values"] = state["values"] or None
        if snapshot is not None:
            data["interrupts"] = {t.id: interrupts_json(t.interrupts) for t in snapshot.tasks or () if t.interrupts}
        if state.get("error"):
            data["error"] = state["error"]
    return data


@router.post("/threads", response_model=Thread, summary="Create a thread")
async def create_thread(
    body: ThreadCreate, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Any:
    """Create a thread (``if_exists: do_nothing`` returns an existing one instead of 409)."""
    if body.thread_id:
        check_thread_id(body.thread_id)
        existing = await gw.threads.get(body.thread_id)
        if existing is not None and not owns(existing.metadata, user):
            raise HTTPException(409, f"Thread {body.thread_id} already exists; choose another thread_id")
        if existing is None:
            await check_thread_room(gw, user)
    else:
        await check_thread_room(gw, user)
    check_metadata_size(gw, body.metadata, body.thread_id)
    try:
        record = await gw.threads.create(body.thread_id, with_owner(body.metadata, user), body.if_exists)
    except ThreadExistsError:
        raise HTTPException(
            409, f"Thread {body.thread_id} already exists; send if_exists: do_nothing to reuse it"
        ) from None
    await note_owner(gw, record, user)
    return await thread_json(gw, record)


@router.get("/threads/{thread_id}", response_model=Thread, summary="Get a thread")
async def get_thread(
    thread_id: str, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Any:
    """The thread with its status and latest values; ``busy`` as soon as a run of it was queued
    (its ``metadata`` event may go out before the thread's record says so)."""
    data = await thread_json(gw, await load_thread(gw, thread_id, user))
    if data["status"] != "busy" and await gw.runs.busy_run(thread_id) is not None:
        data["status"] = "busy"
    return data


@router.patch("/threads/{thread_id}", response_model=Thread, summary="Update a thread's metadata")
async def patch_thread(
    thread_id: str, body: ThreadPatch, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Any:
    """Merge ``metadata`` into the thread's metadata."""
    current = await load_thread(gw, thread_id, user)
    check_metadata_size(gw, {**current.metadata, **body.metadata}, thread_id)
    record = await gw.threads.update(thread_id, metadata=with_owner(body.metadata, user))
    assert record is not None
    return await thread_json(gw, record)


@router.delete("/threads/{thread_id}", status_code=204, response_class=Response, summary="Delete a thread")
async def delete_thread(
    thread_id: str, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Response:
    """Cancel the thread's runs, then delete its crons, record, checkpoints and their file
    versions, and its files (workspace, uploads, outputs, sub-agent transcripts)."""
    await load_thread(gw, thread_id, user)
    await _delete(gw, thread_id, user)
    return Response(status_code=204)


async def _delete(gw: Gateway, thread_id: str, user: str | None) -> None:
    """Cancel the thread's runs, then delete its crons, record, checkpoints and their file
    versions, and its files (on ``user``'s slots of the file pool); 409 (nothing deleted) when a
    run another process holds did not stop in time."""
    for run in gw.runs.active_runs(thread_id):
        await gw.runs.cancel(thread_id, run.run_id, wait=True)
    # and the runs another process executes (a worker, another gateway) or no worker took yet:
    # left alone, they went on writing checkpoints to the deleted thread
    for queued in await gw.runs.queue.thread_runs(thread_id):
        held = queued.worker_id is not None and queued.lease_until > time.time()
        try:
            stopped = await gw.runs.cancel(thread_id, queued.run_id, wait=held)
        except RunError:
            continue  # its record is gone already: a worker that claims it drops it
        if held and stopped.get("status") not in FINAL_STATUSES:
            raise HTTPException(
                409,
                f"Thread {thread_id}'s run {queued.run_id} is executed by another process and has not stopped yet "
                "(it was asked to); nothing was deleted: send the delete again in a few seconds",
            )
    if gw.crons is not None:
        await gw.crons.delete_for_thread(thread_id)
    await gw.graph.checkpointer.adelete_thread(thread_id)
    if versions := file_versions_of(gw.graph.checkpointer):
        await versions.collect(thread_id, gw.graph.checkpointer, user)  # the versions of its checkpoints go too
    await pools.run(pools.FILES, user, remove_thread_files, gw, thread_id)  # while the record still holds the id
    await gw.threads.delete(thread_id)
    if gw.thread_events is not None:
        gw.thread_events.drop(thread_id)  # its protocol events go with it


async def note_owner(gw: Gateway, record: ThreadRecord, user: str | None) -> None:
    """Note ``user`` as the owner of a thread just made (or found: only when it is ``user``'s),
    beside its files, so the disk its sandbox writes counts against ``user``'s bound
    (``sandbox.disk_quota_per_user_mb``), whichever process places its files first."""
    if user is not None and record.metadata.get(OWNER_KEY) in (None, user):
        await pools.run(pools.FILES, user, record_owner, gw.config.resolve_home(), record.thread_id, user)


def remove_thread_files(gw: Gateway, thread_id: str) -> None:
    """Stop the thread's sandbox and delete everything kept for it on disk (``<home>/threads/<id>``).
    Kept, a deleted thread's files were handed to whoever created a thread with its id next,
    another user too (red-team finding)."""
    remove_files(gw.sandbox, gw.config.resolve_home(), thread_id)


async def refuse_busy(gw: Gateway, thread_id: str, doing: str) -> None:
    """409 when the thread has a run in progress in any process (gateway, worker, or queued)."""
    if (run_id := await gw.runs.busy_run(thread_id)) is not None:
        raise HTTPException(
            409,
            f"Thread {thread_id} has run {run_id} in progress; "
            f"wait for it (GET /threads/{thread_id}/runs/{run_id}/join) "
            f"or cancel it before {doing}",
        )


@router.post("/threads/prune", response_model=PruneResult, summary="Prune threads")
async def prune_threads(
    body: ThreadPrune, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Any:
    """Delete the threads (``strategy: delete``, as ``DELETE /threads/{id}`` each), or keep only
    their latest checkpoint (``keep_latest``, where the checkpointer can: PostgreSQL).

    Ids of no thread are skipped, as in LangGraph's server; with auth on, a thread of another
    user makes it a 404 and nothing is pruned."""
    records = {tid: await gw.threads.get(tid) for tid in dict.fromkeys(body.thread_ids)}
    if user is not None and (foreign := [t for t, r in records.items() if r is None or not owns(r.metadata, user)]):
        raise HTTPException(404, f"Thread {foreign[0]} not found; prune only threads listed by POST /threads/search")
    found = [tid for tid, record in records.items() if record is not None]
    if body.strategy == "keep_latest":
        for tid in found:
            await refuse_busy(gw, tid, "pruning it")
        try:
            await gw.graph.checkpointer.aprune(found, strategy="keep_latest")
        except NotImplementedError:
            raise HTTPException(
                422,
                f"strategy keep_latest needs a checkpointer that prunes (checkpointer.type: postgres); "
                f"this one is {type(gw.graph.checkpointer).__name__}: use strategy delete",
            ) from None
        if versions := file_versions_of(gw.graph.checkpointer):
            for tid in found:
                await versions.collect(tid, gw.graph.checkpointer, user)  # the files of the pruned checkpoints go too
    else:
        for tid in found:
            await _delete(gw, tid, user)
    return {"pruned_count": len(found)}


@router.post("/threads/{thread_id}/copy", response_model=Thread, summary="Copy a thread")
async def copy_thread(
    thread_id: str, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Any:
    """A new thread with this one's metadata, checkpoints and files (each version of them too):
    a fork that goes its own way from here."""
    source = await load_thread(gw, thread_id, user)
    await refuse_busy(gw, thread_id, "copying it")
    await check_thread_room(gw, user)
    record = await gw.threads.create(None, with_owner(dict(source.metadata), user))
    await note_owner(gw, record, user)
    await copy_checkpoints(gw.graph.checkpointer, thread_id, record.thread_id)
    if versions := file_versions_of(gw.graph.checkpointer):
        await pools.run(pools.FILES, user, versions.copy_files, thread_id, record.thread_id)
    return await thread_json(gw, record)


@router.post("/threads/search", response_model=list[Thread], summary="Search threads")
async def search_threads(
    body: ThreadSearch, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Any:
    """Threads whose metadata contains ``metadata`` (and with the given ids and status)."""
    metadata = with_owner(body.metadata, user) if user is not None else body.metadata
    records = await gw.threads.search(
        metadata=metadata,
        ids=body.ids,
        status=body.status,
        limit=body.limit,
        offset=body.offset,
        sort_by=body.sort_by or "created_at",
        sort_order=body.sort_order or "desc",
    )
    found = [await thread_json(gw, r) for r in records]
    return _with_values(found, body.values) if body.values else found


def _with_values(threads: list[dict[str, Any]], values: dict[str, Any]) -> list[dict[str, Any]]:
    """The threads whose latest values hold every key of ``values`` with an equal value."""
    return [t for t in threads if all((t["values"] or {}).get(k) == v for k, v in values.items())]


@router.post("/threads/count", response_model=int, summary="Count threads")
async def count_threads(
    body: ThreadCount, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> int:
    """How many threads match the filters of ``POST /threads/search``."""
    metadata = with_owner(body.metadata, user) if user is not None else body.metadata
    records = await gw.threads.search(metadata=metadata, status=body.status, limit=SCAN_LIMIT)
    if not body.values:
        return len(records)
    return len(_with_values([await thread_json(gw, r) for r in records], body.values))
