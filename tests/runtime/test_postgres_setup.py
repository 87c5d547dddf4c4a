"""Several processes starting at once on a fresh PostgreSQL database all come up.

Each store creates its tables on first start (LangGraph's checkpointer and store record their
migrations in a table with a unique key); two gateways or workers starting together on an empty
database must not fail with a duplicate key from the other's migration.
"""

from __future__ import annotations

import asyncio
import uuid
from contextlib import AsyncExitStack

import psycopg

from herdsman.runtime.crons.cron_store import open_cron_store
from herdsman.runtime.runs.run_queue_postgres import PostgresRunQueue
from herdsman.runtime.storage.checkpointer import open_checkpointer
from herdsman.runtime.storage.record_store import open_record_store
from tests.support import make_config


def fresh_database(postgres_url: str) -> str:
    """An empty database of its own on the session's PostgreSQL."""
    name = f"setup_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return postgres_url.rsplit("/", 1)[0] + f"/{name}"


async def test_many_starts_at_once_on_an_empty_database_all_succeed(home, postgres_url: str) -> None:
    url = fresh_database(postgres_url)
    config = make_config(home, checkpointer={"type": "postgres", "url": url})

    async def start_one() -> None:
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(open_checkpointer(config))
            records = await stack.enter_async_context(open_record_store(config))
            await stack.enter_async_context(open_cron_store(config))
            queue = await PostgresRunQueue.open(url)
            stack.push_async_callback(queue.close)
            await records.aput(("check",), "k", {"v": 1})
            assert (await records.aget(("check",), "k")).value == {"v": 1}

    results = await asyncio.gather(*(start_one() for _ in range(6)), return_exceptions=True)
    assert [r for r in results if r is not None] == []


def test_memory_stores_starting_at_once_all_succeed(home, postgres_url: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from herdsman.memory.backend import close_store, open_store

    config = make_config(home, memory={"store": "postgres", "url": fresh_database(postgres_url)})

    def start_one() -> None:
        close_store(open_store(config))

    with ThreadPoolExecutor(4) as pool:
        for future in [pool.submit(start_one) for _ in range(4)]:
            future.result()
