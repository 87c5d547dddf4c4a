"""Everything memory needs at run time, opened once per agent: store, queue, updater, worker.

:meth:`MemoryService.open` builds it from ``memory:`` in config.yaml. The middlewares and the
``memory`` tool take the service; the CLI uses its store and queue directly.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.store.base import BaseStore

from herdsman.config.schema import HerdsmanConfig, MemoryConfig
from herdsman.memory.backend import close_store, memory_db_path, open_store
from herdsman.memory.queue import UpdateQueue
from herdsman.memory.store import MemoryStore
from herdsman.memory.updater import MemoryUpdater, MemoryWorker

FLUSH_HORIZON = 365 * 24 * 3600.0  # "due by then": every queued update, whatever its debounce


def user_id_of(configurable: dict[str, Any] | None, default: str) -> str:
    """The run's user: ``configurable.user_id`` when given, else ``default`` (memory.user_id)."""
    value = (configurable or {}).get("user_id")
    return str(value) if value else default


def current_user_id(default: str) -> str:
    """The user of the run this code is part of (from LangGraph's run config)."""
    try:
        from langgraph.config import get_config

        return user_id_of(get_config().get("configurable"), default)
    except RuntimeError:  # outside a run
        return default


@dataclass
class MemoryService:
    """The memory of one agent: where facts live, the update queue, and who updates it."""

    config: MemoryConfig
    store: MemoryStore
    queue: UpdateQueue
    updater: MemoryUpdater | None = None
    worker: MemoryWorker | None = None
    _owned_store: BaseStore | None = None

    @classmethod
    def open(
        cls, config: HerdsmanConfig, model: BaseChatModel | None = None, store: BaseStore | None = None
    ) -> MemoryService:
        """Open the configured store (unless ``store`` is given) and the queue next to it.

        ``model`` is the memory model; without it, queued updates wait (``herdsman memory flush``).
        """
        owned = None
        if store is None:
            store = owned = open_store(config)
        memory = MemoryStore(store)
        queue = UpdateQueue(memory_db_path(config))
        updater = MemoryUpdater(memory, queue, model, config.memory) if model is not None else None
        worker = MemoryWorker(updater) if updater is not None else None
        return cls(config.memory, memory, queue, updater, worker, owned)

    async def flush(self, timeout: float = 60.0) -> int:
        """Write every queued update now, debounce or not (a process about to exit); how many.

        Without a memory model nothing can be written (``herdsman memory flush`` does it later);
        after ``timeout`` seconds the rest stays queued, durable, for the next run.
        """
        if self.updater is None:
            return 0
        if self.worker is not None:
            self.worker.stop()  # its debounce sleep would only delay what we do now
        try:
            return await asyncio.wait_for(self.updater.arun_pending(now=time.time() + FLUSH_HORIZON), timeout)
        except TimeoutError:
            return 0

    def close(self) -> None:
        """Stop the worker; close the queue and the store this service opened."""
        if self.worker is not None:
            self.worker.stop()
        self.queue.close()
        if self._owned_store is not None:
            close_store(self._owned_store)
