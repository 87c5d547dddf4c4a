"""Turn a tool's unexpected exception into an error result the model can act on.

Argument validation errors are already returned to the model by LangGraph's ToolNode, and the
sandbox tools report their own errors. Anything else a tool raises would end the run; this
middleware (LangChain's ToolErrorMiddleware with our handler) returns it to the model as a
``ToolMessage`` with status ``error`` instead, and logs the traceback.
"""

from __future__ import annotations

from langchain.agents.middleware import ToolCallRequest, ToolErrorMiddleware

from herdsman.logs import get_logger

log = get_logger(__name__)

MAX_ERROR_CHARS = 500


def describe_tool_error(exc: Exception, request: ToolCallRequest) -> str:
    """The text the model sees for a failed tool call: tool name, error type, short message."""
    name = request.tool_call.get("name", "?")
    log.warning("tool_failed", tool=name, error=type(exc).__name__, exc_info=exc)
    message = str(exc).strip() or "no details"
    if len(message) > MAX_ERROR_CHARS:
        message = message[:MAX_ERROR_CHARS] + " ..."
    return (
        f"Error: the tool {name!r} failed with {type(exc).__name__}: {message}. "
        "Check the arguments, or try another approach."
    )


def tool_error_middleware() -> ToolErrorMiddleware:
    """A ToolErrorMiddleware that reports every tool exception to the model."""
    return ToolErrorMiddleware(on_error=describe_tool_error)
