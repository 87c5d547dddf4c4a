"""The file versions of a thread (``sandbox.snapshots``): list them, compare two, restore one.

- ``GET /api/threads/{id}/snapshots``: its checkpoints with a version, newest first, each with
  the files changed since the version before;
- ``GET /api/threads/{id}/snapshots/diff?from=CP&to=CP``: files added, removed and changed
  between two checkpoints;
- ``POST /api/threads/{id}/snapshots/{checkpoint_id}/restore``: put that checkpoint's files back
  (the conversation stays as it is; the next checkpoint records the restored files). Refused
  while a run is in progress.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Query

from herdsman import pools
from herdsman.runtime.storage.file_versions import FileVersions, file_versions_of
from herdsman.sandbox.history import HistoryError
from herdsman_gateway.auth import current_user
from herdsman_gateway.container import Gateway, get_gateway
from herdsman_gateway.routes.threads import load_thread, refuse_busy

router = APIRouter(prefix="/api/threads/{thread_id}/snapshots", tags=["artifacts"])


def _versions(gw: Gateway) -> FileVersions:
    versions = file_versions_of(gw.graph.checkpointer)
    if versions is None:
        raise HTTPException(404, "file versions are off: set sandbox.snapshots.enabled: true in config.yaml")
    return versions


@router.get("", summary="List the file versions of a thread's checkpoints")
async def list_snapshots(
    thread_id: str,
    limit: int = Query(50, ge=1, le=500),
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> dict[str, Any]:
    """Checkpoints with a file version, newest first, with the files each changed."""
    await load_thread(gw, thread_id, user)
    steps = await pools.run(pools.FILES, user, _versions(gw).steps, thread_id, limit)
    return {"thread_id": thread_id, "snapshots": steps}


@router.get("/diff", summary="Compare the files of two checkpoints")
async def diff_snapshots(
    thread_id: str,
    old: str | None = Query(
        None, alias="from", description="the earlier checkpoint id (default: the step before `to`)"
    ),
    new: str | None = Query(None, alias="to", description="the later checkpoint id (default: the newest)"),
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> dict[str, Any]:
    """Files added, removed and changed from checkpoint ``from`` to checkpoint ``to``."""
    await load_thread(gw, thread_id, user)
    if old is None or new is None:
        kept = await pools.run(pools.FILES, user, _versions(gw).kept_checkpoints, thread_id)
        new = new or (kept[0] if kept else None)
        before = kept[kept.index(new) + 1 :] if new in kept else []
        if new is None or (old is None and not before):
            raise HTTPException(
                404, f"thread {thread_id} has no two file versions to compare; give from= and to= checkpoint ids"
            )
        old = old or before[0]
    try:
        changes = await pools.run(pools.FILES, user, _versions(gw).diff, thread_id, old, new)
    except HistoryError as exc:
        raise HTTPException(404, str(exc)) from None
    return {"from": old, "to": new, **changes}


@router.post("/{checkpoint_id}/restore", summary="Put a checkpoint's files back")
async def restore_snapshot(
    thread_id: str, checkpoint_id: str, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> dict[str, Any]:
    """Make the thread's files those of ``checkpoint_id`` (the conversation is not changed)."""
    await load_thread(gw, thread_id, user)
    await refuse_busy(gw, thread_id, "restoring files")
    try:
        report = await pools.run(pools.FILES, user, _versions(gw).restore_strict, thread_id, checkpoint_id)
    except HistoryError as exc:
        raise HTTPException(404, str(exc)) from None
    return {"checkpoint_id": checkpoint_id, "written": report.written, "removed": report.removed}
