"""Let a run pick the lead's model: ``configurable.model_name`` names one of config's models.

The web UI's model picker, the SDK (``config={"configurable": {"model_name": "..."}}``) and the
CLI's ``--model`` all end here. The lead agent is built once, with its default model; this
middleware swaps the model of each model request for the one the run names, built once by the
agent's :class:`~herdsman.models.resolver.ModelResolver` (in a worker thread: building a local
model loads its weights). Token usage and cost are counted for the model really used: the usage
middleware reads the same ``configurable.model_name`` of the run (:func:`requested_model`).

A name that config does not know fails the model call with a message listing the known names;
the gateway checks names before a run starts, so API clients get a 400 instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langgraph.config import get_config

from herdsman.config.schema import HerdsmanConfig
from herdsman.models.resolver import ModelResolver

CONFIG_KEY = "model_name"


class UnknownModelError(ValueError):
    """A run named a model that config.yaml does not define."""


def model_names(config: HerdsmanConfig) -> list[str]:
    """The names a run may pick: config's models, plus the lead's default (the embedded model)."""
    names = [m.name for m in config.models]
    lead = config.lead_model_name()
    return names if lead in names else [*names, lead]


def check_model_name(name: str | None, known: Sequence[str]) -> None:
    """Raise :class:`UnknownModelError` unless ``name`` is None or one of ``known``."""
    if name is not None and name not in known:
        raise UnknownModelError(
            f"model {name!r} is not configured; configurable.model_name must be one of: {', '.join(known)} "
            "(GET /api/models lists them; add others under models: in config.yaml)"
        )


def requested_model(config: dict[str, Any] | None = None) -> str | None:
    """The model name the current run asks for (``configurable.model_name``), if any."""
    if config is None:
        try:
            config = dict(get_config())
        except RuntimeError:  # called outside a run
            return None
    name = (config.get("configurable") or {}).get(CONFIG_KEY)
    return str(name) if name else None


class ModelSelectionMiddleware(AgentMiddleware):
    """Use the model the run names instead of the agent's default one."""

    def __init__(self, resolver: ModelResolver, default_name: str) -> None:
        """``resolver`` builds and caches the named models; ``default_name`` is the agent's own."""
        super().__init__()
        self.resolver = resolver
        self.default_name = default_name
        self.known = model_names(resolver.config)
        if default_name not in self.known:
            self.known.append(default_name)
        self._lock = asyncio.Lock()

    def _wanted(self) -> str | None:
        name = requested_model()
        if name is None or name == self.default_name:
            return None
        check_model_name(name, self.known)
        return name

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        """Call the run's model (the default one when the run names none)."""
        name = self._wanted()
        if name is None:
            return handler(request)
        return handler(request.override(model=self.resolver.get(name)))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        """Async twin of :meth:`wrap_model_call`; a model's first use is built off the event loop."""
        name = self._wanted()
        if name is None:
            return await handler(request)
        model = self.resolver.cached(name)
        if model is None:
            async with self._lock:  # one build per model, even when runs pick it at the same moment
                model = await asyncio.to_thread(self.resolver.get, name)
        return await handler(request.override(model=model))
