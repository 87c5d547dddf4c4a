"""``herdsman worker``: a process that executes queued runs and serves no HTTP.

It opens the same services as a gateway (``create_app(..., serve_requests=False)``: graph,
checkpointer, records, run queue, stream bridge, sandbox) and runs ``runs.workers`` workers that
claim runs from the queue, resume them from their last checkpoint and publish their events into
the stream bridge, from which the gateways relay them. Start any number, on any machine that
reaches the database (and Redis); SIGTERM or Ctrl-C stops it, and hands its runs in progress
back to the queue, where another worker claims them at once and resumes each from its last
checkpoint (a rolling restart interrupts no run).
"""

from __future__ import annotations

import asyncio
import signal
from typing import Any

from herdsman.config.schema import HerdsmanConfig
from herdsman.logs import get_logger
from herdsman_gateway.app import create_app

log = get_logger(__name__)


class WorkerConfigError(Exception):
    """The config cannot run a worker; the message says which key to change."""


def check_worker_config(config: HerdsmanConfig) -> None:
    """Refuse a config whose runs no other process could hand to this worker."""
    if config.checkpointer.type == "memory":
        raise WorkerConfigError(
            "checkpointer.type is memory: a worker only executes runs queued in a shared database; "
            "set checkpointer.type to sqlite (one machine) or postgres"
        )
    if config.runs.workers < 1:
        raise WorkerConfigError("runs.workers is 0: a worker process needs at least 1; set runs.workers: 2")


async def work(config: HerdsmanConfig, *, model: Any = None, stop: asyncio.Event | None = None) -> None:
    """Execute queued runs until ``stop`` is set (or SIGTERM/SIGINT when ``stop`` is None)."""
    check_worker_config(config)
    if stop is None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
    app = create_app(config, model=model, serve_requests=False)
    async with app.router.lifespan_context(app):
        await stop.wait()
        await app.state.gateway.runs.hand_over()
    log.info("worker_stopped")
