"""``multitask_strategy`` and thread delete reach a run a ``herdsman worker`` executes (#15):
two gateways with ``runs.workers: 0`` (they only accept runs and relay streams) and one worker
process on one SQLite home and a real Redis; the run is started through one gateway, and the
second gateway is asked to interrupt it, roll it back, or delete its thread, through the official
``langgraph-sdk`` client.
"""

from __future__ import annotations

import asyncio
from contextlib import ExitStack
from pathlib import Path

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import NotFoundError

from tests.gateway.gateway_support import user_message
from tests.gateway.test_gateway_recovery import gateway_process, settled, stream_until_held, worker_process


async def hold_again(tmp_path: Path, sdk) -> tuple[str, asyncio.Task]:
    """A new thread whose ``steps 3`` run is held in the worker, with a task streaming it."""
    (tmp_path / "hold.held").unlink(missing_ok=True)
    return await stream_until_held(sdk, tmp_path)


async def test_interrupt_rollback_and_delete_through_another_gateway_reach_the_worker(
    tmp_path: Path, redis_url
) -> None:
    shared = {"gateway": {"stream_bridge": "redis", "redis_url": redis_url}}
    accept_only = {**shared, "runs": {"workers": 0}}
    (tmp_path / "hold").touch()
    with ExitStack() as stack:
        first = stack.enter_context(gateway_process(tmp_path, "first", **accept_only))
        second = stack.enter_context(gateway_process(tmp_path, "second", **accept_only))
        stack.enter_context(worker_process(tmp_path, "worker", **shared))
        on_first, on_second = get_client(url=first.url, api_key=None), get_client(url=second.url, api_key=None)
        try:
            # interrupt: the worker stops the run, then executes the new one
            tid, stream = await hold_again(tmp_path, on_first)
            after = await on_second.runs.create(
                tid, "lead_agent", input=user_message("hello"), multitask_strategy="interrupt"
            )
            (tmp_path / "hold").unlink()  # the run is stopped once the new one is accepted; this one must not hold
            values = await on_second.runs.join(tid, after["run_id"])
            assert values["messages"][-1]["content"] == "finished"
            events = await asyncio.wait_for(stream, 60)  # the client of the first gateway saw its run end
            stopped = await on_second.runs.get(tid, events[0].data["run_id"])
            assert stopped["status"] == "interrupted"
            contents = [m["content"] for m in values["messages"]]
            assert contents[0] == "steps 3" and contents[-2:] == ["hello", "finished"]

            # rollback: the worker stops the run and undoes it; the run is forgotten
            (tmp_path / "hold").touch()
            tid, stream = await hold_again(tmp_path, on_first)
            values = await on_second.runs.wait(
                tid, "lead_agent", input=user_message("instead"), multitask_strategy="rollback"
            )
            assert [m["content"] for m in values["messages"]] == ["instead", "finished"]
            events = await asyncio.wait_for(stream, 60)
            with pytest.raises(NotFoundError):
                await on_first.runs.get(tid, events[0].data["run_id"])
            assert [r["status"] for r in await on_first.runs.list(tid)] == ["success"]

            # delete: the worker stops the run before the thread goes, and does not bring it back
            tid, stream = await hold_again(tmp_path, on_first)
            await on_second.threads.delete(tid)
            events = await asyncio.wait_for(stream, 60)
            run_id = events[0].data["run_id"]
            (tmp_path / "hold").unlink()
            ended = asyncio.create_task(settled(on_first, tid, run_id))
            with pytest.raises(NotFoundError):
                await asyncio.wait_for(ended, 60)
            with pytest.raises(NotFoundError):
                await on_first.threads.get(tid)
        finally:
            await on_first.aclose()
            await on_second.aclose()
