"""Red team: the per-user checkpoint and thread bounds, reached through routes that are not runs.

Issue #30 follow-up. ``runs.max_thread_state_bytes`` and ``runs.max_thread_checkpoint_bytes``
were read only when a run was created, so ``POST /threads/{id}/state`` (each update under
``runs.max_input_bytes``, each checkpoint storing the thread's whole message list again) grew
one thread's checkpoints without end: 30 updates of 600 KiB made about 270 MB of SQLite under
a 1 MiB state bound. A thread's metadata had no bound at all: ``PATCH /threads/{id}`` merges,
so 1 MiB patches with new keys piled up in the thread's record (and every listing returned
it). Now both answer 413 naming the bound.
"""

from __future__ import annotations

import httpx
import pytest
from langgraph_sdk import get_client

from herdsman.runtime.storage.checkpointer import sqlite_path
from tests.gateway.gateway_support import running_gateway
from tests.support import make_config

MB = 1024 * 1024


def _sqlite_bytes(config) -> int:
    path = sqlite_path(config)
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


async def _until_refused(call, times: int) -> tuple[int, httpx.Response | None]:
    """``call(index)`` for index 0, 1... until the gateway refuses one: its index and answer."""
    for index in range(times):
        try:
            await call(index)
        except httpx.HTTPStatusError as exc:
            return index, exc.response
    return times, None


@pytest.mark.parametrize("bound", [{"max_thread_state_bytes": MB}, {"max_thread_checkpoint_bytes": 4 * MB}])
async def test_state_updates_piling_up_on_one_thread_are_bounded(home, bound: dict[str, int]) -> None:
    """600 KiB state updates, each under the input bound, are refused with 413 naming the
    thread bound once the thread is over it; the SQLite file stops growing."""
    key = next(iter(bound))
    config = make_config(home, checkpointer={"type": "sqlite"}, runs={"max_input_bytes": 700 * 1024, **bound})
    with running_gateway(config) as gw:
        client = get_client(url=gw.url, api_key=None)
        tid = (await client.threads.create())["thread_id"]
        index, refused = await _until_refused(
            lambda i: client.threads.update_state(
                tid, {"messages": [{"type": "human", "content": f"{i}" + "y" * (600 * 1024)}]}
            ),
            30,
        )
        assert refused is not None and refused.status_code == 413, f"{index} updates taken"
        detail = refused.json()["detail"]
        assert f"runs.{key}" in detail and "start a new thread" in detail, detail
        assert _sqlite_bytes(config) < 24 * MB
        await client.aclose()


async def test_thread_metadata_is_bounded(home) -> None:
    """Thread metadata over ``runs.max_input_bytes`` is refused (413) on create and on a patch,
    including patches that each fit but pile up (metadata is merged)."""
    config = make_config(home, runs={"max_input_bytes": 256 * 1024})
    with running_gateway(config) as gw:
        client = get_client(url=gw.url, api_key=None)
        with pytest.raises(httpx.HTTPStatusError) as info:
            await client.threads.create(metadata={"big": "x" * (512 * 1024)})
        assert info.value.response.status_code == 413
        assert "runs.max_input_bytes" in info.value.response.json()["detail"]
        tid = (await client.threads.create(metadata={"a": 1}))["thread_id"]
        index, refused = await _until_refused(
            lambda i: client.threads.update(tid, metadata={f"k{i}": "x" * (100 * 1024)}), 20
        )
        assert refused is not None and refused.status_code == 413, f"{index} patches taken"
        assert "runs.max_input_bytes" in refused.json()["detail"]
        kept = (await client.threads.get(tid))["metadata"]
        assert len(str(kept)) < 256 * 1024 and kept["a"] == 1
        await client.aclose()


@pytest.mark.parametrize("field", ["metadata", "config", "context"])
async def test_run_metadata_config_and_context_are_bounded(home, field: str) -> None:
    """A run's metadata, config and context are stored in the run and in every checkpoint the run
    writes (0.9 MB in metadata and 0.9 MB in config made 10 MB of SQLite per run, checked only
    against the 32 MiB body limit): over ``runs.max_input_bytes`` each is refused with 413 before
    anything is stored."""
    config = make_config(home, checkpointer={"type": "sqlite"}, runs={"max_input_bytes": 256 * 1024})
    blob = "z" * (512 * 1024)
    sent = {
        "metadata": {"metadata": {"blob": blob}},
        "config": {"config": {"configurable": {"blob": blob}}},
        "context": {"context": {"blob": blob}},
    }[field]
    with running_gateway(config) as gw:
        client = get_client(url=gw.url, api_key=None)
        tid = (await client.threads.create())["thread_id"]
        before = _sqlite_bytes(config)
        with pytest.raises(httpx.HTTPStatusError) as info:
            await client.runs.wait(tid, "lead_agent", input={"messages": [{"role": "user", "content": "hi"}]}, **sent)
        assert info.value.response.status_code == 413
        detail = info.value.response.json()["detail"]
        assert field in detail and "runs.max_input_bytes" in detail, detail
        assert await client.runs.list(tid) == []
        assert _sqlite_bytes(config) - before < MB
        await client.aclose()


async def test_a_crons_run_metadata_is_bounded(home) -> None:
    """A cron keeps its run's metadata and every firing's run stores it in each checkpoint: over
    ``runs.max_input_bytes`` the cron is refused (413) when it is created, not at each firing."""
    config = make_config(home, runs={"max_input_bytes": 256 * 1024})
    with running_gateway(config) as gw:
        client = get_client(url=gw.url, api_key=None)
        tid = (await client.threads.create())["thread_id"]
        with pytest.raises(httpx.HTTPStatusError) as info:
            await client.crons.create_for_thread(
                tid,
                "lead_agent",
                schedule="0 9 * * *",
                input={"messages": [{"role": "user", "content": "hi"}]},
                metadata={"blob": "z" * (512 * 1024)},
            )
        assert info.value.response.status_code == 413
        assert "runs.max_input_bytes" in info.value.response.json()["detail"]
        assert await client.crons.search() == []
        await client.aclose()


async def test_assistant_versions_and_count_are_bounded(home) -> None:
    """An assistant's metadata is merged into each new version, so patches of 40 KiB of new keys
    each (under the 64 KiB bound of one body) piled up in every later version; each patch also
    reads every version, and versions and assistants had no number bound. Now the merged
    metadata is held to the bound (422), an assistant keeps at most 100 versions (429), and a
    user at ``gateway.max_assistants_per_user`` gets 429 on create."""
    config = make_config(home, gateway={"max_assistants_per_user": 3})
    with running_gateway(config) as gw:
        client = get_client(url=gw.url, api_key=None)
        first = (await client.assistants.create("lead_agent", name="a"))["assistant_id"]
        index, refused = await _until_refused(
            lambda i: client.assistants.update(first, metadata={f"k{i}": "x" * (40 * 1024)}), 10
        )
        assert refused is not None and refused.status_code == 422, f"{index} patches taken"
        assert "metadata" in refused.json()["detail"]
        second = (await client.assistants.create("lead_agent", name="b"))["assistant_id"]
        with pytest.raises(httpx.HTTPStatusError) as info:
            for index in range(120):
                await client.assistants.update(second, name=f"b{index}")
        assert info.value.response.status_code == 429 and "100 versions" in info.value.response.json()["detail"]
        await client.assistants.create("lead_agent", name="c")
        with pytest.raises(httpx.HTTPStatusError) as info:
            await client.assistants.create("lead_agent", name="d")
        assert info.value.response.status_code == 429
        assert "gateway.max_assistants_per_user" in info.value.response.json()["detail"]
        await client.assistants.delete(second)
        await client.assistants.create("lead_agent", name="d")
        await client.aclose()
