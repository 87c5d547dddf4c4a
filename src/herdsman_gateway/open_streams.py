"""The SSE responses in progress, so a stopping server can end them at once, and how many each
user has open (``gateway.max_streams_per_user``: past it a new stream is refused with 429).

uvicorn waits for open responses before it runs the app's shutdown, and a run's stream stays
open as long as the run; so when the server is asked to exit (SIGINT, SIGTERM), the streams are
ended first. sse-starlette (a dependency of the gateway) already hooks uvicorn's exit handler
and raises ``AppStatus.should_exit``; :meth:`OpenStreams.close_on_exit` watches that flag.
"""

from __future__ import annotations

import asyncio
from collections import Counter

from fastapi import HTTPException
from sse_starlette.sse import AppStatus

from herdsman.logs import get_logger

log = get_logger(__name__)

EXIT_POLL_SECONDS = 0.5


class OpenStreams:
    """The SSE responses in progress, so a stopping server can end them at once."""

    def __init__(self, max_per_user: int | None = None) -> None:
        """``max_per_user``: streams one user may have open at once (None: no cap)."""
        self._tasks: set[asyncio.Task] = set()
        self._per_user: Counter[str] = Counter()
        self.max_per_user = max_per_user
        self.closing = False

    def claim(self, user: str | None) -> str:
        """Count a stream about to open for ``user`` (None: auth off, the one local user); 429
        when they have ``max_per_user`` open already. Returns what :meth:`release` takes back
        when the stream ends (or never opened)."""
        key = user or ""
        if self.max_per_user is not None and self._per_user[key] >= self.max_per_user:
            who = f"user {user}" if user else "the local user"
            raise HTTPException(
                429,
                f"{who} has {self._per_user[key]} streams open on this gateway (gateway.max_streams_per_user: "
                f"{self.max_per_user}); close one first, or follow a run without a stream (GET "
                "/threads/{thread_id}/runs/{run_id}/join, or poll GET /threads/{thread_id}/runs/{run_id})",
            )
        self._per_user[key] += 1
        return key

    def release(self, key: str) -> None:
        """A stream counted by :meth:`claim` ended."""
        self._per_user[key] -= 1
        if self._per_user[key] <= 0:
            del self._per_user[key]

    def add(self, task: asyncio.Task) -> None:
        """A stream began (its request task)."""
        self._tasks.add(task)

    def discard(self, task: asyncio.Task) -> None:
        """A stream ended."""
        self._tasks.discard(task)

    def close_all(self) -> None:
        """End every open stream (their runs go on, or are cancelled by the shutdown)."""
        self.closing = True
        for task in list(self._tasks):
            task.cancel()

    async def close_on_exit(self) -> None:
        """Wait until the server is asked to exit (SIGINT/SIGTERM), then end every stream."""
        while not AppStatus.should_exit:
            await asyncio.sleep(EXIT_POLL_SECONDS)
        log.info("closing_streams", streams=len(self._tasks))
        self.close_all()
