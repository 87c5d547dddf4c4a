"""Group commit: calls that arrive while a batch is written go out together, in order, each
caller getting its own result or error."""

from __future__ import annotations

import asyncio

import pytest

from herdsman.runtime.runs.coalesce import Coalescer


class Writes:
    """A writer that records its batches and takes ``delay`` seconds per write."""

    def __init__(self, delay: float = 0.05, fail_item: object = None, fail_all: bool = False) -> None:
        self.batches: list[list[int]] = []
        self.delay, self.fail_item, self.fail_all = delay, fail_item, fail_all

    async def __call__(self, items: list[int]) -> list[object]:
        self.batches.append(list(items))
        await asyncio.sleep(self.delay)
        if self.fail_all:
            raise ConnectionError("the server went away")
        return [ValueError(f"bad {i}") if i == self.fail_item else i * 10 for i in items]


async def test_a_burst_is_written_in_a_few_batches_in_order() -> None:
    writes = Writes()
    coalescer = Coalescer(writes)

    async def call(i: int) -> int:
        await asyncio.sleep(0.001 * i)  # arriving one by one, as a burst of requests does
        return await coalescer(i)

    results = await asyncio.gather(*(call(i) for i in range(50)))
    assert results == [i * 10 for i in range(50)]
    assert [i for batch in writes.batches for i in batch] == list(range(50))
    assert len(writes.batches) <= 3 and writes.batches[0] == [0]  # the first call did not wait for the rest


async def test_a_single_call_is_written_alone_at_once() -> None:
    writes = Writes(delay=0)
    assert await Coalescer(writes)(7) == 70
    assert writes.batches == [[7]]


async def test_batches_stay_within_max_batch() -> None:
    writes = Writes()
    coalescer = Coalescer(writes, max_batch=8)
    assert await asyncio.gather(*(coalescer(i) for i in range(30))) == [i * 10 for i in range(30)]
    assert max(len(b) for b in writes.batches) == 8


async def test_an_item_that_fails_fails_alone() -> None:
    coalescer = Coalescer(Writes(fail_item=3))
    results = await asyncio.gather(*(coalescer(i) for i in range(6)), return_exceptions=True)
    assert [str(r) if isinstance(r, Exception) else r for r in results] == [0, 10, 20, "bad 3", 40, 50]


async def test_a_write_that_fails_fails_its_batch_and_the_next_call_writes_again() -> None:
    writes = Writes(fail_all=True)
    coalescer = Coalescer(writes)
    results = await asyncio.gather(*(coalescer(i) for i in range(4)), return_exceptions=True)
    assert all(isinstance(r, ConnectionError) for r in results)
    writes.fail_all = False
    assert await coalescer(9) == 90


async def test_a_cancelled_caller_does_not_disturb_the_others() -> None:
    coalescer = Coalescer(Writes())
    first = asyncio.create_task(coalescer(1))
    await asyncio.sleep(0)
    later = [asyncio.create_task(coalescer(i)) for i in (2, 3)]
    await asyncio.sleep(0.01)
    later[0].cancel()
    assert await first == 10 and await later[1] == 30
    with pytest.raises(asyncio.CancelledError):
        await later[0]
