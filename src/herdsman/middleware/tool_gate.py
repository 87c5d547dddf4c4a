"""A middleware that may refuse a tool call before it runs (and otherwise lets it run).

Several of Herdsman's middlewares only gate tool calls (a skill's allowed tools, a custom
agent's tools, a repeat of a call that just failed); they subclass this and implement
:meth:`ToolGateMiddleware.refuse`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest


class ToolGateMiddleware(AgentMiddleware):
    """Answer a tool call with :meth:`refuse`'s message when it gives one, else run the call."""

    def refuse(self, request: ToolCallRequest) -> ToolMessage | None:
        """The result to give instead of running the call (None: run it)."""
        return None

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Any]) -> Any:
        """Run the call unless :meth:`refuse` answers it."""
        return self.refuse(request) or handler(request)

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[Any]]
    ) -> Any:
        """Async twin of :meth:`wrap_tool_call`."""
        return self.refuse(request) or await handler(request)
