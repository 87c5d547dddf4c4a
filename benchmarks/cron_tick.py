"""Cost of firing due crons, and proof that several schedulers on one database fire each once.

``--crons`` crons are made due at once in a fresh ``gateway.sqlite``; ``--schedulers``
schedulers, each with its own connection as separate gateway processes have, tick concurrently
until none is due. ``fire`` stands in for starting a run (it only counts), so the figures are
the scheduler's own cost: reading due crons, the compare-and-set claim, and the firing record.
``ms_per_firing`` is the wall time over the number of firings; ``duplicates`` (crons fired more
than once) and ``missed`` (not fired) must be 0. Prints one JSON line. Target: ``ms_per_firing``
well under ``gateway.cron_poll_seconds`` / 100, so a tick of 100 due crons ends long before the next.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections import Counter
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

from herdsman.config.loader import parse_config
from herdsman.runtime.crons.cron_scheduler import CronScheduler
from herdsman.runtime.crons.cron_store import open_cron_store

START = datetime(2030, 1, 1, tzinfo=UTC)


async def measure(crons: int, schedulers: int) -> dict:
    """Fire ``crons`` due crons with ``schedulers`` concurrent schedulers; the figures."""
    home = Path(tempfile.mkdtemp(prefix="cron-tick-"))
    config = parse_config(f"home: {home}\ncheckpointer: {{type: sqlite}}\n", env={})
    fired: Counter[str] = Counter()

    async def fire(cron: dict) -> SimpleNamespace:
        fired[cron["cron_id"]] += 1
        return SimpleNamespace(run_id=f"run-{sum(fired.values())}", thread_id="t", status="success", error=None)

    async with AsyncExitStack() as stack:
        stores = [await stack.enter_async_context(open_cron_store(config)) for _ in range(schedulers)]
        made = [
            await stores[0].create({"schedule": "0 * * * *", "assistant_id": "lead_agent"}, START) for _ in range(crons)
        ]
        due = START + timedelta(hours=1)
        started = time.perf_counter()
        await asyncio.gather(*(CronScheduler(store, fire).tick(due) for store in stores))
        seconds = time.perf_counter() - started
        left = len(await stores[0].due(due))
    return {
        "crons": crons,
        "schedulers": schedulers,
        "ms_per_firing": round(seconds * 1000 / max(1, sum(fired.values())), 3),
        "tick_seconds": round(seconds, 3),
        "duplicates": sum(1 for n in fired.values() if n > 1),
        "missed": sum(1 for c in made if c["cron_id"] not in fired) + left,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crons", type=int, default=500)
    parser.add_argument("--schedulers", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.crons, args.schedulers))))


if __name__ == "__main__":
    main()
