"""One thread that runs the blocking calls handed to it, one after another, with few wake-ups.

A SQLite connection is used by one thread at a time, so the async checkpointer and record store
each had a thread of their own already (``aiosqlite``), but reached it once per *statement*: a
cursor, an execute, a fetch, a close and a commit were five round trips between the event loop
and the thread, and each round trip costs two wake-ups (measured here: ~50-70 µs of CPU, more
than the statement). :class:`SerialThread` takes whole calls (``saver.put``, ``store.batch``)
instead, one round trip each, and shares the wake-ups of a burst:

- a call handed over while the thread is busy waits in its queue without waking it;
- results go back to their event loop through one ``call_soon_threadsafe`` for everything
  finished before the loop got to them, not one per call.

So a burst of runs writing their checkpoints and records pays a few wake-ups, and a single call
still starts and returns at once. Calls run in the order handed over; a caller that stops waiting
(cancelled) does not stop its call, as with ``run_in_executor``.

Hand-written because ``concurrent.futures`` and ``asyncio.to_thread`` wake the loop once per call,
and aiosqlite once per statement.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any, TypeVar

T = TypeVar("T")

_Outcome = tuple["asyncio.Future[Any]", bool, Any]  # (future, succeeded, result or exception)


class _Mailbox:
    """Outcomes finished on the thread for one event loop, delivered with one wake-up per batch."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._lock = threading.Lock()
        self._outcomes: list[_Outcome] = []

    def post(self, outcome: _Outcome) -> None:
        """Add ``outcome``; wake the loop unless a wake-up is already on its way."""
        with self._lock:
            self._outcomes.append(outcome)
            if len(self._outcomes) > 1:
                return
        try:
            self.loop.call_soon_threadsafe(self._deliver)
        except RuntimeError:  # the loop is closed: nobody is waiting any more
            pass

    def _deliver(self) -> None:
        with self._lock:
            outcomes, self._outcomes = self._outcomes, []
        for future, ok, value in outcomes:
            if future.done():  # its caller was cancelled
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)


class SerialThread:
    """A daemon thread running the calls of :meth:`call` in order (see the module docstring)."""

    def __init__(self, name: str) -> None:
        """Start the thread, named ``name`` (it shows in profiles and thread dumps)."""
        self._queue: SimpleQueue[tuple[_Mailbox, asyncio.Future[Any], Callable[[], Any]] | None] = SimpleQueue()
        self._mailboxes: dict[asyncio.AbstractEventLoop, _Mailbox] = {}
        self._closed = False
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    async def call(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` run on the thread, after the calls handed over before it; its result."""
        if self._closed:
            raise RuntimeError(f"{self._thread.name} is closed")
        loop = asyncio.get_running_loop()
        mailbox = self._mailboxes.get(loop)
        if mailbox is None:
            mailbox = self._mailboxes.setdefault(loop, _Mailbox(loop))
        future: asyncio.Future[T] = loop.create_future()
        self._queue.put((mailbox, future, lambda: fn(*args, **kwargs)))
        return await future

    async def aclose(self) -> None:
        """Let the calls handed over finish, then stop the thread."""
        if self._closed:
            return
        await self.call(lambda: None)
        self._closed = True
        self._queue.put(None)

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            mailbox, future, fn = item
            try:
                outcome: _Outcome = (future, True, fn())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller, whatever it is
                outcome = (future, False, exc)
            mailbox.post(outcome)
