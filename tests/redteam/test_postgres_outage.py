"""Red team: the PostgreSQL pools after PostgreSQL was away for a while.

Finding (h-rt30): psycopg_pool tries a connection that failed again after 1 s, then twice as
long each time, for ``reconnect_timeout`` (5 minutes by default), and while such an attempt is
pending a waiting request starts no new one. After an outage of a minute or two, requests went
on failing (each after the pool's 30 s wait) for up to a minute or two more once PostgreSQL was
back: the gateway's first requests answered 500 ``PoolTimeout``. The pools now give up an attempt
after a few seconds, so a request after PostgreSQL is back starts a new one at once.

Finding (h-rt30): meanwhile the gateway answered each request, after the pool's 30 s wait, with
500 "Internal error (PoolTimeout)", which reads as a bug; it now answers 503 with Retry-After and
says to check PostgreSQL.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import psycopg
import pytest

from herdsman.postgres_pool import FRESH_SECONDS, RECONNECT_SECONDS, open_async_pool, sync_pool
from tests.gateway.gateway_support import running_gateway
from tests.support import make_config


@pytest.fixture
def database(postgres_url: str) -> Iterator[str]:
    """A database of its own, whose connections the test can refuse (as a PostgreSQL that is down)."""
    name = f"outage_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield postgres_url.rsplit("/", 1)[0] + f"/{name}"


def set_down(url: str, down: bool) -> None:
    """Refuse (and end) or accept again every connection to ``url``'s database."""
    admin_url, name = url.rsplit("/", 1)
    with psycopg.connect(admin_url + "/postgres", autocommit=True) as conn:
        conn.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS {'false' if down else 'true'}")
        if down:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))


# psycopg_pool tries again after ~1 s, then 2, 4, 8 s...: left to its own backoff, a pool whose
# PostgreSQL was away 9 s tries next at ~15 s (13.5 s at the least, with its jitter), more than
# BACK_WITHIN_SECONDS after PostgreSQL is back. The pools give an attempt up after
# RECONNECT_SECONDS, so the first request after the outage starts a new one at once.
OUTAGE_SECONDS = 9
BACK_WITHIN_SECONDS = 4  # the first request after the outage gets a connection within this
assert OUTAGE_SECONDS >= RECONNECT_SECONDS + 3  # the pool gave up its attempts well before PostgreSQL is back


async def test_an_async_pool_serves_again_soon_after_postgresql_is_back(database: str) -> None:
    from psycopg_pool import PoolTimeout

    pool = await open_async_pool(database, max_size=2, name="outage")
    try:
        set_down(database, True)
        with pytest.raises(PoolTimeout):  # a request during the outage (its attempt goes on in the pool)
            async with pool.connection(timeout=1):
                pass
        await asyncio.sleep(OUTAGE_SECONDS)
        set_down(database, False)
        async with pool.connection(timeout=BACK_WITHIN_SECONDS) as conn:  # the first request once PostgreSQL is back
            assert (await (await conn.execute("SELECT 1")).fetchone())[0] == 1
    finally:
        set_down(database, False)
        await pool.close()


def test_a_blocking_pool_serves_again_soon_after_postgresql_is_back(database: str) -> None:
    import time

    from psycopg_pool import PoolTimeout

    pool = sync_pool(database, max_size=2, kwargs={"autocommit": True}, name="outage-sync")
    try:
        set_down(database, True)
        with pytest.raises(PoolTimeout):
            with pool.connection(timeout=1):
                pass
        time.sleep(OUTAGE_SECONDS)
        set_down(database, False)
        with pool.connection(timeout=BACK_WITHIN_SECONDS) as conn:
            assert conn.execute("SELECT 1").fetchone()[0] == 1
    finally:
        set_down(database, False)
        pool.close()


async def test_the_gateway_answers_503_while_postgresql_is_down_and_serves_once_it_is_back(home, database) -> None:
    import httpx

    config = make_config(home, checkpointer={"type": "postgres", "url": database})
    with running_gateway(config) as served:
        async with httpx.AsyncClient(base_url=served.url, timeout=120) as http:
            tid = (await http.post("/threads", json={})).json()["thread_id"]
            set_down(database, True)
            try:
                down = await http.get(f"/threads/{tid}/state")
            finally:
                set_down(database, False)
            await asyncio.sleep(FRESH_SECONDS)  # a real outage lasts longer: every connection is checked again
            up = await http.get(f"/threads/{tid}/state")
    assert down.status_code == 503, down.text
    assert down.headers["retry-after"] and "PostgreSQL" in down.json()["detail"]
    assert "127.0.0.1" not in down.text
    assert up.status_code == 200, up.text
