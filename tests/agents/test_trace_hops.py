"""LangSmith's bookkeeping around middleware hooks stays on the event loop while nothing is
traced (agents/trace_hops.py): a run hands none of it to asyncio's shared default pool, and the
answer and tool results are what they were."""

from __future__ import annotations

import asyncio
import concurrent.futures
from pathlib import Path

import langsmith
import pytest
from langchain_core.messages import AIMessage

from herdsman.agents import trace_hops
from herdsman.client import HerdsmanClient
from herdsman.models.scripted import ScriptedChatModel
from tests.support import make_config


class CountingPool(concurrent.futures.ThreadPoolExecutor):
    """asyncio's default pool, counting what it is handed."""

    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.handed: list[str] = []

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[override]
        runs = (getattr(fn, "args", None) or [fn])[0]  # LangSmith hands a partial of ctx.run
        runs = getattr(runs, "func", runs)
        self.handed.append(f"{getattr(runs, '__module__', '')}.{getattr(runs, '__qualname__', runs)}")
        return super().submit(fn, *args, **kwargs)


@pytest.fixture
def no_override():
    langsmith.set_runtime_overrides()
    yield
    langsmith.set_runtime_overrides()


async def test_a_run_hands_nothing_to_the_default_pool_while_nothing_is_traced(
    home: Path, monkeypatch, no_override
) -> None:
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGSMITH_TRACING_V2", "LANGCHAIN_TRACING"):
        monkeypatch.delenv(name, raising=False)
    pool = CountingPool()
    asyncio.get_running_loop().set_default_executor(pool)
    ls_call = {"name": "ls", "args": {"path": "/mnt/user-data/workspace"}, "id": "c1", "type": "tool_call"}
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[ls_call]), "the folder is empty"])
    async with HerdsmanClient(make_config(home), model=model) as client:
        pool.handed.clear()  # what opening the client did is not the run's
        result = await client.run("list the workspace", thread_id="t1")
    assert result.answer == "the folder is empty"
    assert [m.type for m in model.calls[1].messages][-2:] == ["ai", "tool"]
    assert not [h for h in pool.handed if h.startswith("langsmith")], pool.handed


async def test_traced_runs_keep_langsmiths_own_thread(no_override, monkeypatch) -> None:
    trace_hops.install()
    seen: list[str] = []

    async def default(ctx, func, /, *args, **kwargs):
        seen.append("default")
        return ctx.run(func, *args, **kwargs)

    monkeypatch.setattr(trace_hops.langsmith_utils, "tracing_is_enabled", lambda *a, **k: True)
    assert await trace_hops.in_place_unless_tracing(default, __import__("contextvars").copy_context(), len, "ab") == 2
    assert seen == ["default"]


def test_an_override_set_by_someone_else_is_kept(no_override) -> None:
    async def theirs(default, ctx, func, /, *args, **kwargs):
        return ctx.run(func, *args, **kwargs)

    langsmith.set_runtime_overrides(aio_to_thread=theirs)
    trace_hops.install()
    from langsmith._runtime_overrides import get_runtime_overrides

    assert get_runtime_overrides().aio_to_thread is theirs
