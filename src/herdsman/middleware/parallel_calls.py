"""At most ``tools.max_parallel_calls`` tool calls of one model reply execute at once.

A model may answer with many tool calls in one reply (the lead once asked for eight ``bash``
calls), and LangGraph starts each as its own task at once. One turn of one user then held as many
threads as the reply had calls. Here the calls of one reply share a semaphore: the first
``max_parallel_calls`` go, each later one starts when one ends, and every call still runs and
answers in the reply's order. The semaphore is keyed by the reply (the ids of its calls), made by
its first call and dropped with its last, so the calls of a sub-agent (a reply of its own) never
wait for the ``task`` call that started it. ``task`` calls themselves are left out: they hold no
thread, and ``subagents.max_concurrent`` already bounds how many sub-agents run at once. The sync
path bounds the same way with a thread semaphore.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ToolCallRequest
from langchain_core.messages import AIMessage


def reply_key(request: ToolCallRequest) -> tuple[str, ...]:
    """The ids of the calls of the reply ``request``'s call belongs to (its own id alone when the
    reply is not in the state)."""
    call_id = str(request.tool_call.get("id") or id(request))
    messages = (request.state or {}).get("messages", []) if isinstance(request.state, dict) else []
    for message in reversed(messages):
        if isinstance(message, AIMessage) and any(c.get("id") == call_id for c in message.tool_calls):
            return tuple(str(c.get("id")) for c in message.tool_calls)
    return (call_id,)


class _Gates:
    """Semaphores by reply, each dropped when no call of its reply holds or awaits it."""

    def __init__(self, limit: int, make: Callable[[int], Any]) -> None:
        self.limit, self.make = limit, make
        self.lock = threading.Lock()
        self.gates: dict[tuple[str, ...], list[Any]] = {}  # key -> [semaphore, users]

    def enter(self, key: tuple[str, ...]) -> Any:
        with self.lock:
            entry = self.gates.setdefault(key, [self.make(self.limit), 0])
            entry[1] += 1
            return entry[0]

    def leave(self, key: tuple[str, ...]) -> None:
        with self.lock:
            entry = self.gates[key]
            entry[1] -= 1
            if entry[1] == 0:
                del self.gates[key]


class ParallelCallsMiddleware(AgentMiddleware):
    """Run at most ``limit`` tool calls of one model reply at once; the rest of the reply waits."""

    def __init__(self, limit: int, unbounded: tuple[str, ...] = ("task",)) -> None:
        """``limit`` calls of one reply at once; calls of the tools named in ``unbounded`` are not counted."""
        super().__init__()
        self.limit = limit
        self.unbounded = frozenset(unbounded)
        self._async = _Gates(limit, asyncio.Semaphore)
        self._sync = _Gates(limit, threading.BoundedSemaphore)

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Any]) -> Any:
        """Wait for a slot of the reply, then run the call."""
        if request.tool_call.get("name") in self.unbounded:
            return handler(request)
        key = reply_key(request)
        gate = self._sync.enter(key)
        try:
            with gate:
                return handler(request)
        finally:
            self._sync.leave(key)

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[Any]]
    ) -> Any:
        """Async twin of :meth:`wrap_tool_call` (waiting holds no thread)."""
        if request.tool_call.get("name") in self.unbounded:
            return await handler(request)
        key = reply_key(request)
        gate = self._async.enter(key)
        try:
            async with gate:
                return await handler(request)
        finally:
            self._async.leave(key)
