"""Helpers for cron tests: fire due crons by driving a gateway's scheduler, and wait for a firing's run."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from tests.gateway.gateway_support import RunningGateway

YEARLY = "0 0 1 1 *"  # far from any test's clock: only an explicit tick fires it
FINAL = {"success", "error", "interrupted", "timeout"}


def tick(gateway: RunningGateway, when: str | datetime) -> list[dict[str, Any]]:
    """Run the gateway's scheduler once, as if the clock said ``when``; the firings it made."""
    scheduler = gateway.app.state.gateway.scheduler
    moment = datetime.fromisoformat(when) if isinstance(when, str) else when
    return asyncio.run_coroutine_threadsafe(scheduler.tick(moment), scheduler.loop).result(30)


async def firings(client: Any, cron_id: str) -> list[dict[str, Any]]:
    """The cron's firings, newest first."""
    return await client.http.get(f"/runs/crons/{cron_id}/firings")


async def settled(client: Any, cron_id: str) -> dict[str, Any]:
    """The cron's latest firing once its run has ended."""
    for _ in range(500):
        found = await firings(client, cron_id)
        if found and found[0]["status"] in FINAL:
            return found[0]
        await asyncio.sleep(0.02)
    raise AssertionError(f"the run of cron {cron_id} did not end: {found}")
