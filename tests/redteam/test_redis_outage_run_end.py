"""Red team: a run that ends while Redis is down must not leave its followers waiting for ever.

Finding (h-rt30): a run whose events cannot be written for longer than the bridge's retries
(about 6 s) fails, and its ``end`` event cannot be written either. ``follow_run`` subscribes
again once Redis is back, but nothing will ever come on the run's stream: the thread's event log
(``threads.stream``), ``GET /threads/{id}/stream`` and a chat channel's follow-up waited for
ever, and the event log, stuck on that run, never showed the thread's later runs. Followers now
stop once the run's record is final and its stream stayed quiet for a heartbeat.
"""

from __future__ import annotations

import asyncio
import time

from herdsman.runtime.runs.runs import FINAL_STATUSES
from tests.gateway.gateway_support import held_turn_on_own_redis, scripted_model, user_message

TIMEOUT = 30


async def _until_root_end(thread, run_id: str) -> list[dict]:
    """The thread's lifecycle events up to the end of the root of ``run_id``."""
    events = []
    async with asyncio.timeout(TIMEOUT):
        async for event in thread.subscribe(["lifecycle"]):
            events.append(event)
            data = event["params"]["data"]
            if (
                str(event.get("event_id", "")).startswith(run_id)
                and not event["params"]["namespace"]
                and data.get("event") in ("completed", "failed", "interrupted")
            ):
                return events
    raise AssertionError(f"the stream ended before run {run_id} did: {events}")


async def test_a_run_that_ended_while_redis_was_down_ends_its_followers(home, monkeypatch) -> None:
    import herdsman.runtime.streaming.stream_bridge_redis as bridge_module

    # redis-py's reconnects made quicker (about 1 s in all, not about 6 s): the run's events
    # still fail for good while Redis is down, sooner
    monkeypatch.setattr(bridge_module, "RETRY_CAP_SECONDS", 0.2)
    model = scripted_model()
    async with held_turn_on_own_redis(home, model, heartbeat_seconds=1) as held:
        held.redis.stop()
        model.release()  # the run goes on, cannot write its events, fails and ends
        run = held.served.app.state.gateway.runs.table.runs[held.started["run_id"]]
        deadline = time.monotonic() + 60
        while not (run.task.done() and run.status in FINAL_STATUSES):  # its end event was lost
            assert time.monotonic() < deadline, "the run did not end while Redis was down"
            await asyncio.sleep(0.5)
        held.redis.start()
        first = await _until_root_end(held.thread, held.started["run_id"])
        again = await held.thread.run.start(input=user_message("and again"))  # the log follows the next run
        second = await _until_root_end(held.thread, again["run_id"])
    assert first[-1]["params"]["data"]["event"] in ("failed", "completed")
    assert second[-1]["params"]["data"]["event"] == "completed"


async def test_a_thread_log_that_gave_up_following_a_run_still_shows_its_end(home, monkeypatch) -> None:
    """Redis away longer than ``follow_run`` waits (5 minutes; 2 s here): the thread's event log
    gave up the run's events and left the run open in the log for ever: its stream never showed
    the run's end (and a reader without ``since`` started at that run for ever). The log now
    closes the run once it is over."""
    from functools import partial

    import herdsman.runtime.streaming.thread_events as thread_events_module
    from herdsman.runtime.streaming.stream_bridge import follow_run

    monkeypatch.setattr(thread_events_module, "follow_run", partial(follow_run, give_up_after=2.0))
    model = scripted_model()
    async with held_turn_on_own_redis(home, model, heartbeat_seconds=1) as held:
        held.redis.stop()
        await asyncio.sleep(5)  # the log gives up following the run
        held.redis.start()
        model.release()  # the run goes on and ends well
        events = await _until_root_end(held.thread, held.started["run_id"])
    assert events[-1]["params"]["data"]["event"] == "completed"
