"""The workers of a process: leases renewed, runs claimed from the durable queue and taken over.

One job: keep runs alive across processes. Every run is a row of the run queue (``run_queue.py``)
held under a lease by the process executing it; this process renews its leases (a run whose lease
another worker took meanwhile is stopped here, so it never executes in two places), and its
``runs.workers`` workers claim runs whose lease ran out (their process died) or that wait for a
worker, and execute each (:class:`~herdsman.runtime.runs.run_executor.RunExecutor`), resumed from the
thread's last checkpoint when it had started; after ``runs.max_attempts`` starts a run ends as an
error. At start-up, :meth:`RunWorkers.recover` ends the runs a previous process left unfinished
that no queue row keeps.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any, Literal, cast

from herdsman.logs import get_logger
from herdsman.runtime.runs.run_executor import RunExecutor
from herdsman.runtime.runs.run_queue import QueuedRun
from herdsman.runtime.runs.run_table import RunTable
from herdsman.runtime.runs.run_types import (
    FINAL_STATUSES,
    RECOVER_SETTLE,
    RESTART_MESSAGE,
    WORKER_LOST_MESSAGE,
    Run,
    RunSpec,
    error_text,
)
from herdsman.runtime.storage.threads import utc_now

log = get_logger(__name__)


class RunWorkers:
    """The leases and workers of one process (see the module docstring)."""

    def __init__(self, executor: RunExecutor, table: RunTable, free_slot: Callable[[], bool]) -> None:
        """``free_slot`` says whether a run claimed now would execute at once in this process."""
        self.executor = executor
        self.table = table
        self.queue = executor.queue
        self.threads = executor.threads
        self.config = executor.config
        self.worker_id = executor.worker_id
        self._free_slot = free_slot
        self.tasks: list[asyncio.Task] = []

    async def stop(self) -> None:
        """Stop the workers and the lease keeper (runs they started go on until stopped)."""
        for task in self.tasks:
            task.cancel()
        if self.tasks:
            await asyncio.wait(self.tasks)
        self.tasks = []

    def start(self, serve_cancels: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """With a durable queue: renew this process's leases, and run ``runs.workers`` workers
        that take over runs whose process died. With run limits, the workers also start the runs
        that wait in the queue for their user's turn, so a memory queue needs them too (without
        them a user's runs past ``runs.max_running_per_user`` waited for ever). ``serve_cancels``
        makes the task that serves the cancels asked on this process's queue rows. Stopped by
        :meth:`stop`."""
        if not (self.queue.durable or self.config.runs.limited) or self.tasks:
            return
        self.tasks.append(asyncio.create_task(self._renew_leases(), name="run-leases"))
        self.tasks.append(asyncio.create_task(serve_cancels(), name="run-cancels"))
        for number in range(self.config.runs.workers):
            self.tasks.append(asyncio.create_task(self._work(), name=f"run-worker-{number}"))
        log.info("run_workers_started", worker_id=self.worker_id, workers=self.config.runs.workers)

    async def _renew_leases(self) -> None:
        """Renew every lease this process holds, every third of ``runs.lease_seconds``; a run
        whose lease another worker took meanwhile (this process stalled, or lost the database
        longer than a lease) is stopped here, so it never executes in two places."""
        while True:
            await asyncio.sleep(self.config.runs.lease_seconds / 3)
            asked = time.monotonic()
            try:
                renewed = await self.queue.renew(self.worker_id, self.executor.lease_end())
            except Exception as exc:  # noqa: BLE001 - try again at the next beat
                log.warning("run_leases_not_renewed", worker_id=self.worker_id, error=error_text(exc))
                continue
            for run in list(self.table.runs.values()):
                held = run.held_since is not None and run.held_since < asked
                if held and run.status not in FINAL_STATUSES and run.run_id not in renewed and run.task is not None:
                    run.lease_lost = True
                    run.task.cancel()
                    log.warning("run_lease_lost", run_id=run.run_id, thread_id=run.thread_id, worker_id=self.worker_id)

    async def _work(self) -> None:
        """One worker: claim a run whose lease ran out, execute it to its end, repeat."""
        while True:
            if not self._free_slot():  # with run limits: the run waits as a row, not in this process
                await asyncio.sleep(self.config.runs.poll_seconds)
                continue
            try:
                claimed = await self.queue.claim(
                    self.worker_id, time.time(), self.executor.lease_end(), self.config.runs.max_running_per_user
                )
            except Exception as exc:  # noqa: BLE001 - the database may come back
                log.warning("run_claim_failed", worker_id=self.worker_id, error=error_text(exc))
                claimed = None
            if claimed is None:
                await asyncio.sleep(self.config.runs.poll_seconds)
                continue
            try:
                run = await self.take_over(claimed)
            except Exception as exc:  # noqa: BLE001 - one bad row must not stop the worker
                await self.drop_unreadable(claimed, exc)
                continue
            if run is not None and run.task is not None:
                await asyncio.wait([run.task])

    async def drop_unreadable(self, claimed: QueuedRun, exc: Exception) -> None:
        """End a claimed run that cannot be taken over (its row cannot be read back as a run,
        as after an upgrade that changed what a run holds) as an error, and drop its row."""
        log.error("run_not_taken_over", run_id=claimed.run_id, thread_id=claimed.thread_id, error=error_text(exc))
        try:
            record = await self.threads.get_run(claimed.thread_id, claimed.run_id)
            if record is not None and record.get("status") not in FINAL_STATUSES:
                message = (
                    f"the run could not be resumed ({type(exc).__name__}: {error_text(exc)}); "
                    "start a new run on the thread"
                )
                record.update(
                    status="error", updated_at=utc_now(), error={"error": "RunNotResumable", "message": message}
                )
                await self.threads.put_run(record)
                await self.threads.update(claimed.thread_id, status="error")
            await self.queue.remove(claimed.run_id)
        except Exception as store_exc:  # noqa: BLE001 - its lease runs out and it is tried again
            log.warning("run_not_dropped", run_id=claimed.run_id, error=error_text(store_exc))

    async def take_over(self, claimed: QueuedRun) -> Run | None:
        """Execute a run claimed from the queue: resumed from its last checkpoint when it had
        started, or failed when it was started ``runs.max_attempts`` times already."""
        mine = self.table.get(claimed.run_id)
        if mine is not None and mine.status not in FINAL_STATUSES:
            return None  # this process still executes it (its lease was renewed late)
        record = await self.threads.get_run(claimed.thread_id, claimed.run_id)
        if record is None or record.get("status") in FINAL_STATUSES:
            await self.queue.remove(claimed.run_id)  # its thread was deleted, or it ended just before its process did
            log.info("run_dropped_from_queue", run_id=claimed.run_id, thread_id=claimed.thread_id)
            return None
        now = utc_now()
        run = Run(
            run_id=claimed.run_id,
            spec=RunSpec(**claimed.spec),
            created_at=claimed.created_at,
            updated_at=now,
            checkpoint_before=claimed.checkpoint_before,
            attempt=claimed.attempts,
            held_since=time.monotonic(),
        )
        run.saved.set()
        self.table.add(run)
        # a run whose worker died is a warning; one queued by a process without workers is routine
        report = log.warning if claimed.status == "running" else log.info
        report(
            "run_taken_over" if claimed.status == "running" else "run_claimed",
            run_id=run.run_id,
            thread_id=run.thread_id,
            attempts=claimed.attempts,
            previous_worker=claimed.worker_id,
        )
        run.executed = claimed.status == "running"
        if claimed.cancel_action in ("interrupt", "rollback"):
            run.cancel_action = cast(
                Literal["interrupt", "rollback"], claimed.cancel_action
            )  # cancelled while no worker held it: not resumed
            # ended by a task of its own, as every run here: a join that finds it waits for that task,
            # not only for its status (its input is written before the status turns final)
            run.task = asyncio.create_task(self.executor.end_cancelled(run), name=f"run-{run.run_id}")
            await run.task
            return run
        if claimed.attempts >= self.config.runs.max_attempts:
            run.error = {"error": "WorkerLost", "message": WORKER_LOST_MESSAGE.format(attempts=claimed.attempts)}
            await self.executor.set_status(run, "error")
            await self.executor.publish(run, "error", run.error)
            await self.executor.end(run, 0.0)
            return run
        if run.executed:  # a start again (the first start's metadata event went out when it was accepted)
            await self.executor.publish(run, "metadata", {"run_id": run.run_id, "attempt": claimed.attempts + 1})
        run.task = asyncio.create_task(
            self.executor.execute(run, [], taken_over=True, resume=claimed.status == "running"),
            name=f"run-{run.run_id}",
        )
        self.table.tell_watchers(run)
        return run

    async def _unqueued_runs(self) -> list[dict[str, Any]]:
        """Records of unfinished runs the durable queue does not have (all of them without one)."""
        unqueued = []
        for record in await self.threads.unfinished_runs():
            if self.queue.durable and await self.queue.get(record["run_id"]) is not None:
                log.info("run_left_to_workers", run_id=record["run_id"], thread_id=record["thread_id"])
                continue
            unqueued.append(record)
        return unqueued

    async def recover(self) -> int:
        """Mark runs a previous process left unfinished as errors, unless the durable queue
        still has them (a live worker holds them, or a worker will take them over when their
        lease runs out); returns how many were lost.

        With a durable queue other processes are alive: one may be between writing a new run's
        record and queueing it, or may end a run (drop its row) between our reading its record
        and looking at the queue; such a record is looked at again after ``RECOVER_SETTLE``
        seconds and left alone if it changed or was queued meanwhile (found by the chaos test: a
        worker that restarted marked lost a run that a gateway was queueing or a worker ending).
        """
        lost = await self._unqueued_runs()
        if lost and self.queue.durable:
            await asyncio.sleep(RECOVER_SETTLE)
            again = {r["run_id"]: r for r in await self._unqueued_runs()}
            lost = [r for r in lost if r == again.get(r["run_id"])]
        for record in lost:
            record.update(
                status="error", updated_at=utc_now(), error={"error": "GatewayRestarted", "message": RESTART_MESSAGE}
            )
            await self.threads.put_run(record)
            await self.threads.update(record["thread_id"], status="idle")
        if lost:
            log.warning("runs_lost_in_restart", count=len(lost))
        return len(lost)
