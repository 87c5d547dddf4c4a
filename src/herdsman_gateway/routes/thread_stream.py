"""``GET /threads/{thread_id}/stream``: follow every run of a thread, one after another.

As LangGraph's server (``threads.join_stream`` in the SDK): the events of each run of the thread
(``stream_mode`` ``run_modes``, the default), and after each run a ``metadata`` event
``{"status": "run_done", "run_id": ...}``; ``lifecycle`` sends only the runs' first ``metadata``
events and those. The stream stays open, waiting for the thread's next run, until the client
leaves. A run already in progress is followed from its first event. Events carry no ids: the
stream cannot be resumed with ``Last-Event-ID``, join a run's own stream for that. Only runs
of this gateway process are followed (the run manager tells of each new run of the thread).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from functools import partial

from fastapi import APIRouter, Depends, HTTPException, Query, Response

from herdsman.runtime.streaming.stream_bridge import END_EVENT, follow_run
from herdsman_gateway.auth import current_user
from herdsman_gateway.container import Gateway, get_gateway
from herdsman_gateway.routes.threads import load_thread
from herdsman_gateway.sse import HEARTBEAT, EventStream, frame, stream_slot

router = APIRouter(tags=["threads"])

THREAD_STREAM_MODES = ("run_modes", "lifecycle", "state_update")


def _modes(stream_mode: list[str] | None) -> set[str]:
    """The requested thread stream modes (``a,b`` accepted too); 422 for an unknown one."""
    modes = {m.strip() for value in stream_mode or () for m in value.split(",") if m.strip()} or {"run_modes"}
    if unknown := sorted(modes - set(THREAD_STREAM_MODES)):
        raise HTTPException(
            422, f"Invalid request: unknown thread stream mode(s) {unknown}; use some of {list(THREAD_STREAM_MODES)}"
        )
    return modes


def _sent(event: str, data: str, modes: set[str]) -> bool:
    """Whether a run's event goes out in these thread stream modes."""
    if "run_modes" in modes:
        return True
    return "lifecycle" in modes and event == "metadata" and "attempt" in data


async def _thread_frames(gw: Gateway, thread_id: str, modes: set[str]) -> AsyncIterator[bytes]:
    new_runs = gw.runs.watch_thread(thread_id)
    for run in gw.runs.active_runs(thread_id):  # in progress when the client came
        new_runs.put_nowait(run)
    heartbeat = gw.config.gateway.heartbeat_seconds
    try:
        while True:
            try:
                run = await asyncio.wait_for(new_runs.get(), heartbeat)
            except TimeoutError:
                yield HEARTBEAT
                continue
            async for event in follow_run(
                gw.bridge, run.run_id, heartbeat=heartbeat, ended=partial(gw.runs.ended, thread_id, run.run_id)
            ):
                if event is None:
                    yield HEARTBEAT
                elif event.event == END_EVENT:
                    break
                elif _sent(event.event, event.data, modes):
                    yield frame(event.event, event.data)
            if modes & {"run_modes", "lifecycle"}:
                yield frame("metadata", json.dumps({"status": "run_done", "run_id": run.run_id}))
    finally:
        gw.runs.unwatch_thread(thread_id, new_runs)


@router.get(
    "/threads/{thread_id}/stream",
    summary="Follow the thread's runs",
    response_class=Response,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def join_thread_stream(
    thread_id: str,
    stream_mode: list[str] | None = Query(None, description="run_modes (default), lifecycle, state_update."),
    stream_modes: list[str] | None = Query(None, description="The same, under the name LangGraph's server reads."),
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> Response:
    """The events of the thread's runs as they happen, until the client leaves."""
    await load_thread(gw, thread_id, user)
    modes = _modes((stream_mode or []) + (stream_modes or []))
    with stream_slot(gw, user) as slot:
        return EventStream(
            _thread_frames(gw, thread_id, modes),
            {"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
            gw.streams,
            slot,
        )
