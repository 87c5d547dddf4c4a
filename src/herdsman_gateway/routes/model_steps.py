"""How long a model step takes here: ``GET /api/model-steps?model=NAME``.

The median duration (and, for the embedded model, output pace) of the newest model steps of the
caller's most recently updated threads, read from their checkpoints (see
:mod:`herdsman.runtime.tracing.step_times`). The web UI shows it while the model thinks, on the first step
of a new page too.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query

from herdsman.runtime.tracing.step_times import RECENT, StepEstimate, StepSample, estimate, step_samples
from herdsman_gateway.auth import current_user, with_owner
from herdsman_gateway.container import Gateway, get_gateway

router = APIRouter(prefix="/api", tags=["api"])

THREADS_READ = 10
"""Threads read at most (the most recently updated first)."""


async def _messages(gw: Gateway, thread_id: str) -> list[Any]:
    """The messages of the thread's latest checkpoint (none when it cannot be read)."""
    try:
        saved = await gw.graph.checkpointer.aget_tuple({"configurable": {"thread_id": thread_id}})
    except Exception:  # noqa: BLE001 - an unreadable thread adds no sample
        return []
    values = (saved.checkpoint.get("channel_values") or {}) if saved is not None else {}
    messages = values.get("messages")
    return list(messages) if isinstance(messages, list) else []


@router.get("/model-steps", response_model=StepEstimate, summary="How long a model step takes here")
async def model_steps(
    model: str | None = Query(None, description="the model's name in config.yaml; the lead's model if not given"),
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> StepEstimate:
    """The median of the newest model steps of ``model`` in the caller's threads."""
    name = model or gw.config.lead_model_name()
    records = await gw.threads.search(metadata=with_owner(None, user) or None, limit=THREADS_READ, sort_by="updated_at")
    newest: list[StepSample] = []  # newest first
    for record in records:
        samples = [s for s in step_samples(await _messages(gw, record.thread_id)) if s.model == name]
        newest += reversed(samples)
        if len(newest) >= RECENT:
            break
    return estimate(list(reversed(newest)), name)
