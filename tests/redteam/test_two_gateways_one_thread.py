"""Red team: two gateways on one database never execute two runs of one thread side by side.

Finding (durable run queue, #15): whether a thread was busy was decided in the memory of the
gateway that took the request. With two gateways on one database (each with its in-process
workers, the default), a run sent to the second while the first executed one on the same thread
started at once beside it: ``multitask_strategy: reject`` was not honoured, ``enqueue`` did not
wait, and both runs wrote the thread's checkpoints at the same time. A new run now looks at the
queue: behind a run another process holds, it waits in the queue (or is refused, with reject).
"""

from __future__ import annotations

import asyncio

import httpx

from tests.gateway.gateway_support import HOLD, running_gateway, scripted_model, user_message
from tests.support import make_config


async def test_a_run_sent_to_another_gateway_waits_for_the_thread_s_run(home) -> None:
    config = make_config(home, checkpointer={"type": "sqlite"}, runs={"lease_seconds": 3, "poll_seconds": 0.2})
    first_model, second_model = scripted_model(), scripted_model()
    with running_gateway(config, model=first_model) as first, running_gateway(config, model=second_model) as second:
        try:
            async with httpx.AsyncClient(timeout=30) as http:
                tid = (await http.post(f"{first.url}/threads", json={})).json()["thread_id"]
                held = await http.post(
                    f"{first.url}/threads/{tid}/runs",
                    json={"assistant_id": "lead_agent", "input": user_message(f"one {HOLD}")},
                )
                assert held.status_code == 200, held.text
                await asyncio.to_thread(first_model.wait_until_held)

                refused = await http.post(
                    f"{second.url}/threads/{tid}/runs",
                    json={"assistant_id": "lead_agent", "input": user_message("two"), "multitask_strategy": "reject"},
                )
                assert refused.status_code == 409, refused.text  # the thread is busy, whichever gateway is asked
                assert not second.app.state.gateway.runs.active_runs(tid)
        finally:
            first_model.release()
            second_model.release()
