"""Red team: a gateway still hears cancels sent through other gateways after a long Redis outage.

Finding (h-rt30): the cancel listener (``RunManager.serve_cancel_requests``) reads a Redis
pub/sub channel; redis-py reconnects it for the bridge's retries (about 6 s), then raises. The
listener's task ended on that error, silently, and for the rest of the process's life a cancel
(or a thread delete) sent through another gateway never reached a run this gateway executed
(without a durable run queue, no other path carries it). The listener now subscribes again.
"""

from __future__ import annotations

import asyncio
import time

from langgraph_sdk import get_client

from herdsman.runtime.streaming.stream_bridge_redis import RedisStreamBridge
from tests.gateway.gateway_support import HOLD, running_gateway, scripted_model, user_message
from tests.gateway.redis_service import redis_process
from tests.support import make_config

# redis-py's reconnects made quicker (about 1 s in all, at most 2 s, not about 6 s): the outage
# below still outlasts them, as a long one does, in a third of the time.
RETRY_CAP_SECONDS = 0.2
OUTAGE_SECONDS = 3


async def test_a_cancel_from_another_gateway_reaches_the_run_after_a_long_redis_outage(home, monkeypatch) -> None:
    import herdsman.runtime.streaming.stream_bridge_redis as bridge_module

    monkeypatch.setattr(bridge_module, "RETRY_CAP_SECONDS", RETRY_CAP_SECONDS)
    assert OUTAGE_SECONDS > bridge_module.RETRIES * RETRY_CAP_SECONDS  # longer than every reconnect's wait
    model = scripted_model()
    with redis_process() as server:
        config = make_config(home, gateway={"stream_bridge": "redis", "redis_url": server.url})
        with running_gateway(config, model=model) as served:
            sdk = get_client(url=served.url, api_key=None)
            other = RedisStreamBridge(server.url)  # what another gateway sends a cancel with
            try:
                thread = await sdk.threads.create()
                run = await sdk.runs.create(thread["thread_id"], "lead_agent", input=user_message(f"wait {HOLD}"))
                await asyncio.to_thread(model.wait_until_held)
                server.stop()
                await asyncio.sleep(OUTAGE_SECONDS)  # longer than redis-py's reconnects of the listener
                server.start()
                status, deadline = "running", time.monotonic() + 20
                while status not in ("interrupted", "error", "success") and time.monotonic() < deadline:
                    await other.request_cancel(run["run_id"], "interrupt")  # a pub/sub message nobody hears is lost
                    await asyncio.sleep(1.0)
                    status = (await sdk.runs.get(thread["thread_id"], run["run_id"]))["status"]
            finally:
                model.release()
                await other.close()
                await sdk.aclose()
    assert status == "interrupted"
