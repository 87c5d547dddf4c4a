"""The SSE responses in progress, so a stopping server can end them at once.

uvicorn waits for open responses before it runs the app's shutdown, and a run's stream stays
open as long as the run; so when the server is asked to exit (SIGINT, SIGTERM), the streams are
ended first. sse-starlette (a dependency of the gateway) already hooks uvicorn's exit handler
and raises ``AppStatus.should_exit``; :meth:`OpenStreams.close_on_exit` watches that flag.
"""

from __future__ import annotations

import asyncio

import structlog
from sse_starlette.sse import AppStatus

log = structlog.get_logger(__name__)

EXIT_POLL_SECONDS = 0.5


class OpenStreams:
    """The SSE responses in progress, so a stopping server can end them at once."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task] = set()
        self.closing = False

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
