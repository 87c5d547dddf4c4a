"""The cron scheduler: fires due crons, once each, and records every firing and its outcome.

Each :meth:`CronScheduler.tick` reads the crons due at ``now``, claims each with a
compare-and-set on its next run date that also records the firing (see ``cron_store.py``: of
several schedulers on one database, exactly one wins), then asks ``fire`` to start the run (the
gateway passes a function that starts it the way its runs routes do, as the cron's owner). A
cron that was due several times while no scheduler ran fires once, then waits for its next
time after now. The scheduler also listens to the run manager: when a fired run ends, its
status becomes the firing's outcome.

``tick(now)`` takes the time as an argument, so tests drive it without waiting for a clock;
:meth:`start` runs it every ``poll_seconds`` on the real clock until :meth:`stop`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from herdsman.logs import get_logger
from herdsman.runtime.crons.cron_schedule import iso, next_fire, parse_time
from herdsman.runtime.crons.cron_store import CronStore
from herdsman.runtime.runs.runs import FINAL_STATUSES, Run

log = get_logger(__name__)

Fire = Callable[[dict[str, Any]], Awaitable[Run]]


def _now() -> datetime:
    return datetime.now(UTC)


class CronScheduler:
    """Fires the crons of a :class:`CronStore` through ``fire``; a run listener for outcomes."""

    def __init__(self, store: CronStore, fire: Fire, *, poll_seconds: float = 5.0) -> None:
        self.store = store
        self.fire = fire
        self.poll_seconds = poll_seconds
        self._watched: dict[str, tuple[str, str]] = {}  # run_id -> (cron_id, scheduled_at)
        self._task: asyncio.Task | None = None
        self.loop: asyncio.AbstractEventLoop | None = None  # the loop it ticks on, once started
        self._writes: set[asyncio.Task] = set()

    async def tick(self, now: datetime | None = None) -> list[dict[str, Any]]:
        """Fire every cron due at ``now`` that this scheduler claims; the firings it made."""
        now = now or _now()
        fired = []
        for cron_id, scheduled_at in await self.store.due(now):
            try:
                firing = await self._fire_one(cron_id, scheduled_at, now)
            except Exception as exc:  # noqa: BLE001 - one broken cron must not keep the others from firing
                log.warning(
                    "cron_not_fired", cron_id=cron_id, scheduled_at=scheduled_at, error=f"{type(exc).__name__}: {exc}"
                )
                continue
            if firing is not None:
                fired.append(firing)
        return fired

    async def _fire_one(self, cron_id: str, scheduled_at: str, now: datetime) -> dict[str, Any] | None:
        cron = await self.store.get(cron_id)
        if cron is None or cron["next_run_date"] != scheduled_at:
            return None  # deleted or changed since it was read
        following = iso(next_fire(cron["schedule"], now, cron.get("timezone"), parse_time(cron.get("end_time"))))
        if not await self.store.claim(cron_id, scheduled_at, following, now):
            return None  # another scheduler fired it
        firing: dict[str, Any] = {"cron_id": cron_id, "scheduled_at": scheduled_at}
        try:
            run = await self.fire(cron)
        except Exception as exc:  # noqa: BLE001 - any refusal (thread gone, busy, bad input) is the firing's outcome
            message = getattr(exc, "detail", None) or str(exc) or type(exc).__name__
            await self.store.set_firing(cron_id, scheduled_at, "error", error=str(message))
            log.warning("cron_fire_failed", cron_id=cron_id, scheduled_at=scheduled_at, error=str(message))
            return {**firing, "status": "error", "error": str(message)}
        status = run.status
        if status not in FINAL_STATUSES:
            self._watched[run.run_id] = (cron_id, scheduled_at)
        await self.store.set_firing(
            cron_id, scheduled_at, status, run_id=run.run_id, thread_id=run.thread_id, error=_error_text(run)
        )
        log.info(
            "cron_fired",
            cron_id=cron_id,
            scheduled_at=scheduled_at,
            run_id=run.run_id,
            thread_id=run.thread_id,
            next_run_date=following,
        )
        return {**firing, "status": status, "run_id": run.run_id, "thread_id": run.thread_id}

    # -- the loop ----------------------------------------------------------------------------

    def start(self) -> None:
        """Tick every ``poll_seconds`` in the background until :meth:`stop`."""
        if self._task is None:
            self.loop = asyncio.get_running_loop()
            self._task = asyncio.create_task(self._loop(), name="cron-scheduler")

    async def _loop(self) -> None:
        while True:
            try:
                await self.tick()
            except Exception as exc:  # noqa: BLE001 - a database hiccup must not end the schedule
                log.warning("cron_tick_failed", error=f"{type(exc).__name__}: {exc}")
            await asyncio.sleep(self.poll_seconds)

    async def stop(self) -> None:
        """Stop ticking and wait for outcome writes in flight."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        if self._writes:
            await asyncio.gather(*self._writes, return_exceptions=True)

    # -- RunListener ---------------------------------------------------------------------------

    def run_started(self, run: Run) -> None:
        """A run began (a fired run shows ``running`` once it does)."""
        self._record(run, "running", forget=False)

    def run_finished(self, run: Run, seconds: float) -> None:
        """A run ended: a fired run's status becomes its firing's outcome."""
        self._record(run, run.status, forget=True)

    def _record(self, run: Run, status: str, *, forget: bool) -> None:
        key = self._watched.pop(run.run_id, None) if forget else self._watched.get(run.run_id)
        if key is None:
            return
        write = asyncio.create_task(self._write_outcome(key, status, _error_text(run)))
        self._writes.add(write)
        write.add_done_callback(self._writes.discard)

    async def _write_outcome(self, key: tuple[str, str], status: str, error: str | None) -> None:
        """Save a fired run's status as its firing's outcome (a failure is logged; the cron's
        ``last_run`` then catches up from the run's record when it is read)."""
        try:
            await self.store.set_firing(*key, status, error=error)
        except Exception as exc:  # noqa: BLE001 - see the docstring
            log.warning("cron_outcome_not_saved", cron_id=key[0], scheduled_at=key[1], status=status, error=str(exc))

    def model_tokens(self, run: Run, model: str, input_tokens: int, output_tokens: int) -> None:
        """Not used."""

    def tool_finished(self, run: Run, tool: str, failed: bool) -> None:
        """Not used."""

    def subagent_finished(self, run: Run, outcome: str) -> None:
        """Not used."""


def _error_text(run: Run) -> str | None:
    return (run.error or {}).get("message") if run.error else None
