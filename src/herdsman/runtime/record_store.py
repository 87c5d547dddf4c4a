"""The store that keeps thread and run records (metadata, status, timestamps) for the gateway.

A LangGraph ``BaseStore`` of the same kind as the checkpointer: in memory for ``memory``,
``<home>/gateway.sqlite`` for ``sqlite``, the same database for ``postgres``. Thread state
itself stays in the checkpointer; these records are what the LangGraph API lists and searches.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from herdsman.config.schema import HerdsmanConfig
from herdsman.runtime.checkpointer import CheckpointerError, sqlite_path


@asynccontextmanager
async def open_record_store(config: HerdsmanConfig) -> AsyncIterator[BaseStore]:
    """Open the record store matching ``checkpointer.type`` for the ``async with`` block."""
    kind = config.checkpointer.type
    if kind == "memory":
        yield InMemoryStore()
        return
    if kind == "sqlite":
        from langgraph.store.sqlite.aio import AsyncSqliteStore

        path = sqlite_path(config).with_name("gateway.sqlite")
        path.parent.mkdir(parents=True, exist_ok=True)
        async with AsyncSqliteStore.from_conn_string(str(path)) as store:
            await store.setup()
            yield store
        return
    try:
        from langgraph.store.postgres.aio import AsyncPostgresStore
    except ImportError:
        raise CheckpointerError(
            "checkpointer.type is postgres but its packages are missing; pip install 'herdsman[postgres]'"
        ) from None
    async with AsyncPostgresStore.from_conn_string(config.checkpointer.url or "") as store:
        await store.setup()
        yield store
