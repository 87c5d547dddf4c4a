"""Connection pools to PostgreSQL for the checkpointer, the stores, the run queue and the crons.

LangGraph's ``from_conn_string`` gives a saver or a store one connection. When PostgreSQL
restarts or fails over, that connection is closed for good, and every later request of the
process failed until it was restarted. A psycopg pool (``psycopg_pool``, installed with the
``postgres`` extra) checks a connection before lending it, with one empty round trip, and
replaces one that broke, so the first request after a restart finds a working connection
(a statement already under way when the connection broke still fails). LangGraph's savers and
stores take such a pool in place of a connection.

The check is skipped for a connection given back less than ``FRESH_SECONDS`` ago: a check on
every loan cost a run about 6% more CPU in its processes and 20% more in PostgreSQL
(``benchmarks/scale_out.py``), and a connection that worked a moment ago is rarely broken (a
restart or failover takes longer than that; one faster than it fails a request on each such
connection, which the pool then replaces).

psycopg_pool tries a connection that failed again after 1 s, then twice as long each time, for
``reconnect_timeout`` (5 minutes by default); while such an attempt waits, a request starts no new
one. After an outage of a minute or two the pool would wait as long again before it tried once
more, and requests failed with ``PoolTimeout`` long after PostgreSQL was back. The pools give an
attempt up after ``RECONNECT_SECONDS``, so the next request after PostgreSQL is back starts a new
one at once.

The first connection is made once before the pool opens, so that a wrong URL or password is
reported at once with PostgreSQL's own words, not after the pool's timeout.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

#: what LangGraph's Postgres savers and stores need of their connections
LANGGRAPH_KWARGS: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0}
OPEN_TIMEOUT_SECONDS = 30.0  # for the pool's first connections, once one was made
FRESH_SECONDS = 1.0  # a connection given back this recently is lent again without a check
RECONNECT_SECONDS = 5.0  # a failing connection attempt is given up after this (tries at 0, 1, 3, 5 s)


class _Freshness:
    """When each connection of a pool was last given back, so that only one idle for a while is
    checked (the pool's ``reset`` and ``check`` callbacks, blocking or async)."""

    def __init__(self, check: Any) -> None:
        self._check = check  # the pool class's own check_connection
        self._returned: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()

    def _fresh(self, conn: Any) -> bool:
        return time.monotonic() - self._returned.get(conn, float("-inf")) < FRESH_SECONDS

    def returned(self, conn: Any) -> None:
        """The blocking pool's ``reset``: note the time."""
        self._returned[conn] = time.monotonic()

    async def areturned(self, conn: Any) -> None:
        """The async pool's ``reset``: note the time."""
        self._returned[conn] = time.monotonic()

    def check(self, conn: Any) -> None:
        """The blocking pool's ``check``: raises when a connection idle for a while is broken."""
        if not self._fresh(conn):
            self._check(conn)

    async def acheck(self, conn: Any) -> None:
        """The async pool's ``check``: raises when a connection idle for a while is broken."""
        if not self._fresh(conn):
            await self._check(conn)


def langgraph_kwargs() -> dict[str, Any]:
    """The connection settings LangGraph's savers and stores expect (dict rows too)."""
    from psycopg.rows import dict_row

    return {**LANGGRAPH_KWARGS, "row_factory": dict_row}


async def open_async_pool(
    url: str, *, max_size: int, kwargs: dict[str, Any] | None = None, name: str = "herdsman"
) -> Any:
    """An open ``AsyncConnectionPool`` on ``url`` (1 to ``max_size`` connections, checked before
    they are lent unless given back just now; its owner closes it); ``kwargs``: the connections' settings (autocommit
    by default). A connection that cannot be made raises psycopg's error."""
    import psycopg
    from psycopg_pool import AsyncConnectionPool

    settings = kwargs if kwargs is not None else {"autocommit": True}
    first = await psycopg.AsyncConnection.connect(url, **settings)
    await first.close()
    fresh = _Freshness(AsyncConnectionPool.check_connection)
    pool = AsyncConnectionPool(
        url,
        min_size=1,
        max_size=max_size,
        kwargs=settings,
        open=False,
        name=name,
        check=fresh.acheck,
        reset=fresh.areturned,
        reconnect_timeout=RECONNECT_SECONDS,
    )
    await pool.open(wait=True, timeout=OPEN_TIMEOUT_SECONDS)
    return pool


@asynccontextmanager
async def async_pool(
    url: str, *, max_size: int, kwargs: dict[str, Any] | None = None, name: str = "herdsman"
) -> AsyncIterator[Any]:
    """:func:`open_async_pool` for the ``async with`` block."""
    pool = await open_async_pool(url, max_size=max_size, kwargs=kwargs, name=name)
    try:
        yield pool
    finally:
        await pool.close()


def sync_pool(url: str, *, max_size: int, kwargs: dict[str, Any], name: str = "herdsman") -> Any:
    """An open blocking ``ConnectionPool`` on ``url``, as :func:`async_pool` (closed by its owner)."""
    import psycopg
    from psycopg_pool import ConnectionPool

    psycopg.Connection.connect(url, **kwargs).close()
    fresh = _Freshness(ConnectionPool.check_connection)
    pool = ConnectionPool(
        url,
        min_size=1,
        max_size=max_size,
        kwargs=kwargs,
        open=False,
        name=name,
        check=fresh.check,
        reset=fresh.returned,
        reconnect_timeout=RECONNECT_SECONDS,
    )
    pool.open(wait=True, timeout=OPEN_TIMEOUT_SECONDS)
    return pool
