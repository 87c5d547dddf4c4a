"""Run a coroutine to completion from synchronous code, even inside a thread whose loop runs.

Tools are async at heart (httpx, MCP sessions); their sync entry points and agent-build-time
loading use :func:`run_sync`, which runs the coroutine on a fresh loop in a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """The result of ``coro``, run on its own event loop in a worker thread."""
    with ThreadPoolExecutor(1, thread_name_prefix="herdsman-sync") as pool:
        return pool.submit(asyncio.run, coro).result()
