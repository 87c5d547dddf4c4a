"""The run manager: runs of the lead agent that live independently of any HTTP connection.

A run is an asyncio task that streams the graph and publishes every event into the stream
bridge; clients subscribe to the bridge, disconnect and come back, and the run goes on. The
manager applies the multitask strategy when a thread already has a run (``reject``,
``interrupt``, ``rollback``, ``enqueue``), cancels runs, and saves each run's record (see
``threads.py``) at every change of status. Listeners (metrics, logs) hear when runs start and
finish.

:class:`RunManager` is the front the gateway and the workers use; it admits runs and answers
about them, and leaves each other job to a part of its own:

- :class:`~herdsman.runtime.runs.run_table.RunTable`: the runs this process knows, by id and thread;
- :class:`~herdsman.runtime.runs.run_executor.RunExecutor`: a run's task, from its records to its end;
- :class:`~herdsman.runtime.runs.run_recorder.QueuedRunRecorder`: the records of runs queued for workers;
- :class:`~herdsman.runtime.runs.run_workers.RunWorkers`: leases, and runs taken over from the queue;
- :class:`~herdsman.runtime.runs.run_cancel.CancelRelay`: a stop that reaches a run wherever it executes.

What a client sends is checked before the run is created (``run_input.py``: the input against
the graph's input schema, ``configurable`` against the keys the manager sets itself); a refusal
is a :class:`InvalidRunError` (422) and leaves the thread as it was. Once created, a run always
ends: whatever fails while it is set up or executed ends it as ``error`` and frees its thread.

Creating a run writes one thing before its ``metadata`` event: its row of the run queue,
inserted in the transaction that decides, for every process on the database, whether the thread
is busy elsewhere and whether the run fits in the run limits (``run_admission.py``); the run's
records are written by its task, first thing (``Run.saved`` tells when), so a streamed run's
first event never waits for the record store.

Every run is also a row of the durable run queue (``run_queue.py``), held under a lease by the
process executing it, so a run outlives the process that started it (see ``run_workers.py``).
Before a run resumes, its tool calls that were in flight and are not safe to repeat (a ``bash``
command) are answered as interrupted instead of run again (``inflight_tools.py``).

A cancel never loses the user's input (``kept_input.py``): a run stopped before its first step
was saved (waiting for its turn, a slot or a worker, or before its graph began) has its input
written into the thread when it stops, after the runs ahead of it on the thread; a rollback undoes
the run, input included, as LangGraph's server does. A stopped run's join answers with the thread's
values; a rolled-back run's too (see :meth:`RunManager.rolled_back`).

Each execution of a run gets a fresh run scope (sub-agent gate, per-run cap, token budget, the
running sub-agents), passed to the graph in its runtime context and kept on the :class:`Run`, so
:meth:`RunManager.stop_subagent` can stop one sub-agent of the thread's running run.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

from herdsman.config.schema import HerdsmanConfig
from herdsman.logs import get_logger
from herdsman.middleware.model_selection import UnknownModelError, check_model_name, model_names, requested_model
from herdsman.runtime.runs.run_admission import Admission, Decision
from herdsman.runtime.runs.run_cancel import CancelRelay
from herdsman.runtime.runs.run_events import normalize_modes
from herdsman.runtime.runs.run_executor import RunExecutor
from herdsman.runtime.runs.run_input import (
    InputTooLargeError,
    RunInputError,
    check_goto,
    check_input,
    check_json,
    check_run_config,
    check_run_limits,
    check_size,
    check_update,
)
from herdsman.runtime.runs.run_queue import MemoryRunQueue, QueuedRun, RunQueue
from herdsman.runtime.runs.run_recorder import QueuedRunRecorder
from herdsman.runtime.runs.run_table import RunTable
from herdsman.runtime.runs.run_types import (  # noqa: F401 - the run types are imported from here too
    FINAL_STATUSES,
    QUEUE_FULL_RETRY_AFTER,
    REMOTE_JOIN_POLL,
    CancelAction,
    InvalidRunError,
    MultitaskStrategy,
    NothingToResumeError,
    QueueFullError,
    Run,
    RunError,
    RunLimitError,
    RunListener,
    RunNotFoundError,
    RunSpec,
    RunStatus,
    ThreadBusyError,
    TooLargeError,
    busy_error,
    error_text,
    owned_configurable,
    refusal,
)
from herdsman.runtime.runs.run_workers import RunWorkers
from herdsman.runtime.storage.checkpoint_size import checkpoint_bytes
from herdsman.runtime.storage.threads import ThreadStore, utc_now
from herdsman.runtime.streaming.serde import to_jsonable
from herdsman.runtime.streaming.stream_bridge import StreamBridge

log = get_logger(__name__)


class RunManager:
    """Creates, executes, cancels and tracks runs of one compiled graph (a front over its parts)."""

    def __init__(
        self,
        graph: Any,
        bridge: StreamBridge,
        threads: ThreadStore,
        config: HerdsmanConfig,
        *,
        listeners: Iterable[RunListener] = (),
        max_concurrency: int = 10,
        pause: Callable[[], Awaitable[None]] | None = None,
        queue: RunQueue | None = None,
        sandbox: Any = None,
    ) -> None:
        """``max_concurrency`` runs execute at once; the others wait, pending, for a slot.

        ``pause`` is awaited between two steps of every run (the gateway's lets new requests
        be answered first, see ``herdsman_gateway/pacing.py``). ``queue`` keeps the runs and
        their leases (in memory when None). ``sandbox`` is the sandbox provider, released with the
        files of a stateless run's temporary thread when the run ends.
        """
        self.bridge = bridge
        self.threads = threads
        self.config = config
        self.sandbox = sandbox
        self.listeners: list[RunListener] = list(listeners)
        self.queue: RunQueue = queue if queue is not None else MemoryRunQueue()
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._max_concurrency = max_concurrency
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}  # per thread: its lock, and how many use it
        self.table = RunTable()
        self.executor = RunExecutor(
            graph,
            bridge,
            threads,
            config,
            self.table,
            self.queue,
            self.worker_id,
            self.listeners,
            max_concurrency=max_concurrency,
            pause=pause,
            sandbox=sandbox,
        )
        self.recorder = QueuedRunRecorder(self.executor, self.table)
        self.workers = RunWorkers(self.executor, self.table, self._has_free_slot)
        self.relay = CancelRelay(self.executor, self.table, self.recorder, self.workers)

    @property
    def graph(self) -> Any:
        """The compiled graph the runs that start from now on execute."""
        return self.executor.graph

    @graph.setter
    def graph(self, graph: Any) -> None:
        """Use ``graph`` for the runs that start from now on (the agent was rebuilt)."""
        self.executor.graph = graph

    # -- queries ---------------------------------------------------------------------------

    def active_runs(self, thread_id: str) -> list[Run]:
        """The thread's pending and running runs in this process, oldest first."""
        return [r for r in self.table.by_thread.get(thread_id, ()) if r.status in ("pending", "running")]

    def stop_subagent(self, thread_id: str, task_id: str) -> bool:
        """Stop the sub-agent ``task_id`` (its task call's id) of the thread's run executing in this
        process; the run and the other sub-agents go on. False when no such sub-agent is running."""
        return any(r.scope is not None and r.scope.cancel(task_id) for r in self.table.active(thread_id))

    def unsaved_runs(self, thread_id: str) -> list[Run]:
        """The thread's runs created here whose records are not written yet, oldest first: runs
        this process executes (their task writes them first thing) or queued for workers."""
        return [r for r in self.active_runs(thread_id) if not r.saved.is_set()] + self.recorder.unsaved(thread_id)

    def watch_thread(self, thread_id: str) -> asyncio.Queue[Run]:
        """A queue that receives each run created on ``thread_id`` from now on (in this process);
        give it back with :meth:`unwatch_thread`."""
        return self.table.watch(thread_id)

    def unwatch_thread(self, thread_id: str, queue: asyncio.Queue[Run]) -> None:
        """Stop sending the thread's new runs to ``queue``."""
        self.table.unwatch(thread_id, queue)

    def is_busy(self, thread_id: str) -> bool:
        """Whether the thread has a run in progress in this process."""
        return bool(self.table.active(thread_id))

    async def busy_run(self, thread_id: str) -> str | None:
        """The id of a run in progress on the thread in any process (this one's first, then the
        queue's: another gateway's or worker's, or one waiting for a worker), or None."""
        if active := self.table.active(thread_id):
            return active[-1].run_id
        queued = await self.queue.thread_runs(thread_id)
        # not a run this process stopped whose row goes once it wrote its input (see _stop_unstarted)
        queued = [q for q in queued if (mine := self.table.get(q.run_id)) is None or mine.status not in FINAL_STATUSES]
        return queued[-1].run_id if queued else None

    async def temporary_run(self, thread_id: str) -> str | None:
        """The id of the stateless run in progress whose temporary thread ``thread_id`` is (in any
        process), or None: that thread is deleted when the run ends, so it takes no other run."""
        for run in self.table.active(thread_id):
            if run.spec.temporary:
                return run.run_id
        queued = await self.queue.thread_runs(thread_id)
        return next((q.run_id for q in queued if q.spec.get("temporary")), None)

    async def in_progress(self) -> list[dict[str, Any]]:
        """Every pending or running run: this process's, and those the store says another
        process executes."""
        mine = {r.run_id: r.to_dict() for r in self.table.runs.values() if r.status in ("pending", "running")}
        saved = [
            r
            for r in await self.threads.unfinished_runs()
            if r["run_id"] not in mine and self.table.get(r["run_id"]) is None
        ]
        return [*mine.values(), *saved]

    async def get(self, thread_id: str, run_id: str) -> dict[str, Any] | None:
        """The run's record (live or saved), or None."""
        run = self.table.get(run_id) or self.recorder.get(run_id)
        if run is not None and run.thread_id == thread_id:
            return run.to_dict()
        return await self.threads.get_run(thread_id, run_id)

    async def ended(self, thread_id: str, run_id: str) -> bool:
        """Whether the run is over: its record (live or saved) is final, or gone (its thread was
        deleted). What a follower of its stream asks when the end event may have been lost."""
        record = await self.get(thread_id, run_id)
        return record is None or record.get("status") in FINAL_STATUSES

    # -- creating runs ---------------------------------------------------------------------

    def check(self, spec: RunSpec) -> None:
        """Refuse (422) a spec whose input, command, config or metadata the graph cannot take,
        and (400) one that asks for a model config.yaml does not name."""
        try:
            check_run_config(spec.config, owned_configurable(spec))
            check_run_limits(spec.config, self.config.subagents)
            check_json("metadata", spec.metadata)
            check_json("context", spec.context)
            limit = self.config.runs.max_input_bytes
            for field, value in (("metadata", spec.metadata), ("config", spec.config), ("context", spec.context)):
                check_size(field, value, limit, spec.thread_id)  # every checkpoint of the run stores them too
            if spec.command:
                check_json("command", spec.command)
                check_size("command.update", spec.command.get("update"), limit, spec.thread_id)
                check_update(self.graph, "command.update", spec.command.get("update"))
                check_goto(self.graph, spec.command.get("goto"))
            else:
                check_size("input", spec.input, limit, spec.thread_id)
                check_input(self.graph, spec.input)
        except InputTooLargeError as exc:
            raise TooLargeError(f"Request too large: {exc}") from None
        except RunInputError as exc:
            raise InvalidRunError(f"Invalid request: {exc}", exc.field) from None
        try:
            check_model_name(requested_model(spec.config or {}), model_names(self.config))
        except UnknownModelError as exc:
            raise RunError(str(exc)) from None

    async def check_thread_state(self, thread_id: str) -> None:
        """Refuse (413) a run on a thread whose newest checkpoint is over ``runs.max_thread_state_bytes``
        or whose checkpoints together are over ``runs.max_thread_checkpoint_bytes``."""
        settings = self.config.runs
        state, stored = settings.max_thread_state_bytes, settings.max_thread_checkpoint_bytes
        if state is None and stored is None:
            return
        sizes = await checkpoint_bytes(
            self.graph.checkpointer, thread_id, head=state is not None, total=stored is not None
        )  # one hand-off for both on SQLite
        bounds = (
            ("max_thread_state_bytes", state, sizes[0],
             "bytes of state, and every step of a run would store it all again"),
            ("max_thread_checkpoint_bytes", stored, sizes[1], "bytes of checkpoints (each holds the messages again)"),
        )  # fmt: skip
        for key, limit, size, what in bounds:
            if limit is not None and size is not None and size > limit:
                raise TooLargeError(
                    f"Thread {thread_id} holds {size:,} {what}, more than runs.{key} ({limit:,}); start a new "
                    "thread (POST /threads) and upload large content as files, or ask the operator to raise the limit"
                )

    async def start(self, spec: RunSpec) -> Run:
        """Create a run on ``spec.thread_id`` and start it, applying the multitask strategy."""
        spec.stream_mode = normalize_modes(spec.stream_mode)
        self.check(spec)
        await self.check_thread_state(spec.thread_id)
        async with self._thread_lock(spec.thread_id):
            if spec.command and spec.command.get("resume") is not None:
                await self._check_resumable(spec)
            if not self.config.runs.workers:
                return await self._queue_only(spec)
            active = self.table.active(spec.thread_id)
            if active:
                strategy = spec.multitask_strategy
                if strategy == "reject":
                    raise busy_error(spec.thread_id, active[-1].run_id)
                if strategy in ("interrupt", "rollback"):
                    for other in active:
                        await self.cancel(other.thread_id, other.run_id, action=strategy, wait=True)
            # the thread's runs still at work (enqueue), and stopped ones still writing their input
            previous = [
                r.task for r in self.table.by_thread.get(spec.thread_id, ()) if r.task is not None and not r.task.done()
            ]
            now = utc_now()
            run = Run(run_id=str(uuid.uuid4()), spec=spec, created_at=now, updated_at=now)
            # one transaction counts the queue and inserts the row: another process's run on the
            # thread (the strategy is then applied to it), and the limits, are seen by every gateway
            admission = self._admission(spec, worker=self.worker_id, hold=self._has_free_slot())
            decision = await self._admit(self._row(run, held=True), admission)
            if decision.verdict == "behind":
                return await self._queue_only(spec)
            if (refused := refusal(decision, admission, spec)) is not None:
                raise refused
            if decision.verdict == "wait":
                return await self.recorder.queue_run(run)
            run.held_since = time.monotonic()
            self.table.add(run)  # from here on the thread is busy (decided under its lock)
            try:
                # Sent at once, so a client sees its run id before the graph starts; the records are
                # written by the run's task, first thing (``run.saved`` is set once they are).
                await self.executor.publish_metadata(run)
                run.task = asyncio.create_task(self.executor.execute(run, previous), name=f"run-{run.run_id}")
            except BaseException:
                self.table.forget(run.run_id)  # never started: the thread must not stay busy
                await self.recorder.unqueue(run)
                raise
            run.task.add_done_callback(lambda _: run.saved.set())  # even if cancelled before it began
            self.table.tell_watchers(run)
        log.info("run_created", run_id=run.run_id, thread_id=spec.thread_id, strategy=spec.multitask_strategy)
        return run

    @asynccontextmanager
    async def _thread_lock(self, thread_id: str) -> AsyncIterator[None]:
        """Hold the thread's lock (new runs of one thread are decided one at a time); the lock is
        dropped when no one holds or waits for it, so a long queue of new threads leaves none behind."""
        lock, users = self._locks.get(thread_id) or (asyncio.Lock(), 0)
        self._locks[thread_id] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[thread_id]
            if users == 1:
                del self._locks[thread_id]
            else:
                self._locks[thread_id] = (lock, users - 1)

    def _admission(self, spec: RunSpec, *, worker: str, hold: bool) -> Admission:
        """The limits of ``runs:`` for a new run, asked by ``worker`` ("": a process that only queues)."""
        limits = self.config.runs
        return Admission(
            max_queued=limits.max_queued,
            max_running_per_user=limits.max_running_per_user,
            max_queued_per_user=limits.max_queued_per_user,
            worker=worker,
            hold=hold,
            reject_if_busy=spec.multitask_strategy == "reject",
        )

    def _has_free_slot(self) -> bool:
        """Whether a new run would execute here at once: always without run limits (it waits for a
        slot in this process otherwise); with one, only while fewer than ``max_concurrency`` runs of
        this process are in progress, so the runs that wait, wait as rows of the queue, not here."""
        return not self.config.runs.limited or self.table.in_progress() < self._max_concurrency

    def _row(self, run: Run, *, held: bool) -> QueuedRun:
        """The queue row of a new run, under a fresh lease: held by this process, or by no one
        (then claimable once :meth:`_queued` offered it, or once the lease ran out if this
        process died first)."""
        row = QueuedRun(
            run.run_id,
            run.thread_id,
            run.created_at,
            run.spec.to_queue(),
            user_id=run.spec.user or "",
            lease_until=self.executor.lease_end(),
        )
        if held:
            row.worker_id = self.worker_id
        return row

    async def _queue_only(self, spec: RunSpec) -> Run:
        """Create a run that this process will not execute (it has no workers, or the thread's runs
        are held elsewhere): apply the multitask strategy to the thread's queued runs, then queue
        the run, held by no one, so the first free worker claims it once its turn came.

        The thread is counted in the statement or transaction that queues the run, so a ``reject``
        run sent to two gateways at once is refused by one of them; the thread's queued runs are
        read first only for ``interrupt`` and ``rollback`` (to stop them)."""
        if spec.multitask_strategy in ("interrupt", "rollback"):
            for other in await self.queue.thread_runs(spec.thread_id):
                await self.cancel(spec.thread_id, other.run_id, action=spec.multitask_strategy, wait=True)
        now = utc_now()
        run = Run(run_id=str(uuid.uuid4()), spec=spec, created_at=now, updated_at=now)
        admission = self._admission(spec, worker="", hold=False)
        decision = await self._admit(self._row(run, held=False), admission)
        if (refused := refusal(decision, admission, spec)) is not None:
            raise refused
        return await self.recorder.queue_run(run)

    async def _admit(self, row: QueuedRun, admission: Admission) -> Decision:
        """Queue ``row`` as the limits allow; a queue that cannot be written refuses the run (503)."""
        try:
            return await self.queue.admit(row, admission, time.time())
        except Exception as exc:  # noqa: BLE001 - a run that is not queued would not survive its process
            log.warning("run_not_queued", run_id=row.run_id, thread_id=row.thread_id, error=error_text(exc))
            raise QueueFullError(
                f"the run queue cannot be written ({type(exc).__name__}: {error_text(exc)}); nothing was started: "
                f"send the run again in {QUEUE_FULL_RETRY_AFTER} seconds, and check the database if it persists"
            ) from None

    async def _check_resumable(self, spec: RunSpec) -> None:
        try:
            state = await self.graph.aget_state({"configurable": {"thread_id": spec.thread_id}})
        except Exception as exc:  # noqa: BLE001 - a thread whose state cannot be read has nothing to resume
            raise NothingToResumeError(
                f"thread {spec.thread_id}'s state cannot be read ({type(exc).__name__}: {error_text(exc)}), so "
                "command.resume has nothing to answer; start from an earlier checkpoint (checkpoint_id) instead"
            ) from None
        if not state.interrupts and not self.table.active(spec.thread_id):
            raise NothingToResumeError(
                f"thread {spec.thread_id} is not waiting at an interrupt, so command.resume has nothing "
                "to answer; send input (a new message) instead"
            )

    # -- joining, stopping, workers -------------------------------------------------------

    async def join(self, thread_id: str, run_id: str) -> dict[str, Any]:
        """Wait for the run to end; its final state values (with ``__interrupt__`` when interrupted)."""
        run = self.table.get(run_id)
        if run is None or run.thread_id != thread_id:
            await self.recorder.recorded(run_id)
            record = await self.threads.get_run(thread_id, run_id)
            if record is None and await self.rolled_back(thread_id, run_id):
                return await self._thread_values(thread_id)
            if record is None:
                raise RunNotFoundError(
                    f"no run {run_id} on thread {thread_id}; list runs with GET /threads/{thread_id}/runs"
                )
            waited = False
            while record is not None and (
                record.get("status") not in FINAL_STATUSES or await self._still_ending(run_id)
            ):
                waited = True
                await asyncio.sleep(REMOTE_JOIN_POLL)  # another process executes it (or will take it over)
                if (mine := self.table.get(run_id)) is not None and mine.task is not None:
                    return await self.join(thread_id, run_id)  # taken over by this process meanwhile
                record = await self.threads.get_run(thread_id, run_id)
            if waited and record is not None and record.get("error"):
                return {"__error__": record["error"]}  # as a run of this process answers
            return await self._thread_values(thread_id)
        if run.task is not None:
            await asyncio.wait([run.task])
        if run.error:
            return {"__error__": run.error}
        if run.status == "interrupted" or run.cancel_action is not None:
            return await self._thread_values(thread_id)  # stopped: the thread as the stop left it
        return run.result or {}

    async def _still_ending(self, run_id: str) -> bool:
        """Whether a run whose record is final is still being ended: a run stopped before it began
        is ``interrupted`` at once (as LangGraph's server shows it), but its input goes into the
        thread afterwards, by the process that holds it, which removes its queue row last (see
        :meth:`_end`). A join answers with the thread's values only after that."""
        if (mine := self.table.get(run_id)) is not None and mine.task is not None:
            return not mine.task.done()
        try:
            return await self.queue.get(run_id) is not None
        except Exception as exc:  # noqa: BLE001 - then the record's final status is all there is to go by
            log.warning("run_queue_not_read", run_id=run_id, error=error_text(exc))
            return False

    async def _thread_values(self, thread_id: str) -> dict[str, Any]:
        """The thread's state values, as JSON (``{}`` for a thread with no checkpoint)."""
        state = await self.graph.aget_state({"configurable": {"thread_id": thread_id}})
        return to_jsonable(state.values) or {}

    async def rolled_back(self, thread_id: str, run_id: str) -> bool:
        """Whether ``run_id`` is a run a rollback removed (its record is gone): one this process
        rolled back lately, or one whose stream the bridge still holds (another process's). A join
        of it answers with the thread's values, as LangGraph's server does (``{}`` for a thread the
        rollback left empty), not 404."""
        if self.executor.rolled_back_ids.get(run_id) == thread_id:
            return True
        try:
            return await self.bridge.exists(run_id)
        except Exception as exc:  # noqa: BLE001 - then it is an unknown run
            log.warning("run_stream_not_read", run_id=run_id, error=error_text(exc))
            return False

    async def recover(self) -> int:
        """Mark runs a previous process left unfinished as errors, unless the durable queue still
        has them; how many were lost (see :meth:`RunWorkers.recover`)."""
        return await self.workers.recover()

    async def cancel(
        self, thread_id: str, run_id: str, *, action: CancelAction = "interrupt", wait: bool = False
    ) -> dict[str, Any]:
        """Stop a run, wherever it executes (see :class:`CancelRelay`). ``rollback`` also restores
        the thread to where it was before the run."""
        return await self.relay.cancel(thread_id, run_id, action=action, wait=wait)

    async def serve_cancel_requests(self) -> None:
        """Cancel this process's runs when another process asks through the bridge (runs until
        cancelled, listening again when the bridge fails)."""
        await self.relay.serve_bridge_requests()

    def start_workers(self) -> None:
        """Renew this process's leases and run ``runs.workers`` workers (see :meth:`RunWorkers.start`)."""
        self.workers.start(lambda: self.relay.serve(self.relay.queued_requests()))

    async def take_over(self, claimed: QueuedRun) -> Run | None:
        """Execute a run claimed from the queue (see :meth:`RunWorkers.take_over`)."""
        return await self.workers.take_over(claimed)

    async def shutdown(self) -> None:
        """Stop the workers, cancel every run of this process and wait for them to stop."""
        await self.workers.stop()
        tasks = [r.task for r in self.table.runs.values() if r.task is not None and not r.task.done()]
        for task in tasks:
            task.cancel()
        if (recording := self.recorder.busy_task()) is not None:
            tasks.append(recording)  # runs being queued are recorded and offered first
        if tasks:
            await asyncio.wait(tasks)

    async def hand_over(self) -> None:
        """Stop the workers and this process's runs without ending them: each goes back to the
        queue (its hold released), so another worker claims it at once and resumes it from its
        last checkpoint. What a ``herdsman worker`` that is asked to stop does."""
        self.executor.handing_over = True
        await self.shutdown()
