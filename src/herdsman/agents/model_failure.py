"""The lead's reply when its model cannot be called, even after retries: in the request's language,
and marked as the harness's own.

LangChain's ``ModelRetryMiddleware`` retries a failed model call and, when the retries run out,
ends the step with the text its ``on_failure`` returns. That callable sees only the exception, so
:class:`ModelFailureRetry` notes the language of the request the failed call answered (a context
variable set around the call) and gives the reply a typed mark, ``response_metadata`` ``herdsman_failed:
"model_call"``, which ``herdsman run``'s exit status and the web UI's run status read instead of
the wording. The sentence is :mod:`~herdsman.language.user_words`' ``model.failed``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

from langchain.agents.middleware import ModelRetryMiddleware
from langchain.agents.middleware.types import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage

from herdsman.language.user_words import say
from herdsman.turns.turn import turn_language

FAILED_KEY = "herdsman_failed"
"""In the ``response_metadata`` of a reply the harness wrote because the run failed: what failed
(``model_call``)."""

_language: ContextVar[str] = ContextVar("herdsman_model_failure_language", default="en")


def model_error_message(exc: Exception, language: str = "en") -> str:
    """What the user sees when the model cannot be called even after retries, in ``language``."""
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return say("model.failed", language, kind=type(exc).__name__, detail=detail)


def failed_reason(message: Any) -> str | None:
    """What failed when ``message`` is the harness's reply to a failed run (``model_call``), else None."""
    reason = (getattr(message, "response_metadata", None) or {}).get(FAILED_KEY)
    return reason if isinstance(reason, str) else None


class ModelFailureRetry(ModelRetryMiddleware):
    """LangChain's model retries, ending in :func:`model_error_message` in the request's language,
    marked with :data:`FAILED_KEY`."""

    def __init__(self, **kwargs: Any) -> None:
        """``kwargs`` as ``ModelRetryMiddleware`` takes them, but ``on_failure``, which is ours."""
        super().__init__(on_failure=lambda exc: model_error_message(exc, _language.get()), **kwargs)

    def _handle_failure(self, exc: Exception, attempts_made: int) -> ModelResponse:
        response = super()._handle_failure(exc, attempts_made)
        for message in response.result:
            if isinstance(message, AIMessage):
                message.response_metadata = {**message.response_metadata, FAILED_KEY: "model_call"}
        return response

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse | AIMessage:
        """Call the model; a failure is retried, then becomes an honest reply (module docstring)."""
        token = _language.set(turn_language(request.messages))
        try:
            return super().wrap_model_call(request, handler)
        finally:
            _language.reset(token)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse | AIMessage:
        """Async twin of :meth:`wrap_model_call`."""
        token = _language.set(turn_language(request.messages))
        try:
            return await super().awrap_model_call(request, handler)
        finally:
            _language.reset(token)
