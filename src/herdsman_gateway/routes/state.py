"""Thread state: read it (now or at a checkpoint), write it, list its history.

Everything here reads and writes the checkpointer through the compiled graph, so checkpoints,
parent checkpoints and branching behave exactly as in LangGraph. A checkpoint LangGraph cannot
read back is shown as saved, with an ``error`` (``state_view.py``); a state update is checked
against the graph's state schema first (422), so it cannot write one.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Query
from langgraph.errors import InvalidUpdateError

from herdsman.runtime.runs.run_input import InputTooLargeError, RunInputError, check_size, check_update
from herdsman.runtime.storage.file_versions import file_versions_of
from herdsman.runtime.storage.thread_storage import thread_storage
from herdsman.runtime.streaming.serde import to_jsonable
from herdsman_gateway.auth import current_user
from herdsman_gateway.container import Gateway, get_gateway
from herdsman_gateway.routes.threads import load_thread, refuse_busy
from herdsman_gateway.schemas import (
    CheckpointRef,
    HistoryRequest,
    StateAtCheckpoint,
    StateUpdate,
    StateUpdateResult,
    ThreadState,
)
from herdsman_gateway.state_view import checkpoint_json, read_history, read_state

router = APIRouter(tags=["thread state"])


def _config(
    thread_id: str, checkpoint: CheckpointRef | None = None, checkpoint_id: str | None = None
) -> dict[str, Any]:
    conf: dict[str, Any] = {"thread_id": thread_id}
    cid = checkpoint_id or (checkpoint.checkpoint_id if checkpoint else None)
    if cid:
        conf["checkpoint_id"] = cid
        conf["checkpoint_ns"] = checkpoint.checkpoint_ns if checkpoint else ""
    return {"configurable": conf}


def _no_checkpoint(thread_id: str, checkpoint_id: str) -> HTTPException:
    """The 404 for a checkpoint the thread does not have."""
    return HTTPException(
        404,
        (
            f"Checkpoint {checkpoint_id} not found on thread {thread_id}; list checkpoints with "
            f"POST /threads/{thread_id}/history"
        ),
    )


async def _state(
    gw: Gateway, thread_id: str, checkpoint_id: str | None, subgraphs: bool, ns: str = ""
) -> dict[str, Any]:
    cfg = _config(thread_id, CheckpointRef(checkpoint_ns=ns) if ns else None, checkpoint_id)
    _, state = await read_state(gw.graph, cfg, subgraphs=subgraphs)
    if checkpoint_id and state["metadata"] is None:
        raise _no_checkpoint(thread_id, checkpoint_id)
    return state


@router.get("/threads/{thread_id}/state", response_model=ThreadState, summary="Get the thread's state")
async def get_state(
    thread_id: str,
    subgraphs: bool = False,
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> Any:
    """The latest state of the thread."""
    await load_thread(gw, thread_id, user)
    return await _state(gw, thread_id, None, subgraphs)


@router.get(
    "/threads/{thread_id}/state/{checkpoint_id}", response_model=ThreadState, summary="Get the state at a checkpoint"
)
async def get_state_at(
    thread_id: str,
    checkpoint_id: str,
    subgraphs: bool = False,
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> Any:
    """The state of the thread at ``checkpoint_id``."""
    await load_thread(gw, thread_id, user)
    return await _state(gw, thread_id, checkpoint_id, subgraphs)


@router.post(
    "/threads/{thread_id}/state/checkpoint", response_model=ThreadState, summary="Get the state at a checkpoint"
)
async def post_state_at(
    thread_id: str,
    body: StateAtCheckpoint,
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> Any:
    """The state of the thread at ``checkpoint`` (with its namespace, for subgraphs)."""
    await load_thread(gw, thread_id, user)
    return await _state(gw, thread_id, body.checkpoint.checkpoint_id, body.subgraphs, body.checkpoint.checkpoint_ns)


@router.post("/threads/{thread_id}/state", response_model=StateUpdateResult, summary="Update the thread's state")
async def update_state(
    thread_id: str, body: StateUpdate, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Any:
    """Write ``values`` as if node ``as_node`` returned them (from ``checkpoint`` to branch)."""
    await load_thread(gw, thread_id, user)
    await refuse_busy(gw, thread_id, "updating its state")
    cfg = _config(thread_id, body.checkpoint, body.checkpoint_id)
    updates = body.values if isinstance(body.values, list) else [body.values]
    try:
        for index, values in enumerate(updates):
            field = "values" if len(updates) == 1 else f"values[{index}]"
            check_size(field, values, gw.config.runs.max_input_bytes, thread_id)
            check_update(gw.graph, field, values)
    except InputTooLargeError as exc:
        raise HTTPException(413, f"Request too large: {exc}") from None
    except RunInputError as exc:
        raise HTTPException(422, f"Invalid request: {exc}") from None
    await gw.runs.check_thread_state(
        thread_id
    )  # 413 past the thread's bounds: an update stores the state again, as a run
    cid = cfg["configurable"].get("checkpoint_id")
    if cid and await gw.graph.checkpointer.aget_tuple(cfg) is None:
        raise _no_checkpoint(thread_id, cid)  # LangGraph would branch from an empty state: the conversation gone
    if cid and not cfg["configurable"].get("checkpoint_ns") and (versions := file_versions_of(gw.graph.checkpointer)):
        await versions.arestore(thread_id, cid, user)  # the branch starts from that checkpoint's files
    try:
        new_config = await gw.graph.aupdate_state(cfg, to_jsonable(body.values), as_node=body.as_node)
    except (InvalidUpdateError, ValueError, KeyError, TypeError, NotImplementedError) as exc:
        raise HTTPException(400, f"Cannot update the state of thread {thread_id}: {exc}") from None
    checkpoint = checkpoint_json(new_config)
    return {
        "checkpoint": checkpoint,
        "configurable": checkpoint,
        "checkpoint_id": (checkpoint or {}).get("checkpoint_id"),
    }


@router.get("/threads/{thread_id}/history", response_model=list[ThreadState], summary="List the thread's checkpoints")
async def history_get(
    thread_id: str,
    limit: int = Query(
        1, ge=1, le=1000, description="How many states (newest first); 1 by default, as LangGraph's server."
    ),
    before: str | None = Query(None, description="Only states before this checkpoint id."),
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> Any:
    """Past states of the thread, newest first: ``POST .../history`` with query parameters."""
    return await history(thread_id, HistoryRequest(limit=limit, before=before), gw, user)


@router.post("/threads/{thread_id}/history", response_model=list[ThreadState], summary="List the thread's checkpoints")
async def history(
    thread_id: str, body: HistoryRequest, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Any:
    """Past states of the thread, newest first (``before`` a checkpoint, matching ``metadata``)."""
    await load_thread(gw, thread_id, user)
    before = body.before
    if isinstance(before, str):
        before = CheckpointRef(checkpoint_id=before)
    return await read_history(
        gw.graph,
        _config(thread_id, body.checkpoint),
        filter=body.metadata or None,
        before=_config(thread_id, before) if before and before.checkpoint_id else None,
        limit=body.limit,
    )


@router.get("/threads/{thread_id}/storage", summary="Bytes the thread's checkpoints take")
async def storage(thread_id: str, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)) -> Any:
    """Checkpoints, channel values (per channel) and pending writes of the thread, with their
    serialized sizes (``herdsman.runtime.storage.thread_storage``)."""
    await load_thread(gw, thread_id, user)
    return {"thread_id": thread_id, **await thread_storage(gw.graph.checkpointer, thread_id)}
