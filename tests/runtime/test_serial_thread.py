"""The serial thread of a SQLite connection (``herdsman.runtime.storage.serial_thread``)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from herdsman.runtime.storage.serial_thread import SerialThread


async def test_calls_run_on_one_thread_in_order_and_return_their_results() -> None:
    worker = SerialThread("test-serial")
    seen: list[tuple[int, str]] = []

    def note(n: int) -> int:
        seen.append((n, threading.current_thread().name))
        return n * n

    try:
        results = await asyncio.gather(*(worker.call(note, n) for n in range(50)))
    finally:
        await worker.aclose()
    assert results == [n * n for n in range(50)]
    assert [n for n, _ in seen] == list(range(50))
    assert {name for _, name in seen} == {"test-serial"}


async def test_an_error_reaches_its_caller_only() -> None:
    worker = SerialThread("test-serial")

    def fail() -> None:
        raise ValueError("no such row")

    try:
        failed, fine = await asyncio.gather(worker.call(fail), worker.call(lambda: "ok"), return_exceptions=True)
    finally:
        await worker.aclose()
    assert isinstance(failed, ValueError) and str(failed) == "no such row"
    assert fine == "ok"


async def test_a_cancelled_caller_leaves_its_call_and_the_next_ones_running() -> None:
    worker = SerialThread("test-serial")
    release = threading.Event()
    done: list[str] = []

    def slow() -> None:
        release.wait(10)
        done.append("slow")

    try:
        waiting = asyncio.create_task(worker.call(slow))
        after = asyncio.create_task(worker.call(lambda: done.append("after") or "after"))
        await asyncio.sleep(0.05)
        waiting.cancel()
        release.set()
        assert await after == "after"
    finally:
        await worker.aclose()
    assert done == ["slow", "after"]
    with pytest.raises(asyncio.CancelledError):
        await waiting


async def test_a_burst_finished_while_the_loop_is_busy_comes_back_in_one_wake_up() -> None:
    """Results finished before the loop gets to them are delivered together (one
    ``call_soon_threadsafe``), not one wake-up per call."""
    worker = SerialThread("test-serial")
    loop = asyncio.get_running_loop()
    wakeups = 0
    plain = loop.call_soon_threadsafe

    def counting(*args, **kwargs):
        nonlocal wakeups
        wakeups += 1
        return plain(*args, **kwargs)

    loop.call_soon_threadsafe = counting  # type: ignore[method-assign]
    try:
        gate, finished = threading.Event(), threading.Event()
        calls = [asyncio.ensure_future(worker.call(gate.wait, 10))]
        calls += [asyncio.ensure_future(worker.call(lambda n=n: n)) for n in range(99)]
        calls.append(asyncio.ensure_future(worker.call(lambda: finished.set() or 99)))
        await asyncio.sleep(0)  # every call handed over
        gate.set()
        assert finished.wait(10)  # the loop is busy (blocked here) while the thread works the queue
        results = await asyncio.gather(*calls)
    finally:
        loop.call_soon_threadsafe = plain  # type: ignore[method-assign]
        await worker.aclose()
    assert results == [True, *range(100)]
    assert wakeups == 1  # not one per call


async def test_a_closed_thread_refuses_new_calls() -> None:
    worker = SerialThread("test-serial")
    await worker.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        await worker.call(lambda: None)
