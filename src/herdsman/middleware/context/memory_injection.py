"""Tell the model what it remembers about the user: a ``<memory>`` section in the system message.

Once per turn (per user message), the user's facts and graph are ranked against that message and
rendered within ``memory.max_injected_tokens`` (:mod:`herdsman.memory.injection`), nothing when
the user turned their memory off; what is past ``memory.retention_days`` is left out even
before the sweep deletes it. Later model calls of the turn render it again (about a
millisecond for a hundred facts) and keep the turn's first section while nothing in it was taken
back: memory learned mid-turn waits for the next turn (the prompt's prefix, and so the model
server's prompt cache, stays the same), but a purge, a deleted or changed fact or relation, or the
off switch takes effect at the very next model call. A store
that is locked or down costs the turn its memory, never the turn: the error is logged and the
model is called without the section. The first model call of the process also kicks the
memory worker, so updates queued before a restart are written while the new run goes on.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import SystemMessage

from herdsman.logs import get_logger
from herdsman.memory.injection import render_memory
from herdsman.memory.recall import GraphView
from herdsman.memory.retention import within_retention
from herdsman.memory.service import MemoryService, current_user_id
from herdsman.skills.activation import last_user_message

log = get_logger(__name__)

CACHE_SIZE = 256


class MemoryInjectionMiddleware(AgentMiddleware):
    """Append the user's relevant memory to the system message (see module docstring)."""

    def __init__(self, service: MemoryService) -> None:
        """``service``: the agent's memory."""
        super().__init__()
        self.service = service
        self._cache: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._worker_started = False

    def _key(self, request: ModelRequest) -> tuple[tuple[str, str], str]:
        user = current_user_id(self.service.config.user_id)
        message = last_user_message(request.messages)
        query = message.text if message is not None else ""
        return (user, (message.id or query) if message is not None else ""), query

    def _render(self, user: str, query: str) -> str:
        try:
            store = self.service.store
            settings = self.service.config
            if not store.enabled_for(user):
                return ""
            facts, summary, entities, relations = within_retention(store, settings, user)
            view = GraphView(entities, relations) if settings.graph else None
            return render_memory(facts, summary, query, settings.max_injected_tokens, settings.embedding_model, view)
        except Exception as exc:  # noqa: BLE001 - memory must never fail a turn
            log.warning("memory_read_failed", user_id=user, error=str(exc))
            return ""

    def _current(self, key: tuple[str, str], fresh: str) -> str:
        """The section to send: the turn's earlier one while every line of it is still in ``fresh``
        (only additions since), else ``fresh`` (see the module docstring)."""
        earlier = self._cache.get(key)
        if earlier is not None and set(earlier.splitlines()) <= set(fresh.splitlines()):
            return earlier
        self._cache[key] = fresh
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
        return fresh

    @staticmethod
    def _with(request: ModelRequest, section: str) -> ModelRequest:
        if not section:
            return request
        base = request.system_message.text if request.system_message is not None else ""
        return request.override(system_message=SystemMessage(content=f"{base}\n\n{section}" if base else section))

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        """Call the model with the memory section added."""
        self._start_worker()
        key, query = self._key(request)
        section = self._current(key, self._render(key[0], query))
        return handler(self._with(request, section))

    def _start_worker(self) -> None:
        """Once per process: let the worker pick up updates left queued by an earlier process."""
        if not self._worker_started and self.service.worker is not None:
            self._worker_started = True
            self.service.worker.kick()

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        """Async twin of :meth:`wrap_model_call` (the store is read in a worker thread)."""
        self._start_worker()
        key, query = self._key(request)
        section = self._current(key, await asyncio.to_thread(self._render, key[0], query))
        return await handler(self._with(request, section))
