"""The trace of a thread: ``GET /api/threads/{thread_id}/trace`` (``?run_id=`` for one run).

Answers :class:`~herdsman.runtime.tracing.trace.Trace`: each model call (model, text, tool calls asked
for, tokens) and tool call (arguments, result, status; for bash the command, exit code, stdout and
stderr; the files created or changed; for task and run_plan the steps of each sub-agent, from
the transcripts the executor keeps) in order, grouped by run. Built by the harness from the
thread's checkpoints; a thread the caller may not see is a 404 like everywhere else.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, HTTPException, Query

from herdsman.runtime.tracing.trace import Trace, read_trace
from herdsman.runtime.tracing.transcripts import transcript_loader
from herdsman_gateway.auth import current_user
from herdsman_gateway.container import Gateway, get_gateway
from herdsman_gateway.routes.threads import load_thread

router = APIRouter(prefix="/api/threads/{thread_id}", tags=["trace"])


@router.get(
    "/trace",
    response_model=Trace,
    summary="Get the trace of a thread's runs",
    responses={404: {"description": "No such thread (or not yours), or no such run on it."}},
)
async def get_trace(
    thread_id: str,
    run_id: str | None = Query(None, description="only the steps of this run"),
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> Trace:
    """Every model call and tool call of the thread (or of ``run_id``), in order."""
    await load_thread(gw, thread_id, user)
    trace = await read_trace(gw.graph, thread_id, run_id, transcripts=transcript_loader(gw.config, thread_id))
    if run_id is not None and not trace.steps and await gw.runs.get(thread_id, run_id) is None:
        raise HTTPException(
            404, f"No run {run_id} on thread {thread_id}; list its runs with GET /threads/{thread_id}/runs"
        )
    return trace
