"""Red team: a thread deleted through one gateway while another gateway executes its run.

Finding (durable run queue, #14): with two gateways on one database and no Redis (the memory
stream bridge), a cancel asked through one gateway reached the other only through the bridge,
which does not cross processes. ``DELETE /threads/{id}`` sent to the first gateway waited for
the run the second executed, gave up, and deleted the thread; the run went on and wrote its
checkpoints under the deleted id, so whoever made a thread with that id next, another user too,
read the first owner's conversation in ``GET /threads/{id}/state``. A holder now also reads the
cancels asked on its queue rows (every ``runs.poll_seconds``), so the run stops before the
deleting gateway deletes the thread.
"""

from __future__ import annotations

import asyncio

import httpx

import herdsman.runtime.runs.run_cancel as runs_module
from tests.gateway.gateway_support import HOLD_MID, running_gateway, scripted_model, user_message
from tests.support import make_config

ANA, BO = "key-ana-0001", "key-bo-0002"
TID = "6f1c2d3e-4b5a-4c6d-8e7f-0011223344dd"
SECRET = "ana private launch codes"


async def test_a_run_on_another_gateway_stops_and_leaves_nothing_in_the_deleted_thread(home, monkeypatch) -> None:
    monkeypatch.setattr(runs_module, "REMOTE_CANCEL_WAIT", 10.0)  # a delete waits this long for the run to stop
    config = make_config(
        home,
        checkpointer={"type": "sqlite"},
        gateway={"api_keys": [ANA, BO]},
        runs={"lease_seconds": 3, "poll_seconds": 0.2},
    )
    first_model, second_model = scripted_model(), scripted_model()
    with running_gateway(config, model=first_model) as first, running_gateway(config, model=second_model) as second:
        try:
            async with httpx.AsyncClient(timeout=60) as http:
                ana, bo = {"x-api-key": ANA}, {"x-api-key": BO}
                assert (
                    await http.post(f"{second.url}/threads", json={"thread_id": TID}, headers=ana)
                ).status_code == 200
                started = await http.post(
                    f"{second.url}/threads/{TID}/runs",
                    headers=ana,
                    json={
                        "assistant_id": "lead_agent",
                        "input": user_message(f"{SECRET} {HOLD_MID}"),
                        "stream_mode": ["values", "messages-tuple"],
                    },
                )  # streamed: its words so far are kept when it stops
                assert started.status_code == 200, started.text
                await asyncio.to_thread(second_model.wait_until_held)  # streaming its answer, on the second gateway

                assert (await http.delete(f"{first.url}/threads/{TID}", headers=ana)).status_code == 204
                assert not second.app.state.gateway.runs.active_runs(TID), "the run was stopped before the delete ended"
                second_model.release()

                assert (await http.post(f"{first.url}/threads", json={"thread_id": TID}, headers=bo)).status_code == 200
                state = await http.get(f"{first.url}/threads/{TID}/state", headers=bo)
                history = await http.post(f"{first.url}/threads/{TID}/history", json={"limit": 10}, headers=bo)
                runs = await http.get(f"{first.url}/threads/{TID}/runs", headers=bo)
        finally:
            first_model.release()
            second_model.release()
    assert state.status_code == 200 and SECRET not in state.text, state.text
    assert history.status_code == 200 and history.json() == [], history.text
    assert runs.status_code == 200 and runs.json() == [], runs.text
