"""Run events from the stream bridge as Server-Sent Events, the way LangGraph servers send them.

``Content-Type: text/event-stream``; ``Content-Location: /threads/{tid}/runs/{rid}`` (the SDK
reads the run id from it); ``Location`` pointing at the join endpoint so the SDK can reconnect
with ``Last-Event-ID``; every event with its id; ``: heartbeat`` comment lines while the run is
quiet (the bridge says when). The bridge's ``end`` marker is not sent: LangGraph's server ends
the response instead, and the SDK would hand an ``end`` event to the client as one more part.

The events the bridge holds when the stream wakes up go out together, in one write (and one TCP
send): on loopback each send costs the kernel's whole receive path too, and one run's model tokens
come several at a time. The chunk that holds the run's end goes out with the end of the body
(a :class:`LastChunk`). :class:`EventStream` writes the frames itself: one task per stream
watches for the client going away (the run goes on unless it was created with
``on_disconnect: cancel``). sse-starlette's response spawns four tasks in an anyio task group
per stream, about a fifth of the gateway's CPU per streamed run; a burst of new runs waits for
all of it before its first events. On shutdown, :class:`OpenStreams` ends every stream when the
server is asked to exit (uvicorn waits for open responses before it stops), using
sse-starlette's hook on uvicorn's exit handler.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import anyio
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from herdsman.logs import get_logger
from herdsman.runtime.streaming.stream_bridge import END_EVENT, StreamEvent, event_batches
from herdsman_gateway.container import Gateway
from herdsman_gateway.open_streams import OpenStreams

log = get_logger(__name__)

MODE_OF_EVENT = {"messages": "messages-tuple"}
ALWAYS_SENT = {"metadata", "error"}
HEARTBEAT = b": heartbeat\n\n"


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


def frame(event: str, data: str, event_id: str | None = None) -> bytes:
    """One SSE frame; each line of ``data`` (JSON text has none) gets its own ``data:`` field."""
    lines = [f"event: {event}"]
    lines += [f"data: {line}" for line in data.split("\n")] if "\n" in data else [f"data: {data}"]
    if event_id is not None:
        lines.append(f"id: {event_id}")
    return ("\n".join(lines) + "\n\n").encode()


class LastChunk(bytes):
    """The last chunk of a stream's frames: sent with the end of the body, in one write."""


class EventStream(Response):
    """An SSE response of ``frames`` (bytes), ended when the client goes away or the server stops."""

    media_type = "text/event-stream"

    def __init__(
        self, frames: AsyncIterator[bytes], headers: dict[str, str], streams: OpenStreams, slot: str | None = None
    ) -> None:
        """``frames``: chunks of SSE frames (a :class:`LastChunk` ends the body with it); ``headers``:
        extra response headers; ``streams``: where this stream registers; ``slot``: what
        :func:`stream_slot` claimed for it, given back when it ends."""
        self.status_code = 200
        self.background = None
        self.init_headers(headers)  # no body attribute: no Content-Length, uvicorn sends it chunked
        self.frames = frames
        self.streams = streams
        self.slot = slot

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Send the frames; stop when they end, the client disconnects, or the server stops."""
        try:
            await self._send_frames(receive, send)
        finally:
            if self.slot is not None:
                self.streams.release(self.slot)

    async def _send_frames(self, receive: Receive, send: Send) -> None:
        me = asyncio.current_task()
        assert me is not None
        gone = done = False

        async def watch() -> None:
            nonlocal gone
            while (await receive())["type"] != "http.disconnect":
                pass
            gone = True
            if not done:
                me.cancel()

        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        if self.streams.closing:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        watcher = asyncio.get_running_loop().create_task(watch())
        self.streams.add(me)
        try:
            last = False
            async for chunk in self.frames:
                if last := isinstance(chunk, LastChunk):  # the last frames and the body's end in one write
                    done = True
                    await send({"type": "http.response.body", "body": bytes(chunk), "more_body": False})
                    break
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            if not last:
                done = True
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except asyncio.CancelledError:
            if not (gone or self.streams.closing):
                raise  # the request itself is being cancelled
            me.uncancel()  # we cancelled ourselves: the client left, or the server is stopping
            if not gone:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            done = True
            self.streams.discard(me)
            watcher.cancel()
            await self.frames.aclose()  # type: ignore[attr-defined]  # runs _frames' cleanup now


async def _frames(
    gw: Gateway,
    thread_id: str,
    run_id: str,
    *,
    last_event_id: str | None,
    modes: set[str] | None,
    cancel_on_disconnect: bool,
    run_ended: bool,
    first: StreamEvent | None,
) -> AsyncIterator[bytes]:
    """The stream's chunks of frames; the one that holds the run's end is a :class:`LastChunk`."""
    if run_ended and not await gw.bridge.exists(run_id):
        return  # the run ended long ago (or before a restart): its events are gone, the stream ends at once
    finished = False
    heartbeat = gw.config.gateway.heartbeat_seconds
    gw.metrics.active_streams.inc()
    try:
        if first is not None:  # sent as published, then the bridge from just after it
            yield frame(first.event, first.data, first.id)
            last_event_id = first.id
        async for batch in event_batches(gw.bridge, run_id, last_event_id=last_event_id, heartbeat=heartbeat):
            if batch is None:  # the run was quiet for ``heartbeat`` seconds
                yield HEARTBEAT
                continue
            # the events ready together go out in one write
            chunk = b"".join(
                frame(e.event, e.data, e.id) for e in batch if e.event != END_EVENT and wanted(e.event, modes)
            )
            if batch[-1].event == END_EVENT:  # nothing comes after the end
                finished = True
                yield LastChunk(chunk)
                return
            if chunk:
                yield chunk
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


@contextmanager
def stream_slot(gw: Gateway, user: str | None) -> Iterator[str]:
    """Claim one of ``user``'s open streams (429 past ``gateway.max_streams_per_user``) for the
    stream a route is about to answer with, before it creates anything; given back at once when
    the route fails, else when the stream ends (pass it to the response)."""
    slot = gw.streams.claim(user)
    try:
        yield slot
    except BaseException:
        gw.streams.release(slot)
        raise


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
    first: StreamEvent | None = None,
    slot: str | None = None,
) -> EventStream:
    """The SSE response following run ``run_id`` from just after ``last_event_id``; ``first``, the
    run's first event as its creator published it, is sent at once (a new run's stream)."""
    path = run_path(thread_id, run_id)
    headers = {"Content-Location": path, "Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    if resumable:
        headers["Location"] = f"{path}/stream"
    frames = _frames(
        gw,
        thread_id,
        run_id,
        last_event_id=last_event_id,
        modes=modes,
        cancel_on_disconnect=cancel_on_disconnect,
        run_ended=run_ended,
        first=first,
    )
    return EventStream(frames, headers, gw.streams, slot)
