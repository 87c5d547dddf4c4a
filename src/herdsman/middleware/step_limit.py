"""The lead's step limit: the count of LangChain's ``ModelCallLimitMiddleware``
(``run_model_call_count`` in its state schema) with a final message that says which setting
stopped the run and what to do.

``lead.max_steps`` used to be approximated through LangGraph's ``recursion_limit``, so hitting it
ended the run with ``GraphRecursionError``; the limit now ends it with an answer instead. A
run may carry its own limit (``configurable.max_steps``, set by a custom agent, see
``agents/profile.py``).

Why not the library's hooks: ``ModelCallLimitMiddleware`` checks in ``before_model`` and counts in
``after_model``, two graph nodes around every model call, so a five-call run took 24 supersteps
instead of 14, each a checkpoint written (with ``durability="sync"`` and a file version captured)
and streamed; ``benchmarks/gateway_load.py`` ran slower for it. The same check and count are made
here in ``wrap_model_call`` (the count returned with the reply as a state update, applied through
the state's reducers), which adds no node. The count is read from the step's state, so a model
call retried or asked again inside one step counts once, as the library's ``after_model`` counted
it. It is placed outside the other model-call wrappers, so the limit's reply goes out as it is
(no completion check or re-ask of a reply the model did not write).

A reply that a limit wrote in place of the model's says so in its ``response_metadata``
(:func:`~herdsman.turns.turn.stopped_reply`, :func:`~herdsman.turns.turn.stop_reason`), so
whoever reads the result (the sub-agent executor) knows why the agent stopped without matching
the text of the message.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain.agents.middleware.model_call_limit import ModelCallLimitState
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.messages import AIMessage
from langgraph.config import get_config
from langgraph.types import Command

from herdsman.language.user_words import say
from herdsman.turns.turn import stopped_reply, turn_language

RUN_LIMIT_KEY = "max_steps"


def stop_message(max_steps: int, language: str = "en") -> str:
    """The run's last message when it used its ``max_steps`` model calls, in ``language`` (the request's)."""
    return say("stop.max_steps", language, limit=max_steps)


class StepLimitMiddleware(AgentMiddleware[ModelCallLimitState[Any], Any, Any]):
    """Ends a run after ``max_steps`` model calls (or the run's own ``configurable.max_steps``)
    with :func:`stop_message` as its answer."""

    state_schema = ModelCallLimitState

    def __init__(
        self, max_steps: int, message: Callable[[int], str] | None = None, run_key: str | None = RUN_LIMIT_KEY
    ) -> None:
        """``max_steps``: model calls allowed in one run unless the run's ``configurable[run_key]``
        says otherwise (``run_key`` None: no per-run limit, as for a sub-agent, whose config is its
        lead's); ``message``: the final answer, given the limit (default :func:`stop_message`, in
        the language of the request)."""
        super().__init__()
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

    def _stopped(self, request: ModelRequest) -> tuple[int, AIMessage | None]:
        """The run's model calls so far, and the stop reply when the limit is reached."""
        count = int(cast(int, request.state.get("run_model_call_count", 0)) or 0)
        limit = self.limit()
        if count < limit:
            return count, None
        text = self.message(limit) if self.message is not None else stop_message(limit, turn_language(request.messages))
        return count, stopped_reply(text, "max_steps")

    @staticmethod
    def _counted(response: Any, state: Any, count: int) -> ExtendedModelResponse:
        """``response`` with the run's and the thread's model call counts raised by one."""
        if isinstance(response, ExtendedModelResponse):  # an inner wrapper's own update goes on
            inner, command = response.model_response, response.command
        else:
            inner, command = (ModelResponse(result=[response]) if isinstance(response, AIMessage) else response), None
        update = dict(command.update or {}) if command is not None and isinstance(command.update, dict) else {}
        update.update(
            run_model_call_count=count + 1,
            thread_model_call_count=int(state.get("thread_model_call_count", 0) or 0) + 1,
        )
        return ExtendedModelResponse(model_response=inner, command=Command(update=update))

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        """Answer with the stop message when the limit is reached, else call the model and count it."""
        count, stop = self._stopped(request)
        if stop is not None:
            return ModelResponse(result=[stop])
        return self._counted(handler(request), request.state, count)

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[Any]]) -> Any:
        """Async twin of :meth:`wrap_model_call`."""
        count, stop = self._stopped(request)
        if stop is not None:
            return ModelResponse(result=[stop])
        return self._counted(await handler(request), request.state, count)
