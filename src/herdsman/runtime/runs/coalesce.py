"""Group commit: calls made while a batch is being written go out together as the next batch.

A burst of new runs reaches a gateway one request at a time, and each wrote its queue row and
its ``metadata`` event with a round trip of its own (through a pool of a few connections: the
later ones waited in line for the earlier). :class:`Coalescer` writes the first call at once and
gathers every call that arrives meanwhile into one batch for the next write (one multi-row
``INSERT``, one Redis pipeline), so a burst costs a few round trips, and an idle system's single
call is not delayed.

Written here because the batching libraries for asyncio (``aiodataloader`` and the like) batch
the calls of one loop iteration only, and a burst's requests arrive over many iterations.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Coalescer(Generic[T, R]):
    """``await coalescer(item)``: ``item`` written by ``write`` together with the items of the
    calls that arrived while the previous batch was being written; in the order called."""

    def __init__(
        self, write: Callable[[list[T]], Awaitable[Sequence[R | BaseException]]], *, max_batch: int = 200
    ) -> None:
        """``write``: writes a batch, returning one result (or the exception that item failed
        with) per item, in order; an exception it raises fails the whole batch. ``max_batch``:
        the most items in one write."""
        self._write = write
        self._max_batch = max_batch
        self._waiting: list[tuple[T, asyncio.Future[R]]] = []
        self._writer: asyncio.Task[None] | None = None

    async def __call__(self, item: T) -> R:
        """Write ``item`` in the next batch; its result, or the exception writing it raised."""
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._waiting.append((item, future))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._drain(), name="coalescer")
        return await future

    async def _drain(self) -> None:
        while self._waiting:
            batch, self._waiting = self._waiting[: self._max_batch], self._waiting[self._max_batch :]
            try:
                results: Sequence[R | BaseException] = await self._write([item for item, _ in batch])
            except Exception as exc:  # noqa: BLE001 - every caller of the batch gets it
                results = [exc] * len(batch)
            except BaseException as exc:  # cancelled (the process is stopping): so are its callers
                for _, future in batch + self._waiting:
                    future.cancel()
                self._waiting = []
                raise exc
            for (_, future), result in zip(batch, results, strict=True):
                if future.done():  # its caller was cancelled meanwhile
                    continue
                if isinstance(result, BaseException):
                    future.set_exception(result)
                else:
                    future.set_result(result)
