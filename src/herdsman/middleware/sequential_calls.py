"""One change at a time for a small model (the ``small`` profile): later calls wait for results.

A small model that answers with several tool calls at once writes the later ones before it has
seen what the first return: asked to count files and save the count, it called ``glob`` and, in
the same reply, ``write_file`` with the content ``"<number of .py files>"``. With the ``small``
profile, when a reply holds several calls and any call after the first can change something
(anything but reading tools), only the first call is kept; the model sees its result and writes
the rest with real values on its next step. Replies of reads only (several files at once) pass.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage

READ_ONLY = frozenset({"read_file", "ls", "glob", "grep", "web_fetch", "web_search", "view_image"})


def first_call_only(response: ModelResponse) -> ModelResponse:
    """``response`` with calls after the first dropped when a later one may change something."""
    messages = list(response.result)
    for i, message in enumerate(messages):
        if not isinstance(message, AIMessage) or len(message.tool_calls) < 2:
            continue
        if all(call["name"] in READ_ONLY for call in message.tool_calls[1:]):
            continue
        messages[i] = message.model_copy(update={"tool_calls": message.tool_calls[:1], "tool_call_chunks": []})
    return ModelResponse(result=messages, structured_response=response.structured_response)


class SequentialCallsMiddleware(AgentMiddleware):
    """Keep one call when a reply's later calls would act before seeing the first's result."""

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        """Call the model and trim its calls."""
        return first_call_only(handler(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        """Async twin of :meth:`wrap_model_call`."""
        return first_call_only(await handler(request))
