"""Stop one sub-agent: ``POST /api/threads/{id}/tasks/{task_id}/cancel``.

A run goes on when one of its sub-agents is stopped: the sub-agent ends as ``cancelled`` (its
card says so through the ``task_cancelled`` event), the lead gets that as the task's result, and
the siblings finish. The sub-agent is found through the run the gateway is executing on the
thread: the run manager's ``Run`` holds that run's scope (its running sub-agents), so a task id
of another thread, or of an earlier run, is never touched. The sub-agent must run in this gateway
process (the scope lives with the process that executes the run); one that has finished, or is
unknown, answers 404.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException

from herdsman_gateway.auth import current_user
from herdsman_gateway.container import Gateway, get_gateway
from herdsman_gateway.routes.threads import load_thread

router = APIRouter(prefix="/api/threads/{thread_id}/tasks", tags=["runs"])


@router.post("/{task_id}/cancel", summary="Stop one sub-agent of the thread's run")
async def cancel_subagent(
    thread_id: str, task_id: str, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> dict[str, Any]:
    """Stop the running sub-agent ``task_id`` (the id of the task call that started it); the
    run and the other sub-agents go on."""
    await load_thread(gw, thread_id, user)
    if not gw.runs.stop_subagent(thread_id, task_id):
        raise HTTPException(
            404,
            f"no sub-agent {task_id} is running on thread {thread_id} (it may have finished); "
            f"see the thread's state with GET /threads/{thread_id}/state",
        )
    return {"thread_id": thread_id, "task_id": task_id, "status": "cancelling"}
