"""The harness's own short model calls: one forced, typed tool call, never streamed to clients.

The plan/act loop and the value answer ask the run's model a narrow question whose answer is a
typed object (a plan, a verdict, a value). Forcing the call of one tool (``tool_choice``) makes
the reply that object: the embedded model decodes it under a grammar of the tool's schema, an API
model under the provider's structured tool choice. Tagged ``nostream``, so the call's tokens do
not reach a client as a message of the conversation.
"""

from __future__ import annotations

from typing import Any

import structlog
from langchain_core.messages import AnyMessage

log = structlog.get_logger(__name__)

NO_STREAM = {"tags": ["nostream"]}
"""Run config of a harness call: LangGraph's messages stream leaves it out."""


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
