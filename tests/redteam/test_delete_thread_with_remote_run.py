"""Red team: deleting a thread stops its run also when another process executes it.

Finding (durable run queue, #15): ``DELETE /threads/{id}`` (and ``POST /threads/prune``) cancelled
only the runs in the memory of the gateway that answered. A run that a ``herdsman worker`` or
another gateway executed (with ``runs.workers: 0`` gateways: every run) was never told: it went on
calling the model and tools for the deleted thread and wrote checkpoints and a run record under its
id again, so the owner's deleted conversation came back, and a thread made later with that id
(``POST /threads`` takes the client's id) started with it. The gateway now also cancels the runs
the queue has for the thread (through the bridge, and on the queue row for a worker that takes
the run over). A holder that does not stop within the wait keeps the thread from being deleted
(409, nothing deleted) rather than writing to it after the delete.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import ConflictError, NotFoundError

import herdsman.runtime.runs.run_cancel as runs_module
from herdsman.runtime.storage.record_store import gateway_db_path
from tests.gateway.gateway_support import HOLD, running_gateway, scripted_model, user_message
from tests.support import make_config


async def test_deleting_a_thread_cancels_the_run_another_process_holds(home, monkeypatch) -> None:
    monkeypatch.setattr(runs_module, "REMOTE_CANCEL_WAIT", 1.0)  # no other process here will answer
    config = make_config(home, checkpointer={"type": "sqlite"}, runs={"lease_seconds": 1, "poll_seconds": 0.2})
    model = scripted_model()
    with running_gateway(config, model=model) as served:
        sdk = get_client(url=served.url, api_key=None)
        manager = served.app.state.gateway.runs
        try:
            tid = (await sdk.threads.create())["thread_id"]
            run = await sdk.runs.create(tid, "lead_agent", input=user_message(f"hello {HOLD}"))
            await asyncio.to_thread(model.wait_until_held)
            with sqlite3.connect(gateway_db_path(config, "runs.sqlite")) as db:
                # another worker holds the run now (as a herdsman worker does): this process lets it go
                db.execute(
                    "UPDATE herdsman_run_queue SET worker_id = 'elsewhere', lease_until = ? WHERE run_id = ?",
                    (time.time() + 3600, run["run_id"]),
                )
                db.commit()
                async with asyncio.timeout(60):
                    while manager.active_runs(tid):
                        await asyncio.sleep(0.05)

                # the holder never answers (there is none here): the delete waits, then refuses and deletes nothing
                with pytest.raises(ConflictError) as refused:
                    await sdk.threads.delete(tid)
                assert "has not stopped yet" in refused.value.response.json()["detail"]
                assert (await sdk.threads.get(tid))["thread_id"] == tid

                row = db.execute(
                    "SELECT cancel_action FROM herdsman_run_queue WHERE run_id = ?", (run["run_id"],)
                ).fetchone()
                assert row is not None and row[0] == "interrupt", "the run held elsewhere was never asked to stop"
                # its holder died (the lease ran out): the delete goes through, and no worker resumes the run
                db.execute("UPDATE herdsman_run_queue SET lease_until = 0 WHERE run_id = ?", (run["run_id"],))
                db.commit()
                await sdk.threads.delete(tid)
            with pytest.raises(NotFoundError):
                await sdk.threads.get(tid)
        finally:
            model.release()
            await sdk.aclose()
