"""The lead's step limit: LangChain's ``ModelCallLimitMiddleware`` (its per-run count) with a final
message that says which setting stopped the run and what to do.

``lead.max_steps`` used to be approximated through LangGraph's ``recursion_limit``, so hitting it
ended the run with ``GraphRecursionError``; the library's limit ends it with an answer instead. A
run may carry its own limit (``configurable.max_steps``, set by a custom agent, see
``agents/profile.py``); the count itself is the library's (``run_model_call_count``).

A reply that a limit wrote in place of the model's says so in its ``response_metadata``
(:func:`stopped_reply`, :func:`stop_reason`), so whoever reads the result (the sub-agent
executor) knows why the agent stopped without matching the text of the message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain.agents.middleware import ModelCallLimitMiddleware, hook_config
from langchain_core.messages import AIMessage
from langgraph.config import get_config

RUN_LIMIT_KEY = "max_steps"
STOP_KEY = "herdsman_stopped_by"  # in a limit's reply's response_metadata: which limit wrote it


def stopped_reply(text: str, reason: str, **fields: Any) -> AIMessage:
    """The reply that ends an agent because of limit ``reason`` (e.g. ``max_steps``, ``token_budget``)."""
    return AIMessage(content=text, response_metadata={STOP_KEY: reason}, **fields)


def stop_reason(message: Any) -> str | None:
    """Which limit wrote ``message`` (see :func:`stopped_reply`), or None for a model's reply."""
    metadata = getattr(message, "response_metadata", None) or {}
    reason = metadata.get(STOP_KEY)
    return reason if isinstance(reason, str) else None


def stop_message(max_steps: int) -> str:
    """The run's last message when it used its ``max_steps`` model calls."""
    return (f"I stopped after {max_steps} model calls, the limit of one run (lead.max_steps in config.yaml, "
            "or the agent's max_steps). Send a message to go on from here, or raise the limit.")


class StepLimitMiddleware(ModelCallLimitMiddleware):
    """Ends a run after ``max_steps`` model calls (or the run's own ``configurable.max_steps``)
    with :func:`stop_message` as its answer."""

    def __init__(
        self, max_steps: int, message: Callable[[int], str] = stop_message, run_key: str | None = RUN_LIMIT_KEY
    ) -> None:
        """``max_steps``: model calls allowed in one run unless the run's ``configurable[run_key]``
        says otherwise (``run_key`` None: no per-run limit, as for a sub-agent, whose config is its
        lead's); ``message``: the final answer, given the limit."""
        super().__init__(run_limit=max_steps, exit_behavior="end")
        self.max_steps = max_steps
        self.message = message
        self.run_key = run_key

    def limit(self) -> int:
        """This run's limit: ``configurable.max_steps`` when it is a positive int, else the default."""
        if self.run_key is None:
            return self.max_steps
        try:
            own = (get_config().get("configurable") or {}).get(self.run_key)
        except RuntimeError:  # outside a run
            own = None
        return own if isinstance(own, int) and not isinstance(own, bool) and own > 0 else self.max_steps

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Before a model call: end the run with the stop message when the limit is reached."""
        limit = self.limit()
        if int(state.get("run_model_call_count", 0) or 0) >= limit:
            return {"jump_to": "end", "messages": [stopped_reply(self.message(limit), "max_steps")]}
        return None

    @hook_config(can_jump_to=["end"])
    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Async twin of :meth:`before_model`."""
        return self.before_model(state, runtime)
