"""Answer tool calls that never got a result, before the model sees the conversation.

A run stopped mid-step (Ctrl-C, a crash, a killed server) can leave an AI message whose tool
calls have no ``ToolMessage``. Most providers reject such a history, so the thread would be
stuck. This middleware adds a short "not run" result for each, in the request only: the saved
state is left as it was, and it costs nothing when there is nothing to patch.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage

INTERRUPTED_RESULT = (
    "Error: this tool call was interrupted before it finished and has no result. Run it again if it is still needed."
)


def patch_dangling_tool_calls(messages: list[AnyMessage]) -> list[AnyMessage]:
    """``messages`` with an error ``ToolMessage`` after each tool call that has no result.

    Returns the same list object when nothing needed patching.
    """
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    if all(call["id"] in answered for m in messages if isinstance(m, AIMessage) for call in m.tool_calls):
        return messages
    patched: list[AnyMessage] = []
    for message in messages:
        patched.append(message)
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call["id"] not in answered:
                    patched.append(
                        ToolMessage(
                            content=INTERRUPTED_RESULT,
                            tool_call_id=call["id"],
                            name=call["name"],
                            status="error",
                        )
                    )
    return patched


class DanglingToolCallMiddleware(AgentMiddleware):
    """Patch unanswered tool calls in each model request (see module docstring)."""

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        """Send the patched messages to the model."""
        patched = patch_dangling_tool_calls(request.messages)
        return handler(request if patched is request.messages else request.override(messages=patched))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        """Async twin of :meth:`wrap_model_call`."""
        patched = patch_dangling_tool_calls(request.messages)
        return await handler(request if patched is request.messages else request.override(messages=patched))
