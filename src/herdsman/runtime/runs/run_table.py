"""The runs one process knows in memory: by id and by thread, the finished ones kept for a while,
and who watches a thread for its new runs.

One job: the bookkeeping every part of the run manager reads (which runs of a thread are in
progress here, which run an id names); no part writes these dicts but through this class.
"""

from __future__ import annotations

import asyncio
from collections import deque

from herdsman.runtime.runs.run_types import KEEP_FINISHED, Run


class RunTable:
    """The runs of this process: live ones, and the latest ``KEEP_FINISHED`` finished ones."""

    def __init__(self) -> None:
        self.runs: dict[str, Run] = {}
        self.by_thread: dict[str, list[Run]] = {}  # the runs of ``runs``, by thread (oldest first)
        self.watchers: dict[str, set[asyncio.Queue[Run]]] = {}  # per thread: who hears of its new runs
        self._finished: deque[str] = deque()

    def get(self, run_id: str) -> Run | None:
        """The run ``run_id`` if this process knows it."""
        return self.runs.get(run_id)

    def add(self, run: Run) -> None:
        """Know ``run`` (from here on its thread is busy in this process while it is in progress)."""
        self.runs[run.run_id] = run
        self.by_thread.setdefault(run.thread_id, []).append(run)

    def active(self, thread_id: str) -> list[Run]:
        """The thread's pending and running runs in this process, oldest first."""
        return [r for r in self.by_thread.get(thread_id, ()) if r.status in ("pending", "running")]

    def in_progress(self) -> int:
        """How many runs of this process are pending or running."""
        return sum(1 for r in self.runs.values() if r.status in ("pending", "running"))

    def forget(self, run_id: str) -> None:
        """Drop a run from memory (its record stays in the store)."""
        run = self.runs.pop(run_id, None)
        if run is None:
            return
        siblings = self.by_thread.get(run.thread_id, [])
        if run in siblings:
            siblings.remove(run)
        if not siblings:
            self.by_thread.pop(run.thread_id, None)

    def finished(self, run: Run) -> None:
        """``run`` ended: keep it among the latest finished runs, forgetting the oldest beyond them."""
        self._finished.append(run.run_id)
        while len(self._finished) > KEEP_FINISHED:
            self.forget(self._finished.popleft())

    def watch(self, thread_id: str) -> asyncio.Queue[Run]:
        """A queue that receives each run created on ``thread_id`` from now on."""
        queue: asyncio.Queue[Run] = asyncio.Queue()
        self.watchers.setdefault(thread_id, set()).add(queue)
        return queue

    def unwatch(self, thread_id: str, queue: asyncio.Queue[Run]) -> None:
        """Stop sending the thread's new runs to ``queue``."""
        watchers = self.watchers.get(thread_id, set())
        watchers.discard(queue)
        if not watchers:
            self.watchers.pop(thread_id, None)

    def tell_watchers(self, run: Run) -> None:
        """Hand a new run of the thread (executed here or queued for a worker) to its watchers."""
        for queue in self.watchers.get(run.thread_id, ()):
            queue.put_nowait(run)
