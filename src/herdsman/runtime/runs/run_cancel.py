"""The cancel relay: a stop reaches a run wherever it executes.

One job: cancel runs. A run of this process is stopped through its task (a run that had not
started is ``interrupted`` at once, as LangGraph's server shows it; its task still writes its
input in its turn). A run another process executes is asked through the stream bridge (Redis
between gateways) and through its queue row (read every ``runs.poll_seconds`` by the process
holding it: without a shared bridge nothing else reaches it); a run no live process holds
(waiting for a worker, or its worker died) is claimed here and ended at once, unless it waits
behind another run of its thread and keeps its input.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from herdsman.logs import get_logger
from herdsman.runtime.runs.run_executor import RunExecutor
from herdsman.runtime.runs.run_recorder import QueuedRunRecorder
from herdsman.runtime.runs.run_table import RunTable
from herdsman.runtime.runs.run_types import (
    FINAL_STATUSES,
    REMOTE_CANCEL_WAIT,
    CancelAction,
    Run,
    RunNotFoundError,
    RunSpec,
    error_text,
    keeps_input,
)
from herdsman.runtime.runs.run_workers import RunWorkers
from herdsman.runtime.streaming.stream_bridge import RESUBSCRIBE_FIRST_SECONDS, RESUBSCRIBE_MAX_SECONDS

log = get_logger(__name__)


class CancelRelay:
    """Cancels runs of this process and asks other processes to cancel theirs (see the module docstring)."""

    def __init__(
        self, executor: RunExecutor, table: RunTable, recorder: QueuedRunRecorder, workers: RunWorkers
    ) -> None:
        """The run manager's parts a cancel needs: the executor (statuses, leases), the table of
        this process's runs, the recorder (runs being queued) and the workers (runs taken over)."""
        self.executor = executor
        self.table = table
        self.recorder = recorder
        self.workers = workers
        self.queue = executor.queue
        self.threads = executor.threads
        self.bridge = executor.bridge
        self.config = executor.config
        self.worker_id = executor.worker_id

    async def cancel(
        self, thread_id: str, run_id: str, *, action: CancelAction = "interrupt", wait: bool = False
    ) -> dict[str, Any]:
        """Stop a run. ``rollback`` also restores the thread to where it was before the run."""
        run = self.table.get(run_id)
        if run is None or run.thread_id != thread_id:
            return await self._cancel_elsewhere(thread_id, run_id, action, wait)
        in_progress = run.status not in FINAL_STATUSES
        if in_progress:
            stopping = run.cancel_action is not None  # a second cancel must not cut short the first's cleanup
            run.cancel_action = "rollback" if "rollback" in (run.cancel_action, action) else action
            if run.task is not None and run.began and not stopping:
                run.task.cancel()  # a task that has not begun sees cancel_action first thing (see _execute)
            if run.status == "pending" and not stopping:
                # as LangGraph's server: a run that had not started is interrupted at once (its task
                # still writes its input in its turn: the thread's next runs wait for that task)
                await self.executor.set_status(run, "interrupted")
            log.info("run_cancel_requested", run_id=run_id, thread_id=thread_id, action=run.cancel_action)
        if (wait or action == "rollback") and run.task is not None:
            await asyncio.wait([run.task])  # a rollback is done by the run's task as it ends (see _end)
        return run.to_dict()

    async def _cancel_elsewhere(self, thread_id: str, run_id: str, action: CancelAction, wait: bool) -> dict[str, Any]:
        """Cancel a run another gateway process executes (through the bridge), or report a finished one."""
        await self.recorder.recorded(run_id)
        record = await self.threads.get_run(thread_id, run_id)
        if record is None:
            raise RunNotFoundError(
                f"no run {run_id} on thread {thread_id}; list runs with GET /threads/{thread_id}/runs"
            )
        if record.get("status") in FINAL_STATUSES:
            return record
        try:
            await self.queue.request_cancel(run_id, action)  # for a worker that takes it over (its own died)
            # a run no live process holds (waiting for a worker, or its worker died) is ended here at once,
            # unless it waits behind another run of its thread and keeps its input: that input goes
            # into the thread after what the runs ahead wrote, by the worker that claims it in turn
            taken = (
                None
                if await self._waits_its_turn(thread_id, run_id, action)
                else await self.queue.take(run_id, self.worker_id, time.time(), self.executor.lease_end())
            )
        except Exception as exc:  # noqa: BLE001 - the live holder still hears it through the bridge
            log.warning("run_cancel_not_queued", run_id=run_id, error=error_text(exc))
            taken = None
        if taken is not None:
            try:
                ended = await self.workers.take_over(taken)
            except Exception as exc:  # noqa: BLE001 - a row that cannot be read back as a run ends as an error
                await self.workers.drop_unreadable(taken, exc)
                return await self.threads.get_run(thread_id, run_id) or record
            log.info("run_cancelled_in_queue", run_id=run_id, thread_id=thread_id, action=action)
            return ended.to_dict() if ended is not None else record
        await self.bridge.request_cancel(run_id, action)
        log.info("run_cancel_forwarded", run_id=run_id, thread_id=thread_id, action=action)
        for _ in range(int(REMOTE_CANCEL_WAIT / 0.05) if wait else 0):
            await asyncio.sleep(0.05)
            latest = await self.threads.get_run(thread_id, run_id)
            if latest is None or latest.get("status") in FINAL_STATUSES:
                return latest or {**record, "status": "interrupted"}
        return record

    async def _waits_its_turn(self, thread_id: str, run_id: str, action: CancelAction) -> bool:
        """Whether a queued run stopped with ``action`` keeps its input and another run of its
        thread comes before it in the queue."""
        rows = await self.queue.thread_runs(thread_id)
        row = next((q for q in rows if q.run_id == run_id), None)
        if row is None or rows[0].run_id == run_id:
            return False
        probe = Run(
            run_id=run_id,
            spec=RunSpec(**row.spec),
            created_at=row.created_at,
            updated_at=row.created_at,
            cancel_action=action,
        )
        return keeps_input(probe)

    async def serve_bridge_requests(self) -> None:
        """Cancel this process's runs when another process asks through the bridge (runs until
        cancelled). When the bridge fails (Redis away longer than its client reconnects), it
        listens again, 0.5 s later, then twice as long each time up to 5 s, until the bridge is
        closed: a listener that ended there left the process deaf to other gateways' cancels."""
        delay = RESUBSCRIBE_FIRST_SECONDS  # the backoff of stream_bridge.follow_run
        while True:
            try:
                await self.serve(self.bridge.cancel_requests())
                return
            except Exception as exc:  # noqa: BLE001 - listened to again unless the bridge was closed
                if self.bridge.closed:
                    return
                log.warning(
                    "run_cancel_listener_failed", worker_id=self.worker_id, retry_in=delay, error=error_text(exc)
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, RESUBSCRIBE_MAX_SECONDS)

    async def queued_requests(self) -> AsyncIterator[tuple[str, str]]:
        """Every ``runs.poll_seconds``, the cancels asked on the queue rows of this process's runs:
        without a shared bridge (Redis) no other process reaches them otherwise, and a thread
        deleted through another gateway had its run go on writing its checkpoints (red-team finding)."""
        while True:
            await asyncio.sleep(self.config.runs.poll_seconds)
            try:
                asked = await self.queue.cancels_asked(self.worker_id)
            except Exception as exc:  # noqa: BLE001 - asked again at the next beat
                log.warning("run_cancels_not_read", worker_id=self.worker_id, error=error_text(exc))
                continue
            for request in asked.items():
                yield request

    async def serve(self, requests: AsyncIterator[tuple[str, str]]) -> None:
        """Cancel this process's runs named by ``requests`` (run id, action), each once per action."""
        pending: set[asyncio.Task] = set()
        async for run_id, action in requests:
            run = self.table.get(run_id)
            if run is None or run.status in FINAL_STATUSES or run.cancel_action == action:
                continue
            task = asyncio.create_task(
                self.cancel(run.thread_id, run_id, action="rollback" if action == "rollback" else "interrupt")
            )
            pending.add(task)
            task.add_done_callback(pending.discard)
