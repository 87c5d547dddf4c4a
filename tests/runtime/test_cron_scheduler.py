"""The cron store and scheduler on a real SQLite file: schedules, the compare-and-set claim that
lets only one of several schedulers fire a due cron, and firing records."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from herdsman.runtime.crons.cron_schedule import ScheduleError, check_schedule, check_timezone, next_fire, parse_time
from herdsman.runtime.crons.cron_scheduler import CronScheduler
from herdsman.runtime.crons.cron_store import open_cron_store
from tests.support import make_config

NOW = datetime(2030, 3, 10, 12, 0, tzinfo=UTC)


def test_schedules_are_checked_and_planned() -> None:
    assert check_schedule("  */15 * * * * ") == "*/15 * * * *"
    for bad in ("", "daily", "* * *", "61 * * * *", "* * * * * * *"):
        with pytest.raises(ScheduleError, match="five fields"):
            check_schedule(bad)
    with pytest.raises(ScheduleError, match="IANA"):
        check_timezone("Nowhere/City")
    assert next_fire("0 9 * * *", NOW) == datetime(2030, 3, 11, 9, 0, tzinfo=UTC)
    assert next_fire("0 9 * * *", NOW, "America/New_York") == datetime(2030, 3, 10, 13, 0, tzinfo=UTC)  # EDT
    assert next_fire("0 9 * * *", NOW, end_time=NOW + timedelta(hours=1)) is None
    assert parse_time("2030-01-01T00:00:00") == datetime(2030, 1, 1, tzinfo=UTC)


async def _stores(home, count: int):
    stack = AsyncExitStack()
    config = make_config(home, checkpointer={"type": "sqlite"})
    stores = [await stack.enter_async_context(open_cron_store(config)) for _ in range(count)]
    return stack, stores


async def test_of_two_claims_on_one_database_exactly_one_wins(home) -> None:
    stack, (one, two) = await _stores(home, 2)
    async with stack:
        crons = [await one.create({"schedule": "*/5 * * * *", "assistant_id": "lead_agent"}, NOW) for _ in range(20)]
        due = NOW + timedelta(minutes=5)
        seen_one, seen_two = await one.due(due), await two.due(due)
        assert sorted(seen_one) == sorted(seen_two) == sorted((c["cron_id"], c["next_run_date"]) for c in crons)
        following = (NOW + timedelta(minutes=10)).isoformat()
        for cron_id, seen in seen_one:
            won = await asyncio.gather(
                one.claim(cron_id, seen, following, due), two.claim(cron_id, seen, following, due)
            )
            assert sorted(won) == [False, True]
        assert await one.due(due) == []


async def test_two_schedulers_fire_each_due_cron_once(home) -> None:
    stack, (one, two) = await _stores(home, 2)
    fired: list[str] = []

    async def fire(cron):
        fired.append(cron["cron_id"])
        await asyncio.sleep(0)
        return SimpleNamespace(run_id=f"run-{len(fired)}", thread_id="t", status="success", error=None)

    async with stack:
        crons = [await one.create({"schedule": "0 * * * *", "assistant_id": "lead_agent"}, NOW) for _ in range(10)]
        first, second = CronScheduler(one, fire), CronScheduler(two, fire)
        due = NOW + timedelta(hours=3)  # missed three times: fires once, then waits for the next hour after now
        made = await asyncio.gather(first.tick(due), second.tick(due), first.tick(due), second.tick(due))
        assert sorted(fired) == sorted(c["cron_id"] for c in crons)
        assert sum(len(m) for m in made) == 10
        for cron in crons:
            assert [f["status"] for f in await one.firings(cron["cron_id"])] == ["success"]
            assert (await two.get(cron["cron_id"]))["next_run_date"] == (due + timedelta(hours=1)).isoformat(
                timespec="microseconds"
            )


async def test_a_failed_fire_is_recorded_and_the_schedule_goes_on(home) -> None:
    stack, (store,) = await _stores(home, 1)

    async def fire(cron):
        raise RuntimeError("thread is gone")

    async with stack:
        cron = await store.create({"schedule": "0 * * * *", "assistant_id": "lead_agent"}, NOW)
        made = await CronScheduler(store, fire).tick(NOW + timedelta(hours=1))
        assert made[0]["status"] == "error" and made[0]["error"] == "thread is gone"
        assert [(f["status"], f["error"]) for f in await store.firings(cron["cron_id"])] == [
            ("error", "thread is gone")
        ]
        assert (await store.get(cron["cron_id"]))["next_run_date"] is not None


async def test_a_broken_cron_does_not_keep_the_others_from_firing(home) -> None:
    stack, (store,) = await _stores(home, 1)
    fired: list[str] = []

    async def fire(cron):
        fired.append(cron["cron_id"])
        return SimpleNamespace(run_id="r", thread_id="t", status="success", error=None)

    async with stack:
        broken = await store.create({"schedule": "0 * * * *", "assistant_id": "lead_agent"}, NOW)
        fine = await store.create({"schedule": "0 * * * *", "assistant_id": "lead_agent"}, NOW)
        await store.sql.execute(
            "UPDATE herdsman_crons SET data = ? WHERE cron_id = ?",
            ('{"schedule": "not a schedule", "payload": {}}', broken["cron_id"]),
        )
        made = await CronScheduler(store, fire).tick(NOW + timedelta(hours=1))
        assert fired == [fine["cron_id"]] and [m["cron_id"] for m in made] == [fine["cron_id"]]
