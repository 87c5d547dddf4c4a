"""The gateway on a real PostgreSQL: checkpoints, thread/run records and crons survive a restart."""

from __future__ import annotations

import asyncio

from langgraph_sdk import get_client

from herdsman.postgres_pool import FRESH_SECONDS
from tests.gateway.cron_support import YEARLY, settled, tick
from tests.gateway.gateway_support import running_gateway, user_message
from tests.support import make_config


async def test_postgres_thread_survives_a_restart(home, gateway_database) -> None:
    config = make_config(home, checkpointer={"type": "postgres", "url": gateway_database})
    with running_gateway(config) as first:
        sdk = get_client(url=first.url, api_key=None)
        tid = (await sdk.threads.create(metadata={"db": "postgres"}))["thread_id"]
        await sdk.runs.wait(tid, "lead_agent", input=user_message("stored in postgres"))
        await sdk.aclose()
    with running_gateway(config) as second:
        sdk = get_client(url=second.url, api_key=None)
        try:
            found = await sdk.threads.search(metadata={"db": "postgres"})
            assert [t["thread_id"] for t in found] == [tid]
            assert found[0]["metadata"]["graph_id"] == "lead_agent"
            values = await sdk.runs.wait(tid, "lead_agent", input=user_message("still there?"))
            assert [m["content"] for m in values["messages"]] == [
                "stored in postgres",
                "echo: stored in postgres",
                "still there?",
                "echo: still there?",
            ]
            history = await sdk.threads.get_history(tid, limit=50)
            assert len(history) > 4 and history[0]["checkpoint"]["thread_id"] == tid
            assert [r["status"] for r in await sdk.runs.list(tid)] == ["success", "success"]
        finally:
            await sdk.aclose()


async def test_postgres_keeps_custom_agents_and_their_versions(home, gateway_database) -> None:
    from tests.gateway.test_gateway_assistants import agents_survive_a_restart

    await agents_survive_a_restart(make_config(home, checkpointer={"type": "postgres", "url": gateway_database}))


async def test_postgres_crons_survive_a_restart_and_two_gateways_fire_them_once(home, gateway_database) -> None:
    config = make_config(home, checkpointer={"type": "postgres", "url": gateway_database})
    with running_gateway(config) as first:
        sdk = get_client(url=first.url, api_key=None)
        tid = (await sdk.threads.create())["thread_id"]
        cron = await sdk.crons.create_for_thread(tid, "lead_agent", schedule=YEARLY, input=user_message("scheduled"))
        await sdk.aclose()
    with running_gateway(config) as one, running_gateway(config) as two:
        sdk = get_client(url=one.url, api_key=None)
        try:
            assert [c["cron_id"] for c in await sdk.crons.search()] == [cron["cron_id"]]
            both = await asyncio.gather(*(asyncio.to_thread(tick, g, cron["next_run_date"]) for g in (one, two)))
            assert sum(len(made) for made in both) == 1
            assert (await settled(sdk, cron["cron_id"]))["status"] == "success"
            assert [r["status"] for r in await sdk.runs.list(tid)] == ["success"]
            assert tick(two, cron["next_run_date"]) == []
        finally:
            await sdk.aclose()


async def test_prune_keep_latest_keeps_only_the_latest_checkpoint(home, gateway_database) -> None:
    """``POST /threads/prune`` with ``keep_latest`` on PostgreSQL (LangGraph's saver prunes): the
    thread stays, with its latest state and no older checkpoints, and takes the next run."""
    config = make_config(home, checkpointer={"type": "postgres", "url": gateway_database})
    with running_gateway(config) as served:
        sdk = get_client(url=served.url, api_key=None)
        try:
            tid = (await sdk.threads.create())["thread_id"]
            await sdk.runs.wait(tid, "lead_agent", input=user_message("first"))
            latest = (await sdk.threads.get_state(tid))["checkpoint"]["checkpoint_id"]
            assert len(await sdk.threads.get_history(tid, limit=50)) > 1
            assert await sdk.threads.prune([tid], strategy="keep_latest") == {"pruned_count": 1}
            history = await sdk.threads.get_history(tid, limit=50)
            assert [h["checkpoint"]["checkpoint_id"] for h in history] == [latest]
            assert [m["content"] for m in history[0]["values"]["messages"]] == ["first", "echo: first"]
            values = await sdk.runs.wait(tid, "lead_agent", input=user_message("again"))
            assert [m["content"] for m in values["messages"]][-1] == "echo: again"
        finally:
            await sdk.aclose()


def drop_connections(database_url: str) -> int:
    """End every session of the database but this one, as a PostgreSQL restart or failover does
    to its clients; how many were ended."""
    import psycopg

    name = database_url.rsplit("/", 1)[1]
    with psycopg.connect(database_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        ).fetchall()
    return len(rows)


async def test_the_gateway_goes_on_after_postgresql_dropped_its_connections(home, gateway_database) -> None:
    """A PostgreSQL restart or failover ends every connection: the next request on a connection
    that was open must not fail, nor every request after it (a saver or store on one connection
    stayed broken until the gateway restarted)."""
    config = make_config(
        home,
        checkpointer={"type": "postgres", "url": gateway_database},
        memory={"enabled": True, "store": "postgres", "url": gateway_database},
    )
    with running_gateway(config) as served:
        sdk = get_client(url=served.url, api_key=None)
        try:
            tid = (await sdk.threads.create(metadata={"db": "postgres"}))["thread_id"]
            await sdk.runs.wait(tid, "lead_agent", input=user_message("before"))
            await sdk.crons.create_for_thread(tid, "lead_agent", schedule=YEARLY, input=user_message("yearly"))
            await sdk.store.put_item(["notes"], "n1", {"text": "kept"})
            assert drop_connections(gateway_database) > 0
            await asyncio.sleep(FRESH_SECONDS)  # a restart takes longer: every connection is checked again
            values = await sdk.runs.wait(tid, "lead_agent", input=user_message("after"))
            assert [m["content"] for m in values["messages"]][-2:] == ["after", "echo: after"]
            assert [t["thread_id"] for t in await sdk.threads.search(metadata={"db": "postgres"})] == [tid]
            assert len(await sdk.crons.search()) == 1
            assert (await sdk.store.get_item(["notes"], "n1"))["value"] == {"text": "kept"}
            assert [r["status"] for r in await sdk.runs.list(tid)] == ["success", "success"]
        finally:
            await sdk.aclose()
