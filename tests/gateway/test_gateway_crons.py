"""Crons through the official SDK: create (on a thread and stateless), search, count, get, patch,
delete; firing (driven by the scheduler's ``tick(now)``, never by waiting for a clock), restarts,
two gateways on one database, deleted threads, bad input, and users kept apart."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError

from tests.gateway.cron_support import YEARLY, firings, settled, tick
from tests.gateway.gateway_support import HOLD, running_gateway, scripted_model, user_message
from tests.support import make_config, run_cli


async def test_create_search_count_get_patch_delete(client) -> None:
    thread = await client.threads.create()
    on_thread = await client.crons.create_for_thread(
        thread["thread_id"], "lead_agent", schedule=YEARLY, input=user_message("daily"), metadata={"kind": "report"}
    )
    stateless = await client.crons.create("lead_agent", schedule="30 6 * * 1", input=user_message("weekly"))
    assert on_thread["thread_id"] == thread["thread_id"] and on_thread["schedule"] == YEARLY
    assert on_thread["payload"]["input"] == user_message("daily") and on_thread["metadata"] == {"kind": "report"}
    assert on_thread["payload"]["multitask_strategy"] == "enqueue" and on_thread["enabled"] is True
    assert stateless["thread_id"] is None and stateless["on_run_completed"] == "delete"
    assert datetime.fromisoformat(on_thread["next_run_date"]).strftime("%m-%d %H:%M") == "01-01 00:00"
    weekly = datetime.fromisoformat(stateless["next_run_date"])
    assert (weekly.weekday(), weekly.hour, weekly.minute) == (0, 6, 30)

    assert {c["cron_id"] for c in await client.crons.search()} == {on_thread["cron_id"], stateless["cron_id"]}
    assert [c["cron_id"] for c in await client.crons.search(thread_id=thread["thread_id"])] == [on_thread["cron_id"]]
    assert [c["cron_id"] for c in await client.crons.search(metadata={"kind": "report"})] == [on_thread["cron_id"]]
    picked = await client.crons.search(select=["cron_id", "next_run_date"], thread_id=thread["thread_id"])
    assert picked == [{"cron_id": on_thread["cron_id"], "next_run_date": on_thread["next_run_date"]}]
    ordered = await client.crons.search(sort_by="next_run_date", sort_order="asc")
    assert [c["cron_id"] for c in ordered] == [stateless["cron_id"], on_thread["cron_id"]]
    assert await client.crons.count() == 2
    assert await client.crons.count(thread_id=thread["thread_id"]) == 1
    assert await client.http.get(f"/runs/crons/{on_thread['cron_id']}") == {**on_thread, "last_run": None}

    disabled = await client.crons.update(on_thread["cron_id"], enabled=False)
    assert disabled["enabled"] is False and disabled["next_run_date"] is None
    assert [c["cron_id"] for c in await client.crons.search(enabled=False)] == [on_thread["cron_id"]]
    moved = await client.crons.update(
        on_thread["cron_id"], enabled=True, schedule="0 12 * * *", input=user_message("noon")
    )
    assert moved["schedule"] == "0 12 * * *" and datetime.fromisoformat(moved["next_run_date"]).hour == 12
    assert moved["payload"]["input"] == user_message("noon") and moved["payload"]["multitask_strategy"] == "enqueue"

    await client.crons.delete(on_thread["cron_id"])
    with pytest.raises(NotFoundError):
        await client.http.get(f"/runs/crons/{on_thread['cron_id']}")
    with pytest.raises(NotFoundError):
        await client.crons.delete(on_thread["cron_id"])
    assert [c["cron_id"] for c in await client.crons.search()] == [stateless["cron_id"]]


async def test_a_due_cron_fires_once_and_its_run_shows_on_the_thread(gateway, client) -> None:
    thread = await client.threads.create()
    cron = await client.crons.create_for_thread(
        thread["thread_id"], "lead_agent", schedule=YEARLY, input=user_message("tick")
    )
    assert tick(gateway, datetime.fromisoformat(cron["next_run_date"]) - timedelta(seconds=1)) == []  # not due yet
    fired = tick(gateway, cron["next_run_date"])
    assert [f["cron_id"] for f in fired] == [cron["cron_id"]] and fired[0]["thread_id"] == thread["thread_id"]
    await client.runs.join(thread["thread_id"], fired[0]["run_id"])
    state = await client.threads.get_state(thread["thread_id"])
    assert [m["content"] for m in state["values"]["messages"]] == ["tick", "echo: tick"]
    run = await client.runs.get(thread["thread_id"], fired[0]["run_id"])
    assert run["metadata"]["cron_id"] == cron["cron_id"]

    latest = await settled(client, cron["cron_id"])
    assert latest["status"] == "success" and latest["run_id"] == fired[0]["run_id"]
    assert latest["scheduled_at"] == cron["next_run_date"]
    again = await client.http.get(f"/runs/crons/{cron['cron_id']}")
    assert again["last_run"] == latest
    assert datetime.fromisoformat(again["next_run_date"]).year == datetime.fromisoformat(cron["next_run_date"]).year + 1
    assert tick(gateway, cron["next_run_date"]) == []  # that firing is done
    assert len(await client.runs.list(thread["thread_id"])) == 1


async def test_stateless_crons_run_on_a_new_thread_kept_or_deleted(gateway, client) -> None:
    kept = await client.crons.create("lead_agent", schedule=YEARLY, input=user_message("kept"), on_run_completed="keep")
    dropped = await client.crons.create("lead_agent", schedule=YEARLY, input=user_message("dropped"))
    tick(gateway, kept["next_run_date"])
    kept_run, dropped_run = await settled(client, kept["cron_id"]), await settled(client, dropped["cron_id"])
    assert kept_run["status"] == dropped_run["status"] == "success"
    state = await client.threads.get_state(kept_run["thread_id"])
    assert state["values"]["messages"][-1]["content"] == "echo: kept"
    with pytest.raises(NotFoundError):
        await client.threads.get(dropped_run["thread_id"])


async def test_a_refused_firing_is_recorded_as_an_error(gateway, client, model) -> None:
    thread = await client.threads.create()
    cron = await client.crons.create_for_thread(
        thread["thread_id"], "lead_agent", schedule=YEARLY, input=user_message("late"), multitask_strategy="reject"
    )
    held = await client.runs.create(thread["thread_id"], "lead_agent", input=user_message(f"{HOLD} busy"))
    await asyncio.to_thread(model.wait_until_held)
    fired = tick(gateway, cron["next_run_date"])
    assert fired[0]["status"] == "error" and "already has run" in fired[0]["error"]
    model.release()
    await client.runs.join(thread["thread_id"], held["run_id"])
    shown = await client.http.get(f"/runs/crons/{cron['cron_id']}")
    assert shown["last_run"]["status"] == "error" and shown["last_run"]["run_id"] is None
    assert shown["next_run_date"] > cron["next_run_date"]  # the schedule goes on


async def test_an_end_time_stops_the_schedule(gateway, client) -> None:
    now = datetime.now(UTC)
    cron = await client.crons.create(
        "lead_agent", schedule="*/5 * * * *", input=user_message("until"), end_time=now + timedelta(hours=1)
    )
    assert cron["end_time"] is not None and cron["next_run_date"] is not None
    tick(gateway, now + timedelta(hours=2))  # due (it was not fired in time), fires once, then nothing is left
    await settled(client, cron["cron_id"])
    assert (await client.http.get(f"/runs/crons/{cron['cron_id']}"))["next_run_date"] is None
    assert tick(gateway, now + timedelta(hours=3)) == []
    cleared = await client.crons.update(cron["cron_id"], end_time=None)
    assert cleared["end_time"] is None and cleared["next_run_date"] is not None


async def test_timezone_shifts_the_schedule(client) -> None:
    cron = await client.crons.create("lead_agent", schedule="0 9 * * *", timezone="Asia/Tokyo")
    assert cron["timezone"] == "Asia/Tokyo"
    assert datetime.fromisoformat(cron["next_run_date"]).hour == 0  # 09:00 in Tokyo is 00:00 UTC (no DST there)


async def test_bad_inputs_get_clear_errors(client) -> None:
    thread = await client.threads.create()
    cases = [
        ({"schedule": "every day"}, "0 9 * * 1-5"),
        ({"schedule": "61 * * * *"}, "five fields"),
        ({"schedule": YEARLY, "timezone": "Mars/Olympus"}, "IANA"),
        ({"schedule": YEARLY, "end_time": "tomorrow"}, "ISO-8601"),
        ({"schedule": YEARLY, "end_time": "2001-01-01T00:00:00Z"}, "in the past"),
        ({"schedule": YEARLY, "stream_mode": "telepathy"}, "stream mode"),
        ({"schedule": YEARLY, "config": {"configurable": {"thread_id": "someone-else"}}}, "configurable"),
        ({"schedule": YEARLY, "metadata": "not an object"}, "metadata"),
        ({"assistant_id": "lead_agent"}, "schedule is required"),
    ]
    async with httpx.AsyncClient(base_url=str(client.http.client.base_url)) as http:
        for body, words in cases:
            res = await http.post("/runs/crons", json={"assistant_id": "lead_agent", **body})
            assert res.status_code == 422 and words in res.json()["detail"], (body, res.text)
        res = await http.post(
            "/runs/crons",
            json={
                "assistant_id": "lead_agent",
                "schedule": YEARLY,
                "config": {"configurable": {"model_name": "no-such-model"}},
            },
        )
        assert res.status_code == 400 and "no-such-model" in res.json()["detail"]  # as a run on that model is
        res = await http.post("/runs/crons", json={"assistant_id": "nobody", "schedule": YEARLY})
        assert (
            res.status_code == 404 and "nobody" in res.json()["detail"] and "assistants/search" in res.json()["detail"]
        )
        res = await http.post(
            f"/threads/{thread['thread_id']}/runs/crons",
            json={"assistant_id": "lead_agent", "schedule": YEARLY, "on_run_completed": "keep"},
        )
        assert res.status_code == 422 and "omit it" in res.json()["detail"]
        res = await http.post(
            "/threads/no-such-thread/runs/crons", json={"assistant_id": "lead_agent", "schedule": YEARLY}
        )
        assert res.status_code == 404 and "POST /threads" in res.json()["detail"]
        cron = (await http.post("/runs/crons", json={"assistant_id": "lead_agent", "schedule": YEARLY})).json()
        res = await http.patch(f"/runs/crons/{cron['cron_id']}", json={})
        assert res.status_code == 400 and "changes nothing" in res.json()["detail"]  # as LangGraph's server answers
        res = await http.post("/runs/crons/search", json={"select": ["cron_id", "password"]})
        assert res.status_code == 422 and "next_run_date" in res.json()["detail"]
        res = await http.patch(f"/runs/crons/{cron['cron_id']}", json={"schedule": "soon"})
        assert res.status_code == 422 and "cron expression" in res.json()["detail"]
        res = await http.patch("/runs/crons/no-such-cron", json={"enabled": False})
        assert res.status_code == 404 and "/runs/crons/search" in res.json()["detail"]
    assert (await client.http.get(f"/runs/crons/{cron['cron_id']}"))["schedule"] == YEARLY  # unchanged by the refusals
    assert await client.crons.count() == 1  # no refused cron was saved


async def test_deleting_a_thread_deletes_its_crons(client) -> None:
    thread = await client.threads.create()
    cron = await client.crons.create_for_thread(
        thread["thread_id"], "lead_agent", schedule=YEARLY, input=user_message("x")
    )
    other = await client.crons.create("lead_agent", schedule=YEARLY)
    await client.threads.delete(thread["thread_id"])
    with pytest.raises(NotFoundError):
        await client.http.get(f"/runs/crons/{cron['cron_id']}")
    assert [c["cron_id"] for c in await client.crons.search()] == [other["cron_id"]]
    with pytest.raises(NotFoundError):
        await client.crons.create_for_thread(thread["thread_id"], "lead_agent", schedule=YEARLY)


async def test_users_only_see_and_run_their_own_crons(secured) -> None:
    ana = get_client(url=secured.url, api_key="key-ana")
    bo = get_client(url=secured.url, api_key="key-bo")
    try:
        thread = await ana.threads.create()
        mine = await ana.crons.create_for_thread(
            thread["thread_id"], "lead_agent", schedule=YEARLY, input=user_message("a")
        )
        stateless = await ana.crons.create(
            "lead_agent",
            schedule=YEARLY,
            input=user_message("b"),
            on_run_completed="keep",
            config={"configurable": {"user_id": "bo"}},
        )
        assert mine["user_id"] == stateless["user_id"] != None  # noqa: E711 - the owner is recorded
        assert await bo.crons.search() == [] and await bo.crons.count() == 0
        for call in (
            lambda: bo.http.get(f"/runs/crons/{mine['cron_id']}"),
            lambda: bo.http.get(f"/runs/crons/{mine['cron_id']}/firings"),
            lambda: bo.crons.update(mine["cron_id"], enabled=False),
            lambda: bo.crons.delete(mine["cron_id"]),
            lambda: bo.crons.create_for_thread(thread["thread_id"], "lead_agent", schedule=YEARLY),
        ):
            with pytest.raises(NotFoundError):
                await call()
        assert await ana.crons.count() == 2
        with pytest.raises(UnprocessableEntityError):
            await ana.crons.create("lead_agent", schedule="nope")

        tick(secured, stateless["next_run_date"])
        run = await settled(ana, stateless["cron_id"])
        assert run["status"] == "success"
        assert (await ana.threads.get(run["thread_id"]))["metadata"]["owner"] == mine["user_id"]
        with pytest.raises(NotFoundError):
            await bo.threads.get(run["thread_id"])
        ran = await ana.runs.get(run["thread_id"], run["run_id"])
        assert ran["kwargs"]["config"]["configurable"]["user_id"] == mine["user_id"]  # not the "bo" it asked for
    finally:
        await ana.aclose()
        await bo.aclose()


async def test_crons_survive_a_restart_and_are_not_fired_again(home) -> None:
    config = make_config(home, checkpointer={"type": "sqlite"})
    with running_gateway(config, model=scripted_model()) as first:
        sdk = get_client(url=first.url, api_key=None)
        thread = await sdk.threads.create()
        cron = await sdk.crons.create_for_thread(
            thread["thread_id"], "lead_agent", schedule=YEARLY, input=user_message("once")
        )
        fired = tick(first, cron["next_run_date"])
        before = await settled(sdk, cron["cron_id"])
        await sdk.aclose()
    with running_gateway(config, model=scripted_model()) as second:
        sdk = get_client(url=second.url, api_key=None)
        try:
            kept = await sdk.http.get(f"/runs/crons/{cron['cron_id']}")
            assert kept["schedule"] == YEARLY and kept["last_run"] == before and before["run_id"] == fired[0]["run_id"]
            assert tick(second, cron["next_run_date"]) == []
            assert len(await firings(sdk, cron["cron_id"])) == 1
            assert len(await sdk.runs.list(thread["thread_id"])) == 1
            tick(second, kept["next_run_date"])  # the next year's firing, by the new process
            assert (await settled(sdk, cron["cron_id"]))["scheduled_at"] == kept["next_run_date"]
            messages = (await sdk.threads.get_state(thread["thread_id"]))["values"]["messages"]
            assert [m["content"] for m in messages] == ["once", "echo: once", "once", "echo: once"]
        finally:
            await sdk.aclose()


async def test_two_gateways_on_one_database_fire_each_due_cron_once(home) -> None:
    # no per-user run limit: past it a fired run may wait and be executed by the other gateway,
    # whose scheduler does not watch it, and its firing then keeps showing "pending"
    config = make_config(home, checkpointer={"type": "sqlite"}, runs={"max_running_per_user": None})
    with running_gateway(config, model=scripted_model()) as one, running_gateway(config, model=scripted_model()) as two:
        sdk = get_client(url=one.url, api_key=None)
        try:
            threads = [(await sdk.threads.create())["thread_id"] for _ in range(6)]
            crons = [
                await sdk.crons.create_for_thread(t, "lead_agent", schedule=YEARLY, input=user_message("race"))
                for t in threads
            ]
            when = datetime.fromisoformat(crons[0]["next_run_date"])
            both = await asyncio.gather(asyncio.to_thread(tick, one, when), asyncio.to_thread(tick, two, when))
            fired = [f["cron_id"] for made in both for f in made]
            assert sorted(fired) == sorted(c["cron_id"] for c in crons)  # each once, by one gateway or the other
            for cron, thread_id in zip(crons, threads, strict=False):
                assert (await settled(sdk, cron["cron_id"]))["status"] == "success"
                assert len(await firings(sdk, cron["cron_id"])) == 1
                assert len(await sdk.runs.list(thread_id)) == 1
        finally:
            await sdk.aclose()


async def test_a_firing_left_unfinished_by_a_stopped_gateway_shows_how_its_run_ended(home) -> None:
    config = make_config(home, checkpointer={"type": "sqlite"})
    model = scripted_model()
    with running_gateway(config, model=model) as first:
        sdk = get_client(url=first.url, api_key=None)
        thread = await sdk.threads.create()
        cron = await sdk.crons.create_for_thread(
            thread["thread_id"], "lead_agent", schedule=YEARLY, input=user_message(f"{HOLD} never ends")
        )
        tick(first, cron["next_run_date"])
        await asyncio.to_thread(model.wait_until_held)
        assert (await firings(sdk, cron["cron_id"]))[0]["status"] in ("pending", "running")
        await sdk.aclose()
        gateway = first.app.state.gateway
        gateway.runs.listeners.remove(gateway.scheduler)  # as if the process died before writing the outcome
        first.stop()
    model.release()
    with running_gateway(config, model=scripted_model()) as second:
        sdk = get_client(url=second.url, api_key=None)
        try:
            assert (await firings(sdk, cron["cron_id"]))[0]["status"] in ("pending", "running")  # as left
            shown = await sdk.http.get(f"/runs/crons/{cron['cron_id']}")
            run = await sdk.runs.get(thread["thread_id"], shown["last_run"]["run_id"])
            assert shown["last_run"]["status"] == run["status"] != "running"
        finally:
            await sdk.aclose()


async def test_the_cli_creates_lists_and_deletes_crons_the_gateway_fires(tmp_path) -> None:
    (tmp_path / "config.yaml").write_text("home: .herdsman\ncheckpointer: {type: sqlite}\n")
    config = make_config(tmp_path / ".herdsman", checkpointer={"type": "sqlite"})
    with running_gateway(config, model=scripted_model()) as served:
        sdk = get_client(url=served.url, api_key=None)
        try:
            thread = (await sdk.threads.create())["thread_id"]
            made = await asyncio.to_thread(
                run_cli, "crons", "create", YEARLY, "--message", "from the cli", "--thread", thread, cwd=tmp_path
            )
            assert made.returncode == 0, made.stderr
            [cron] = await sdk.crons.search()
            assert cron["cron_id"] in made.stdout and cron["thread_id"] == thread
            tick(served, cron["next_run_date"])
            assert (await settled(sdk, cron["cron_id"]))["status"] == "success"
            listed = await asyncio.to_thread(run_cli, "crons", "list", cwd=tmp_path)
            assert cron["cron_id"] in listed.stdout and thread in listed.stdout and "success" in listed.stdout
            bad = await asyncio.to_thread(run_cli, "crons", "create", "every day", "-m", "x", cwd=tmp_path)
            assert bad.returncode == 1 and "0 9 * * 1-5" in bad.stderr
            gone = await asyncio.to_thread(run_cli, "crons", "delete", cron["cron_id"], cwd=tmp_path)
            assert gone.returncode == 0 and await sdk.crons.search() == []
            again = await asyncio.to_thread(run_cli, "crons", "delete", cron["cron_id"], cwd=tmp_path)
            assert again.returncode == 1 and "herdsman crons list" in again.stderr
        finally:
            await sdk.aclose()


async def test_a_user_has_at_most_max_crons_per_user(home) -> None:
    config = make_config(home, gateway={"max_crons_per_user": 2})
    with running_gateway(config, model=scripted_model()) as served:
        sdk = get_client(url=served.url, api_key=None)
        try:
            first = await sdk.crons.create("lead_agent", schedule=YEARLY)
            await sdk.crons.create("lead_agent", schedule=YEARLY)
            with pytest.raises(ConflictError, match="max_crons_per_user"):
                await sdk.crons.create("lead_agent", schedule=YEARLY)
            await sdk.crons.delete(first["cron_id"])
            await sdk.crons.create("lead_agent", schedule=YEARLY)
            assert await sdk.crons.count() == 2
        finally:
            await sdk.aclose()
