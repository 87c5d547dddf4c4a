"""Count each model call's tokens (and cost) into the thread state and the run's token budget,
and stamp each reply with how long its model call took (``response_metadata["step_timing"]``:
``seconds`` and ``model``), which the gateway's step estimate reads back (see
:mod:`herdsman.runtime.tracing.step_times`).

Wraps the model call, so it adds no graph node. The usage goes to ``state["usage"]`` under this
agent's key (``lead`` or ``task:<id>``) through a reducer that sums. When the run's shared budget
is spent, the agent is stopped cleanly: its reply is replaced by a message saying so, with no
tool calls left dangling, and no further model call is made. The budget is the run scope's, read
from the run's runtime context (``request.runtime.context``, see :mod:`herdsman.turns.run_scope`);
a sub-agent's graph runs with its lead's context, so they share it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState, ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage
from langgraph.types import Command

from herdsman.config.schema import SubagentsConfig
from herdsman.middleware.model_selection import requested_model
from herdsman.models.usage import TokenBudget, merge_usage, usage_delta
from herdsman.turns.run_scope import run_scope
from herdsman.turns.turn import stopped_reply


class UsageState(AgentState):
    """Adds ``usage`` (per agent, plus ``total``) to the state."""

    usage: NotRequired[Annotated[dict[str, Any], merge_usage]]


class UsageMiddleware(AgentMiddleware):
    """Record usage and duration per model call and enforce the run's token budget."""

    state_schema = UsageState

    def __init__(
        self,
        settings: SubagentsConfig,
        agent_key: str = "lead",
        model_name: str | None = None,
        pricing: tuple[float, float] | None = None,
        extra: dict[str, Any] | None = None,
        pricing_of: Callable[[str], tuple[float, float] | None] | None = None,
    ) -> None:
        """``agent_key`` names the agent in ``state["usage"]``; ``pricing`` is $/M tokens in, out.
        ``pricing_of`` (the lead's): the agent's model can be picked per run
        (``configurable.model_name``, see :mod:`herdsman.middleware.model_selection`), and this
        prices the model the run picked."""
        super().__init__()
        self.settings = settings
        self.agent_key = agent_key
        self.model_name = model_name
        self.pricing = pricing
        self.extra = extra or {}
        self.pricing_of = pricing_of

    def _model(self) -> tuple[str | None, tuple[float, float] | None]:
        """The name and pricing of the model this call uses: the run's pick, else the agent's own."""
        picked = requested_model() if self.pricing_of is not None else None
        if picked is None or picked == self.model_name or self.pricing_of is None:
            return self.model_name, self.pricing
        return picked, self.pricing_of(picked)

    def _stopped(self, budget_message: str, spent: AIMessage | None = None) -> ModelResponse:
        """A reply that ends the agent; it keeps the usage of the reply it replaces, if any."""
        usage = spent.usage_metadata if spent is not None else None
        return ModelResponse(result=[stopped_reply(budget_message, "token_budget", usage_metadata=usage)])

    def _budget(self, request: ModelRequest) -> TokenBudget:
        """The run's token budget, from the scope in the run's runtime context."""
        return run_scope(self.settings, request.runtime.context if request.runtime else None).budget

    def _account(self, response: ModelResponse, budget: TokenBudget, seconds: float) -> ExtendedModelResponse:
        delta: dict[str, Any] = {}
        reply: AIMessage | None = None
        model_name, pricing = self._model()
        for message in response.result:
            if isinstance(message, AIMessage):
                reply = message
                message.response_metadata["step_timing"] = {
                    "seconds": round(seconds, 3),
                    "model": model_name or message.response_metadata.get("model_name"),
                }
                d = usage_delta(message, pricing)
                budget.add(int(d["total_tokens"]))
                delta = {k: delta.get(k, 0) + v for k, v in d.items()}
        if model_name:
            delta["model"] = model_name
        delta.update(self.extra)
        if budget.exhausted:
            response = self._stopped(budget.message(), reply)
        return ExtendedModelResponse(
            model_response=response, command=Command(update={"usage": {self.agent_key: delta}})
        )

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse | ExtendedModelResponse:
        """Call the model unless the budget is spent, then count what the call used."""
        budget = self._budget(request)
        if budget.exhausted:
            return self._stopped(budget.message())
        started = time.monotonic()
        response = handler(request)
        return self._account(response, budget, time.monotonic() - started)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse | ExtendedModelResponse:
        """Async twin of :meth:`wrap_model_call`."""
        budget = self._budget(request)
        if budget.exhausted:
            return self._stopped(budget.message())
        started = time.monotonic()
        response = await handler(request)
        return self._account(response, budget, time.monotonic() - started)
