"""The lead's step limit: LangChain's ``ModelCallLimitMiddleware`` with a final message that says
which setting stopped the run and what to do.

``lead.max_steps`` used to be approximated through LangGraph's ``recursion_limit``, so hitting it
ended the run with ``GraphRecursionError``; the library's limit ends it with an answer instead.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import ModelCallLimitMiddleware, hook_config
from langchain_core.messages import AIMessage


def stop_message(max_steps: int) -> str:
    """The run's last message when it used its ``max_steps`` model calls."""
    return (f"I stopped after {max_steps} model calls, the limit of one run (lead.max_steps in config.yaml). "
            "Send a message to go on from here, or raise the limit.")


class StepLimitMiddleware(ModelCallLimitMiddleware):
    """Ends a run after ``max_steps`` model calls with :func:`stop_message` as its answer."""

    def __init__(self, max_steps: int) -> None:
        """``max_steps``: model calls allowed in one run."""
        super().__init__(run_limit=max_steps, exit_behavior="end")
        self.max_steps = max_steps

    def _explained(self, update: dict[str, Any] | None) -> dict[str, Any] | None:
        if update and update.get("messages"):
            update = {**update, "messages": [AIMessage(stop_message(self.max_steps))]}
        return update

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Before a model call: end the run with the stop message when the limit is reached."""
        return self._explained(super().before_model(state, runtime))

    @hook_config(can_jump_to=["end"])
    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Async twin of :meth:`before_model`."""
        return self._explained(await super().abefore_model(state, runtime))
