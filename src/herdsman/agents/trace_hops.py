"""LangSmith's bookkeeping around each middleware hook runs in place while tracing is off.

LangChain's ``create_agent`` wraps every middleware's ``wrap_model_call`` and
``wrap_tool_call`` in LangSmith's ``traceable``, and for a coroutine ``traceable`` runs its
set-up and its closing in a thread of asyncio's shared default pool, twice per call, whether or
not anything is traced: about 30 round trips to a thread a run (two model calls and one tool
call), each a future, a wake-up of the event loop and a task, measured at several percent of a
run's CPU, on the pool that DESIGN.md keeps user work off. LangSmith offers a documented hook for
this, ``langsmith.set_runtime_overrides(aio_to_thread=...)``: :func:`install` sets one that
runs the (then pure, in-memory) bookkeeping in place when tracing is off, and hands it to
LangSmith's own thread when tracing is on, so traces are as before. An override someone else
installed is kept.

Process-wide by nature (LangSmith keeps one setting); :func:`install` is called when an agent
is built, and calling it again changes nothing.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

import langsmith
from langsmith import utils as langsmith_utils


async def in_place_unless_tracing(
    default: Callable[..., Any], ctx: contextvars.Context, func: Callable[..., Any], /, *args: Any, **kwargs: Any
) -> Any:
    """LangSmith's ``aio_to_thread``: ``func`` in ``ctx`` here when nothing is traced, else on
    LangSmith's thread (``default``)."""
    if langsmith_utils.tracing_is_enabled():
        return await default(ctx, func, *args, **kwargs)
    return ctx.run(func, *args, **kwargs)


def install() -> None:
    """Set :func:`in_place_unless_tracing` as LangSmith's ``aio_to_thread`` unless another is set
    (nothing with a LangSmith too old to have the hook)."""
    try:
        from langsmith._runtime_overrides import get_runtime_overrides  # read only: no public getter
    except ImportError:
        return
    if get_runtime_overrides().aio_to_thread is None:
        langsmith.set_runtime_overrides(aio_to_thread=in_place_unless_tracing)
