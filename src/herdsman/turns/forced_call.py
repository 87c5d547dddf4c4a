"""The harness's own short model calls: one forced, typed tool call, never streamed to clients.

The plan/act loop and the value answer ask the run's model a narrow question whose answer is a
typed object (a plan, a verdict, a value). Forcing the call of one tool (``tool_choice``) makes
the reply that object: the embedded model decodes it under a grammar of the tool's schema, an API
model under the provider's structured tool choice. Tagged ``nostream``, so the call's tokens do
not reach a client as a message of the conversation.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.runnables import RunnableConfig

from herdsman.logs import get_logger
from herdsman.turns.turn import stop_reason

log = get_logger(__name__)

NO_STREAM: RunnableConfig = {"tags": ["nostream"]}
"""Run config of a harness call: LangGraph's messages stream leaves it out."""


def choice_tool(name: str, description: str, argument: str, choices: list[str]) -> dict[str, Any]:
    """An OpenAI-style tool whose only argument, ``argument``, is one of ``choices`` (an ``enum``:
    the grammar or the structured tool choice holds the model to the list)."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {argument: {"type": "string", "enum": choices}},
                "required": [argument],
            },
        },
    }


def forced_arguments(model: Any, spec: dict[str, Any], messages: list[AnyMessage]) -> dict[str, Any] | None:
    """The arguments of the forced call of the tool ``spec`` (an OpenAI-style tool dict), or None
    when the model did not make it or the call failed (the harness's own call never fails a run)."""
    name = spec["function"]["name"]
    try:
        reply = model.bind_tools([spec], tool_choice=name).invoke(messages, config=NO_STREAM)
    except Exception as exc:  # noqa: BLE001 - logged; the caller goes on without the answer
        log.warning("harness_call_failed", tool=name, error=str(exc))
        return None
    call = next((c for c in getattr(reply, "tool_calls", None) or [] if c["name"] == name), None)
    return dict(call["args"]) if call is not None else None


def final_reply(response: Any) -> tuple[list[Any], int] | None:
    """A model response's messages and the index of its final reply (the last AI message, when
    it has no tool calls and was not written by a limit), or None.

    ``response`` is what a ``wrap_model_call`` handler returns: an ``ExtendedModelResponse``, a
    ``ModelResponse`` or a bare ``AIMessage``. The middlewares that act on a final answer (the
    value answer, the plan/act loop) find it here."""
    inner = response.model_response if isinstance(response, ExtendedModelResponse) else response
    result: list[Any] = list(inner.result) if isinstance(inner, ModelResponse) else [inner]
    at = next((i for i in range(len(result) - 1, -1, -1) if isinstance(result[i], AIMessage)), None)
    if at is None or result[at].tool_calls or stop_reason(result[at]) is not None:
        return None
    return result, at


def replace_reply(response: Any, result: list[Any], at: int, reply: AIMessage) -> Any:
    """``response`` (as :func:`final_reply` read it into ``result`` and ``at``) with its final
    reply replaced by ``reply``, in the same form."""
    result[at] = reply
    if isinstance(response, ExtendedModelResponse):
        return ExtendedModelResponse(model_response=ModelResponse(result=result), command=response.command)
    if isinstance(response, ModelResponse):
        return ModelResponse(result=result, structured_response=response.structured_response)
    return reply
