"""The recorder of runs queued for workers: their records written in batches, then offered.

One job: a run that waits in the queue for a worker (this process has no free slot or no
workers, or the thread's runs are held elsewhere) has its ``metadata`` event sent at once; its
record and its thread's busy status are written by one task for every run waiting at once (the
record store batches what is asked together), and the runs are then offered to the workers in
one statement. A run whose records cannot be written is taken back, row and record, and its
stream ends with an ``error`` event.
"""

from __future__ import annotations

import asyncio

from herdsman.agents.lead import LEAD_AGENT_NAME
from herdsman.logs import get_logger
from herdsman.runtime.runs.run_executor import RunExecutor
from herdsman.runtime.runs.run_table import RunTable
from herdsman.runtime.runs.run_types import OFFER_BATCH, Run, error_text
from herdsman.runtime.streaming.stream_bridge import END_EVENT

log = get_logger(__name__)


class QueuedRunRecorder:
    """Writes the records of the runs this process queues for workers (see the module docstring)."""

    def __init__(self, executor: RunExecutor, table: RunTable) -> None:
        """``executor`` publishes the runs' events; ``table`` tells the threads' watchers."""
        self.executor = executor
        self.table = table
        self.queue = executor.queue
        self.threads = executor.threads
        self.recording: dict[str, Run] = {}  # runs queued for workers whose records are being written
        self._to_record: list[Run] = []  # those of them the task has not taken yet
        self._task: asyncio.Task | None = None  # the task writing them (see _record_all)

    def get(self, run_id: str) -> Run | None:
        """The run ``run_id`` while its records are being written, else None."""
        return self.recording.get(run_id)

    def unsaved(self, thread_id: str) -> list[Run]:
        """The thread's queued runs whose records are being written."""
        return [r for r in self.recording.values() if r.thread_id == thread_id]

    def busy_task(self) -> asyncio.Task | None:
        """The task writing records now, if any (a shutdown waits for it)."""
        return self._task if self._task is not None and not self._task.done() else None

    async def queue_run(self, run: Run) -> Run:
        """A run whose row waits in the queue for a worker: send its ``metadata`` event; its
        records are written and it is offered to the workers by :meth:`_record_queued_runs`
        (``run.saved`` is set when done, ``run.save_error`` says why it failed), so a streamed
        run's first event waits for its queue row only. Meanwhile :meth:`get`, :meth:`cancel`
        and :meth:`join` find it here."""
        try:
            await self.executor.publish_metadata(run)
        except BaseException:
            await self.unqueue(run)  # not created: the client gets the error, and nothing is left held
            raise
        self.recording[run.run_id] = run
        self._to_record.append(run)
        self.table.tell_watchers(run)  # a thread's event log follows it through the bridge
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._record_all(), name="run-recorder")
        return run

    async def _record_all(self) -> None:
        """Write the records of the runs queued for workers, every run waiting at once (the
        record store batches what is asked together), then offer them to the workers in one
        statement; again while runs arrived meanwhile. A burst of new runs costs a few
        statements, not three per run, and its first events do not queue up behind them.

        Queued first (by the admission), held by no process but claimable by none until its
        records are written and it is offered: a process that dies in between leaves a row
        without a record, which the worker that claims it once its lease ran out drops, never a
        record without a row, which no worker would execute.
        """
        while self._to_record:
            batch, self._to_record = self._to_record, []
            recorded = [
                run for run, ok in zip(batch, await asyncio.gather(*map(self._record, batch)), strict=False) if ok
            ]
            for start in range(0, len(recorded), OFFER_BATCH):
                chunk = recorded[start : start + OFFER_BATCH]
                try:
                    await self.queue.offer([run.run_id for run in chunk])
                except Exception as exc:  # noqa: BLE001 - each run is taken back and told
                    for run in chunk:
                        await self._not_recorded(run, exc)
            for run in batch:
                if run.save_error is None:
                    log.info(
                        "run_queued", run_id=run.run_id, thread_id=run.thread_id, strategy=run.spec.multitask_strategy
                    )
                self.recording.pop(run.run_id, None)
                run.saved.set()

    async def _record(self, run: Run) -> bool:
        """Write a queued run's record and mark its thread busy (together); False when they could not be."""
        try:
            await asyncio.gather(
                self.threads.put_run(run.to_dict()),
                self.threads.update(
                    run.thread_id,
                    metadata={"graph_id": LEAD_AGENT_NAME, "assistant_id": run.spec.assistant_id},
                    status="busy",
                ),
            )
        except Exception as exc:  # noqa: BLE001 - told to the client, on its stream or as the request's error
            await self._not_recorded(run, exc)
            return False
        return True

    async def _not_recorded(self, run: Run, exc: Exception) -> None:
        """A queued run whose records could not be written (or that could not be offered) is taken
        back, row and record, its thread left idle unless another run is queued on it, and its
        stream ends with an ``error`` event; ``run.save_error`` is the request's error."""
        run.save_error = exc
        log.warning("run_not_recorded", run_id=run.run_id, thread_id=run.thread_id, error=error_text(exc))
        await self.unqueue(run)
        try:
            if not await self.queue.thread_runs(run.thread_id):  # marked busy beside the record that failed
                await self.threads.update(run.thread_id, status="idle")
            await self.executor.publish(
                run, "error", {"error": type(exc).__name__, "message": f"the run was not started: {error_text(exc)}"}
            )
            await self.executor.publish(run, END_EVENT, None)
            await self.executor.bridge.finish(run.run_id)
        except Exception as undo_exc:  # noqa: BLE001 - a client waiting for the request still gets the error
            log.warning("run_error_not_published", run_id=run.run_id, error=error_text(undo_exc))

    async def unqueue(self, run: Run) -> None:
        """Take back a run whose creation failed: its queue row and its record, if written."""
        for undo in (self.queue.remove(run.run_id), self.threads.delete_run(run.thread_id, run.run_id)):
            try:
                await undo
            except Exception as exc:  # noqa: BLE001 - the creation's own error is what the client needs
                log.warning("run_not_taken_back", run_id=run.run_id, thread_id=run.thread_id, error=error_text(exc))

    async def recorded(self, run_id: str) -> None:
        """Wait until the records of a run this process is queueing are written (at once otherwise)."""
        if (run := self.recording.get(run_id)) is not None:
            await run.saved.wait()
