"""Run events from the stream bridge as Server-Sent Events, the way LangGraph servers send them.

``Content-Type: text/event-stream``; ``Content-Location: /threads/{tid}/runs/{rid}`` (the SDK
reads the run id from it); ``Location`` pointing at the join endpoint so the SDK can reconnect
with ``Last-Event-ID``; every event with its id; ``: heartbeat`` comment lines while the run is
quiet (the bridge says when: no ping task per stream). sse-starlette writes the frames and notices a client that went away: the run goes on
unless it was created with ``on_disconnect: cancel``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import structlog
from sse_starlette import EventSourceResponse, ServerSentEvent

from herdsman.runtime.stream_bridge import END_EVENT
from herdsman_gateway.context import Gateway

log = structlog.get_logger(__name__)

MODE_OF_EVENT = {"messages": "messages-tuple"}
ALWAYS_SENT = {"metadata", "error", END_EVENT}
HEARTBEAT = ServerSentEvent(comment="heartbeat", sep="\n")


def run_path(thread_id: str, run_id: str) -> str:
    """The run's path, relative to the API root (the SDK resolves it against its base URL)."""
    return f"/threads/{thread_id}/runs/{run_id}"


def wanted(event: str, modes: set[str] | None) -> bool:
    """Whether an event passes the stream-mode filter of a join (None: everything)."""
    if modes is None:
        return True
    base = event.split("|", 1)[0]
    if base in ALWAYS_SENT:
        return True
    if base.startswith("messages/"):
        return "messages" in modes
    return MODE_OF_EVENT.get(base, base) in modes


async def _frames(
    gw: Gateway,
    thread_id: str,
    run_id: str,
    *,
    last_event_id: str | None,
    modes: set[str] | None,
    cancel_on_disconnect: bool,
    run_ended: bool,
) -> AsyncIterator[ServerSentEvent]:
    if run_ended and not await gw.bridge.exists(run_id):
        # The run ended long ago (or before a restart): its events are gone, say it ended.
        yield ServerSentEvent(data="null", event=END_EVENT, sep="\n")
        return
    finished = False
    heartbeat = gw.config.gateway.heartbeat_seconds
    gw.metrics.active_streams.inc()
    try:
        async for event in gw.bridge.subscribe(run_id, last_event_id=last_event_id, heartbeat=heartbeat):
            if event is None:  # the run was quiet for ``heartbeat`` seconds
                yield HEARTBEAT
            elif wanted(event.event, modes):
                yield ServerSentEvent(data=event.data, event=event.event, id=event.id, sep="\n")
        finished = True
    finally:
        gw.metrics.active_streams.dec()
        if not finished and cancel_on_disconnect:
            log.info("client_disconnected_cancelling", run_id=run_id, thread_id=thread_id)
            with anyio.CancelScope(shield=True):  # this request is being cancelled; the cancel must still run
                try:
                    await gw.runs.cancel(thread_id, run_id)
                except Exception:  # noqa: BLE001 - the run may be gone already
                    pass


def stream_response(
    gw: Gateway,
    thread_id: str,
    run_id: str,
    *,
    last_event_id: str | None = None,
    modes: set[str] | None = None,
    cancel_on_disconnect: bool = False,
    resumable: bool = True,
    run_ended: bool = False,
) -> EventSourceResponse:
    """The SSE response following run ``run_id`` from just after ``last_event_id``."""
    path = run_path(thread_id, run_id)
    headers = {"Content-Location": path, "Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    if resumable:
        headers["Location"] = f"{path}/stream"
    return EventSourceResponse(
        _frames(gw, thread_id, run_id, last_event_id=last_event_id, modes=modes, cancel_on_disconnect=cancel_on_disconnect,
               run_ended=run_ended),
        headers=headers,
        ping=0,  # heartbeats come from the bridge when the run is quiet: one task less per stream
        sep="\n",
    )
