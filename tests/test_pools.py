"""The thread pools per kind of work and the per-user slots in them (``herdsman.pools``)."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from herdsman import pools
from herdsman.config.schema import PoolsConfig


@pytest.fixture
def small_pools():
    """Pools of 4 threads each, 2 slots per user; the defaults again afterwards."""
    pools.configure(
        PoolsConfig(
            commands=4,
            files=4,
            conversions=4,
            captures=4,
            commands_per_user=2,
            files_per_user=2,
            conversions_per_user=2,
            captures_per_user=2,
        )
    )
    yield
    pools.configure(PoolsConfig())


async def test_one_user_holds_at_most_its_slots_and_another_user_still_runs(small_pools) -> None:
    release = threading.Event()
    running: list[str] = []
    lock = threading.Lock()

    def held(who: str) -> str:
        with lock:
            running.append(threading.current_thread().name)
        release.wait(10)
        return who

    hers = [asyncio.create_task(pools.run(pools.COMMANDS, "ana", held, "ana")) for _ in range(5)]
    for _ in range(200):
        if len(running) == 2:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)  # a third of ana's would have started by now
    assert len(running) == 2 and pools.busy(pools.COMMANDS, "ana") == 5
    assert all(name.startswith("herdsman-commands") for name in running)
    # bo's call runs at once, while ana's five are held or waiting
    bos = await pools.run(pools.COMMANDS, "bo", lambda: threading.current_thread().name)
    assert bos.startswith("herdsman-commands")
    assert not any(t.done() for t in hers)
    release.set()
    assert await asyncio.gather(*hers) == ["ana"] * 5
    assert pools.busy(pools.COMMANDS, "ana") == 0  # the slot table is empty again


async def test_a_cancelled_caller_keeps_its_slot_until_the_thread_is_done(small_pools) -> None:
    release = threading.Event()
    first = asyncio.create_task(pools.run(pools.FILES, None, release.wait, 10))
    second = asyncio.create_task(pools.run(pools.FILES, None, release.wait, 10))
    await asyncio.sleep(0.05)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    third = asyncio.create_task(pools.run(pools.FILES, None, lambda: "third"))
    await asyncio.sleep(0.05)
    assert not third.done()  # the cancelled call's thread still works: its slot is not free
    release.set()
    assert await third == "third" and await second is True


async def test_a_call_gives_its_error_and_context_and_one_cancelled_before_it_began_never_runs() -> None:
    """A call's exception reaches its caller, its context variables go with it, and a call whose
    caller stopped waiting before a thread took it is not run (as ``run_in_executor``'s)."""
    pools.configure(PoolsConfig(files=1, files_per_user=1))
    try:
        who = contextvars.ContextVar("who")
        who.set("ana")
        assert await pools.run(pools.FILES, None, who.get) == "ana"
        with pytest.raises(ZeroDivisionError):
            await pools.run(pools.FILES, None, lambda: 1 / 0)

        release, ran = threading.Event(), []
        busy = asyncio.create_task(pools.run(pools.FILES, "bo", release.wait, 10))  # holds the pool's one thread
        await asyncio.sleep(0.05)
        queued = asyncio.create_task(pools.run(pools.FILES, "cy", ran.append, "queued"))
        await asyncio.sleep(0.05)  # handed to the pool, behind bo's
        queued.cancel()
        with pytest.raises(asyncio.CancelledError):
            await queued
        release.set()
        assert await busy is True
        assert await pools.run(pools.FILES, "cy", lambda: "after") == "after"
        assert ran == [] and pools.busy(pools.FILES, "cy") == 0
    finally:
        pools.configure(PoolsConfig())


async def test_the_default_pool_is_sized_and_named() -> None:
    pools.install_default()
    name = await asyncio.to_thread(lambda: threading.current_thread().name)
    assert name.startswith("herdsman-default")


def test_a_user_cap_above_its_pool_is_refused() -> None:
    with pytest.raises(ValueError, match="pools.commands_per_user"):
        PoolsConfig(commands=2, commands_per_user=3)
