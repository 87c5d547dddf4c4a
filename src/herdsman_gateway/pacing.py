"""New requests first: running agents step aside while the gateway answers requests.

Runs and HTTP requests share one event loop. asyncio runs ready callbacks first in, first out,
so under load every step of every running agent (milliseconds of CPU each) sits between the
loop iterations that read, route and answer a request; a burst of 100 streamed runs then waits
hundreds of milliseconds for its first events while earlier runs keep stepping.

:class:`RequestsFirst` counts requests that have not yet sent their first body bytes (for a
streamed run: its ``metadata`` event) with a pure ASGI middleware, and gives the run manager a
``pause()`` to await between two steps of a run: it returns at once when no request is waiting,
else when the last one has answered, or after ``max_pause`` seconds at most, so runs are slowed
under a steady stream of requests, never stopped. A request counts for ``max_pause`` at most, so
one that waits on purpose (``runs/wait``, ``join``) does not hold runs back. Written here because neither asyncio nor
uvicorn has priorities.

A burst reaches the app one request at a time: 100 clients that connect together are accepted,
read and answered in turn, and between one answer and the next arrival no request is waiting, so
runs would take their steps in every gap (measured: about a quarter of the burst's CPU). With
``quiet``, a pause also lasts until no request has arrived for that long (within ``max_pause``).
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class RequestsFirst:
    """Tracks requests waiting for their first answer; runs ``await pause()`` between steps."""

    def __init__(self, max_pause: float, quiet: float = 0.0) -> None:
        """``max_pause``: the longest one pause lasts, in seconds (0: never pause); ``quiet``:
        after a request arrived, runs also wait until none has arrived for this long (a burst
        of requests comes in one by one: between two of them nothing is waiting)."""
        self.max_pause = max_pause
        self.quiet = quiet
        self.last_arrival = float("-inf")
        self.waiting = 0
        self._answered = asyncio.Event()
        self._answered.set()

    def started(self) -> None:
        """A request arrived."""
        self.waiting += 1
        self._answered.clear()
        if self.quiet:
            self.last_arrival = asyncio.get_running_loop().time()

    def answered(self) -> None:
        """A request sent its first body bytes (or ended without any)."""
        self.waiting -= 1
        if self.waiting <= 0:
            self.waiting = 0
            self._answered.set()

    async def pause(self) -> None:
        """Wait while requests are waiting for their first answer, and until requests have
        stopped arriving for ``quiet`` seconds; ``max_pause`` at most."""
        if self.max_pause <= 0:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        if not self.waiting and now - self.last_arrival >= self.quiet:
            return
        deadline = now + self.max_pause
        while (left := deadline - now) > 0:
            if self.waiting:
                try:
                    # not asyncio.wait_for: on Python 3.11 it returns instead of raising when the run is
                    # cancelled just as the event is set, and a cancel answered at that moment was lost
                    async with asyncio.timeout(left):
                        await self._answered.wait()
                except TimeoutError:
                    return
            elif (calm_in := self.last_arrival + self.quiet - now) > 0:
                await asyncio.sleep(min(calm_in, left))
            else:
                return
            now = loop.time()


class CountRequests:
    """The ASGI middleware feeding a :class:`RequestsFirst`: ``app.add_middleware(CountRequests, tracker=t)``.

    Pure ASGI: no task per request and no body buffering (unlike ``BaseHTTPMiddleware``).
    """

    def __init__(self, app: ASGIApp, tracker: RequestsFirst) -> None:
        """Wrap ``app``; its HTTP requests are counted by ``tracker``."""
        self.app = app
        self.tracker = tracker

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI app: the request is tracked while it runs."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        tracker = self.tracker
        tracker.started()
        pending = True

        def done() -> None:
            nonlocal pending
            if pending:
                pending = False
                tracker.answered()

        # A request that waits on purpose (runs/wait, join) stops counting after max_pause.
        timer = asyncio.get_running_loop().call_later(tracker.max_pause, done)

        async def first_body(message: Message) -> None:
            if pending and message["type"] == "http.response.body":
                done()
            await send(message)

        try:
            await self.app(scope, receive, first_body)
        finally:
            timer.cancel()
            done()
