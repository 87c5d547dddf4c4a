"""A middleware that only changes the model request (its messages, tools, tool choice).

Several of Herdsman's middlewares do nothing around a model call but rewrite what the model is
sent; they subclass this and implement :meth:`RequestRewriteMiddleware.rewrite`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse


class RequestRewriteMiddleware(AgentMiddleware):
    """Call the model with :meth:`rewrite` applied to the request."""

    def rewrite(self, request: ModelRequest) -> ModelRequest:
        """The request to send instead of ``request`` (the same one by default)."""
        return request

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        """Call the model with the rewritten request."""
        return handler(self.rewrite(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        """Async twin of :meth:`wrap_model_call`."""
        return await handler(self.rewrite(request))
