"""Checkpoint storage and thread count are bounded per user (official SDK client, SQLite).

Every checkpoint stores the thread's whole state again, so three runs each sending a 20 MB
message made about 1 GB of SQLite (the model's reply and every later step copy them). Found
in issue #30: nothing bounded a run's input, a thread's state, or a user's thread count.
Now a run input over ``runs.max_input_bytes`` gets 413 saying to upload it as a file, a run on a
thread whose newest checkpoint is over ``runs.max_thread_state_bytes`` gets 413 saying to start
a new thread, and a user at ``gateway.max_threads_per_user`` gets 429 on ``POST /threads``.
"""

from __future__ import annotations

import httpx
import pytest
from langgraph_sdk import get_client

from herdsman.runtime.storage.checkpointer import sqlite_path
from tests.gateway.gateway_support import HeldModel, running_gateway, scripted_model, user_message
from tests.support import make_config

MB = 1024 * 1024


def _sqlite_bytes(config) -> int:
    path = sqlite_path(config)
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))  # the file, its -wal and -shm


async def _pile_up(client, thread_id: str, runs: int) -> tuple[int, httpx.Response | None]:
    """Runs of a 600 KiB message each on the thread until one is refused: its index and answer."""
    for index in range(runs):
        try:
            await client.runs.wait(thread_id, "lead_agent", input=user_message(f"{index}" + "y" * (600 * 1024)))
        except httpx.HTTPStatusError as exc:
            return index, exc.response
    return runs, None


async def test_three_twenty_megabyte_messages_do_not_bloat_sqlite(home) -> None:
    """3 x 20 MB messages: each is refused with 413 naming the limit and the upload route, nothing
    of them is stored, and the thread still takes a normal run."""
    config = make_config(home, checkpointer={"type": "sqlite"}, gateway={"max_request_bytes": 64 * MB})
    model = scripted_model()
    with running_gateway(config, model=model) as gw:
        try:
            client = get_client(url=gw.url, api_key=None)
            tid = (await client.threads.create())["thread_id"]
            before = _sqlite_bytes(config)
            for index in range(3):
                with pytest.raises(httpx.HTTPStatusError) as info:
                    await client.runs.wait(tid, "lead_agent", input=user_message(f"{index}" + "x" * (20 * MB)))
                assert info.value.response.status_code == 413
                detail = info.value.response.json()["detail"]
                assert "runs.max_input_bytes" in detail and f"/api/threads/{tid}/uploads" in detail, detail
            assert await client.runs.list(tid) == []
            assert _sqlite_bytes(config) - before < 5 * MB
            values = await client.runs.wait(tid, "lead_agent", input=user_message("small"))
            assert values["messages"][-1]["content"] == "echo: small"
            await client.aclose()
        finally:
            model.release()


@pytest.mark.parametrize(
    ("kind", "bound"),
    [("sqlite", {"max_thread_state_bytes": MB}), ("sqlite", {"max_thread_checkpoint_bytes": 8 * MB}),
     ("memory", {"max_thread_checkpoint_bytes": 8 * MB})],
)  # fmt: skip
async def test_inputs_piling_up_on_one_thread_are_bounded(home, kind: str, bound: dict[str, int]) -> None:
    """Inputs under the input bound that pile up on one thread (seventeen 1 MB messages made
    1.48 GB of SQLite under a 32 MiB state bound alone, each checkpoint holding the messages
    again): once the thread's newest checkpoint is over ``runs.max_thread_state_bytes``, or its
    checkpoints over ``runs.max_thread_checkpoint_bytes``, a new run gets 413 naming the bound and
    saying to start a new thread, the SQLite file stops growing, and a new thread works."""
    key = next(iter(bound))
    config = make_config(home, checkpointer={"type": kind}, runs={"max_input_bytes": 700 * 1024, **bound})
    model = HeldModel(respond=lambda messages: "ok")
    with running_gateway(config, model=model) as gw:
        try:
            client = get_client(url=gw.url, api_key=None)
            tid = (await client.threads.create())["thread_id"]
            index, refused = await _pile_up(client, tid, runs=30)
            assert refused is not None and refused.status_code == 413, index
            detail = refused.json()["detail"]
            assert f"runs.{key}" in detail and "start a new thread" in detail, detail
            if key == "max_thread_state_bytes":
                assert index == 2  # two runs of 600 KiB each made 1.2 MB of state
            if kind == "sqlite":
                size = _sqlite_bytes(config)
                assert size < 24 * MB  # the bound, plus the run that crossed it
                with pytest.raises(httpx.HTTPStatusError):
                    await client.runs.wait(tid, "lead_agent", input=user_message("more"))
                assert _sqlite_bytes(config) <= size + MB
            other = (await client.threads.create())["thread_id"]
            assert (await client.runs.wait(other, "lead_agent", input=user_message("hi")))["messages"][-1][
                "content"
            ] == "ok"
            await client.aclose()
        finally:
            model.release()


async def test_thread_count_per_user_is_bounded(home) -> None:
    """Past ``gateway.max_threads_per_user`` a new thread gets 429 saying to delete threads, by
    POST /threads, by a run that creates its thread, and by a copy; deleting one makes room."""
    config = make_config(home, gateway={"max_threads_per_user": 3})
    with running_gateway(config) as gw:
        client = get_client(url=gw.url, api_key=None)
        ids = [(await client.threads.create())["thread_id"] for _ in range(3)]
        attempts = (
            lambda: client.threads.create(),
            lambda: client.runs.create(
                "fresh-thread-id", "lead_agent", input=user_message("x"), if_not_exists="create"
            ),
            lambda: client.threads.copy(ids[0]),
        )
        for attempt in attempts:
            with pytest.raises(httpx.HTTPStatusError) as info:
                await attempt()
            assert info.value.response.status_code == 429
            detail = info.value.response.json()["detail"]
            assert "gateway.max_threads_per_user" in detail and "delete" in detail, detail
        assert len(await client.threads.search(limit=100)) == 3
        assert (await client.threads.create(thread_id=ids[0], if_exists="do_nothing"))["thread_id"] == ids[0]
        await client.threads.delete(ids[1])
        await client.threads.create()
        await client.aclose()
