"""The run manager: runs of the lead agent that live independently of any HTTP connection.

A run is an asyncio task that streams the graph and publishes every event into the stream
bridge; clients subscribe to the bridge, disconnect and come back, and the run goes on. The
manager applies the multitask strategy when a thread already has a run (``reject``,
``interrupt``, ``rollback``, ``enqueue``), cancels runs, and saves each run's record (see
``threads.py``) at every change of status. Listeners (metrics, logs) hear when runs start and
finish.

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
process executing it; :meth:`RunManager.start_workers` renews this process's leases and runs
``runs.workers`` workers that take over the runs of a process that died (its leases ran out) and
resume each from its thread's last checkpoint (the graph streamed again with ``None`` input), so
a run outlives the process that started it; after ``runs.max_attempts`` starts it ends as an error.
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
from collections import deque
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import aclosing, asynccontextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

import structlog
from langgraph.types import Command

from herdsman.agents.lead import LEAD_AGENT_NAME, run_config
from herdsman.config.schema import HerdsmanConfig
from herdsman.middleware.run_scope import RunScope, open_scope, with_scope
from herdsman.middleware.model_selection import UnknownModelError, check_model_name, model_names, requested_model
from herdsman.runtime.checkpoint_size import head_checkpoint_bytes, thread_checkpoint_bytes
from herdsman.runtime.file_versions import file_versions_of
from herdsman.runtime.inflight_tools import settle_inflight_tool_calls
from herdsman.runtime.kept_input import keep_input
from herdsman.runtime.partial_answer import PartialAnswer
from herdsman.runtime.run_events import (
    EventTranslator,
    graph_modes,
    normalize_modes,
    stream_with_events,
    subagent_outcome,
    token_usage,
    tool_results,
)
from herdsman.runtime.run_admission import Admission, Decision
from herdsman.runtime.run_queue import MemoryRunQueue, QueuedRun, RunQueue
from herdsman.runtime.run_input import (
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
from herdsman.runtime.serde import dumps, to_jsonable
from herdsman.runtime.stream_bridge import (
    END_EVENT,
    RESUBSCRIBE_FIRST_SECONDS,
    RESUBSCRIBE_MAX_SECONDS,
    StreamBridge,
    StreamEvent,
)
from herdsman.runtime.thread_copy import drop_run_checkpoints
from herdsman.runtime.thread_files import remove_thread_files
from herdsman.runtime.threads import ThreadStore, utc_now

log = structlog.get_logger(__name__)

RunStatus = Literal["pending", "running", "error", "success", "timeout", "interrupted"]
MultitaskStrategy = Literal["reject", "interrupt", "rollback", "enqueue"]
CancelAction = Literal["interrupt", "rollback"]
FINAL_STATUSES = frozenset({"error", "success", "timeout", "interrupted"})
REMOTE_CANCEL_WAIT = 30.0  # seconds a cancel with wait=1 waits for another process to stop its run
REMOTE_JOIN_POLL = 0.2  # seconds between two looks at the record of a run another process executes
QUEUE_FULL_RETRY_AFTER = 5  # seconds a client refused with 503 (runs.max_queued) is told to wait
RECOVER_SETTLE = 1.0  # seconds before an unqueued run of a live deployment is looked at again (see recover)
OFFER_BATCH = 500  # runs offered to the workers by one statement at most (SQLite bounds its parameters)
KEEP_FINISHED = 1000  # finished runs kept in memory (with their results); older ones only in the store
RESTART_MESSAGE = (
    "the gateway stopped while this run was in progress; the thread keeps every step up to its "
    "last checkpoint: start a new run on the thread to continue"
)
WORKER_LOST_MESSAGE = (
    "the process executing this run died {attempts} times (runs.max_attempts), so it is not tried again; "
    "the thread keeps every step up to its last checkpoint: start a new run on the thread to continue"
)


class RunError(Exception):
    """A run cannot be created or changed; ``status`` is the HTTP status that fits."""

    status: int = 400


class InvalidRunError(RunError):
    """What the client sent cannot start a run (bad input, a reserved ``configurable`` key);
    ``field`` is the dotted path of the value refused (``input.messages[0]``)."""

    status = 422

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


class ThreadBusyError(RunError):
    """The thread has a run in progress and the multitask strategy is ``reject``."""

    status = 409


class RunLimitError(RunError):
    """The user has as many runs in progress as ``runs.max_running_per_user`` and
    ``runs.max_queued_per_user`` allow."""

    status = 429


class TooLargeError(RunError):
    """The run's input, or the thread's state, is over ``runs.max_input_bytes`` or
    ``runs.max_thread_state_bytes``."""

    status = 413


class QueueFullError(RunError):
    """``runs.max_queued`` runs wait for a worker already; ``retry_after`` is in seconds."""

    status = 503
    retry_after = QUEUE_FULL_RETRY_AFTER


class RunNotFoundError(RunError):
    """No such run on that thread."""

    status = 404


class NothingToResumeError(RunError):
    """``command.resume`` on a thread that is not waiting at an interrupt."""

    status = 400


@dataclass
class RunSpec:
    """What a client asked for when creating a run (the LangGraph ``RunCreate`` payload)."""

    thread_id: str
    assistant_id: str = LEAD_AGENT_NAME
    input: Any = None
    command: dict[str, Any] | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    stream_mode: list[str] = field(default_factory=lambda: ["values"])
    stream_subgraphs: bool = False
    stream_resumable: bool = False
    on_disconnect: Literal["cancel", "continue"] = "continue"
    multitask_strategy: MultitaskStrategy = "enqueue"
    checkpoint_id: str | None = None
    checkpoint_ns: str = ""
    interrupt_before: Any = None
    interrupt_after: Any = None
    durability: str | None = None
    temporary: bool = False
    user: str | None = None  # the authenticated user (None: auth off, the one local user)

    def to_queue(self) -> dict[str, Any]:
        """The whole spec as JSON, for the run queue (read back with ``RunSpec(**data)``)."""
        return to_jsonable(asdict(self))

    def kwargs(self) -> dict[str, Any]:
        """The part of the spec shown in the run's ``kwargs``."""
        return to_jsonable(
            {
                "input": self.input,
                "command": self.command,
                "config": self.config or {},
                "context": self.context,
                "stream_mode": self.stream_mode,
                "stream_subgraphs": self.stream_subgraphs,
                "stream_resumable": self.stream_resumable,
                "on_disconnect": self.on_disconnect,
                "checkpoint_id": self.checkpoint_id,
                "interrupt_before": self.interrupt_before,
                "interrupt_after": self.interrupt_after,
                "temporary": self.temporary,
            }
        )


@dataclass
class Run:
    """One run: its record, plus the task executing it while this process runs it."""

    run_id: str
    spec: RunSpec
    created_at: str
    updated_at: str
    status: RunStatus = "pending"
    error: dict[str, str] | None = None
    result: dict[str, Any] | None = None
    checkpoint_before: str | None = None
    executed: bool = False
    cancel_action: CancelAction | None = None
    attempt: int = 1
    held_since: float | None = None  # when this process's hold on its queue row began (monotonic)
    lease_lost: bool = False  # another worker claimed it: this process stops it and leaves it alone
    began: bool = False  # its task began (a task cancelled before it begins never runs a line of it)
    task: asyncio.Task | None = None
    saved: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    scope: RunScope | None = field(default=None, repr=False)  # while executing here: its run scope
    save_error: BaseException | None = None  # why the records of a run queued for workers were not written
    first_event: StreamEvent | None = None  # its metadata event, as published (a stream sends it at once)

    @property
    def thread_id(self) -> str:
        """The thread the run belongs to."""
        return self.spec.thread_id

    def to_dict(self) -> dict[str, Any]:
        """The run as the LangGraph API shows it."""
        return {
            "run_id": self.run_id,
            "thread_id": self.thread_id,
            "assistant_id": self.spec.assistant_id,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "status": self.status,
            "metadata": to_jsonable(self.spec.metadata),
            "multitask_strategy": self.spec.multitask_strategy,
            "kwargs": self.spec.kwargs(),
            "error": self.error,
            "attempt": self.attempt,
        }


class RunListener(Protocol):
    """Hears about runs (metrics, audit logs). Must not block."""

    def run_started(self, run: Run) -> None:
        """A run began executing."""
        ...

    def run_finished(self, run: Run, seconds: float) -> None:
        """A run ended with ``run.status`` after ``seconds``."""
        ...

    def model_tokens(self, run: Run, model: str, input_tokens: int, output_tokens: int) -> None:
        """A model call of the run (or of one of its sub-agents) used these tokens."""
        ...

    def tool_finished(self, run: Run, tool: str, failed: bool) -> None:
        """A tool call of the run (``bash``: a sandbox command, ``task``: a sub-agent) returned."""
        ...

    def subagent_finished(self, run: Run, outcome: str) -> None:
        """A sub-agent of the run ended: completed, failed, timed_out or cancelled."""
        ...


def _command(data: dict[str, Any]) -> Command:
    return Command(resume=data.get("resume"), update=data.get("update"), goto=data.get("goto") or ())


def _busy(thread_id: str, run_id: str) -> ThreadBusyError:
    """The refusal of a run sent with ``multitask_strategy: reject`` to a busy thread."""
    return ThreadBusyError(
        f"thread {thread_id} already has run {run_id} in progress; wait for it (GET .../runs/{{run_id}}/join), "
        "cancel it, or send multitask_strategy interrupt, rollback or enqueue"
    )


def _refusal(decision: Decision, admission: Admission, spec: RunSpec) -> RunError | None:
    """The error for a run the queue did not admit (None when it did)."""
    counts = decision.counts
    if decision.verdict == "busy":
        return _busy(spec.thread_id, counts.thread_run or "")
    if decision.verdict == "queue_full":
        return QueueFullError(
            f"the run queue is full: {counts.waiting} runs wait for a worker (runs.max_queued: {admission.max_queued}); "
            f"send the run again in {QUEUE_FULL_RETRY_AFTER} seconds (Retry-After), or add workers (herdsman worker)"
        )
    if decision.verdict == "user_full":
        who = f"user {spec.user}" if spec.user else "the local user"
        return RunLimitError(
            f"{who} has {counts.user_held} runs in progress (runs.max_running_per_user: {admission.max_running_per_user}) "
            f"and {counts.user_waiting} waiting (runs.max_queued_per_user: {admission.max_queued_per_user}); "
            "wait for one to end (GET /threads/{thread_id}/runs/{run_id}/join) or cancel one (POST /runs/cancel), "
            "then send this run again"
        )
    return None


def _text(exc: BaseException) -> str:
    """An exception's message as text that always encodes (lone surrogates replaced)."""
    text = str(exc) or type(exc).__name__
    return text.encode("utf-8", "replace").decode("utf-8")


class RunManager:
    """Creates, executes, cancels and tracks runs of one compiled graph."""

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
        self.graph = graph
        self.bridge = bridge
        self.threads = threads
        self.config = config
        self.sandbox = sandbox
        self.listeners = list(listeners)
        self._runs: dict[str, Run] = {}
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}  # per thread: its lock, and how many use it
        self._slots = asyncio.Semaphore(max_concurrency)
        self._max_concurrency = max_concurrency
        self._by_thread: dict[str, list[Run]] = {}  # the runs of _runs, by thread (oldest first)
        self._finished: deque[str] = deque()
        self._pause = pause
        self._watchers: dict[str, set[asyncio.Queue[Run]]] = {}  # per thread: who hears of its new runs
        self.queue: RunQueue = queue if queue is not None else MemoryRunQueue()
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._workers: list[asyncio.Task] = []
        self._handing_over = False  # runs stopped now go back to the queue instead of ending
        self._recording: dict[str, Run] = {}  # runs queued for workers whose records are being written
        self._to_record: list[Run] = []  # those of them the recorder has not taken yet
        self._recorder: asyncio.Task | None = None  # the task writing them (see _record_queued_runs)
        self._rolled_back: dict[str, str] = {}  # run id -> thread id of the runs rolled back lately (see rolled_back)

    # -- queries ---------------------------------------------------------------------------

    def active_runs(self, thread_id: str) -> list[Run]:
        """The thread's pending and running runs in this process, oldest first."""
        return [r for r in self._by_thread.get(thread_id, ()) if r.status in ("pending", "running")]

    def stop_subagent(self, thread_id: str, task_id: str) -> bool:
        """Stop the sub-agent ``task_id`` (its task call's id) of the thread's run executing in this
        process; the run and the other sub-agents go on. False when no such sub-agent is running."""
        return any(r.scope is not None and r.scope.cancel(task_id) for r in self.active_runs(thread_id))

    def unsaved_runs(self, thread_id: str) -> list[Run]:
        """The thread's runs created here whose records are not written yet, oldest first: runs
        this process executes (their task writes them first thing) or queued for workers."""
        recording = [r for r in self._recording.values() if r.thread_id == thread_id]
        return [r for r in self.active_runs(thread_id) if not r.saved.is_set()] + recording

    def watch_thread(self, thread_id: str) -> asyncio.Queue[Run]:
        """A queue that receives each run created on ``thread_id`` from now on (in this process);
        give it back with :meth:`unwatch_thread`."""
        queue: asyncio.Queue[Run] = asyncio.Queue()
        self._watchers.setdefault(thread_id, set()).add(queue)
        return queue

    def unwatch_thread(self, thread_id: str, queue: asyncio.Queue[Run]) -> None:
        """Stop sending the thread's new runs to ``queue``."""
        watchers = self._watchers.get(thread_id, set())
        watchers.discard(queue)
        if not watchers:
            self._watchers.pop(thread_id, None)

    def _forget(self, run_id: str) -> None:
        """Drop a run from memory (its record stays in the store)."""
        run = self._runs.pop(run_id, None)
        if run is None:
            return
        siblings = self._by_thread.get(run.thread_id, [])
        if run in siblings:
            siblings.remove(run)
        if not siblings:
            self._by_thread.pop(run.thread_id, None)

    def is_busy(self, thread_id: str) -> bool:
        """Whether the thread has a run in progress in this process."""
        return bool(self.active_runs(thread_id))

    async def busy_run(self, thread_id: str) -> str | None:
        """The id of a run in progress on the thread in any process (this one's first, then the
        queue's: another gateway's or worker's, or one waiting for a worker), or None."""
        if active := self.active_runs(thread_id):
            return active[-1].run_id
        queued = await self.queue.thread_runs(thread_id)
        # not a run this process stopped whose row goes once it wrote its input (see _stop_unstarted)
        queued = [q for q in queued if (mine := self._runs.get(q.run_id)) is None or mine.status not in FINAL_STATUSES]
        return queued[-1].run_id if queued else None

    async def temporary_run(self, thread_id: str) -> str | None:
        """The id of the stateless run in progress whose temporary thread ``thread_id`` is (in any
        process), or None: that thread is deleted when the run ends, so it takes no other run."""
        for run in self.active_runs(thread_id):
            if run.spec.temporary:
                return run.run_id
        queued = await self.queue.thread_runs(thread_id)
        return next((q.run_id for q in queued if q.spec.get("temporary")), None)

    async def in_progress(self) -> list[dict[str, Any]]:
        """Every pending or running run: this process's, and those the store says another
        process executes."""
        mine = {r.run_id: r.to_dict() for r in self._runs.values() if r.status in ("pending", "running")}
        saved = [r for r in await self.threads.unfinished_runs() if r["run_id"] not in mine and r["run_id"] not in self._runs]
        return [*mine.values(), *saved]

    async def get(self, thread_id: str, run_id: str) -> dict[str, Any] | None:
        """The run's record (live or saved), or None."""
        run = self._runs.get(run_id) or self._recording.get(run_id)
        if run is not None and run.thread_id == thread_id:
            return run.to_dict()
        return await self.threads.get_run(thread_id, run_id)

    async def ended(self, thread_id: str, run_id: str) -> bool:
        """Whether the run is over: its record (live or saved) is final, or gone (its thread was
        deleted). What a follower of its stream asks when the end event may have been lost."""
        record = await self.get(thread_id, run_id)
        return record is None or record.get("status") in FINAL_STATUSES

    # -- lifecycle -------------------------------------------------------------------------

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
            record.update(status="error", updated_at=utc_now(), error={"error": "GatewayRestarted", "message": RESTART_MESSAGE})
            await self.threads.put_run(record)
            await self.threads.update(record["thread_id"], status="idle")
        if lost:
            log.warning("runs_lost_in_restart", count=len(lost))
        return len(lost)

    def _owned(self, spec: RunSpec) -> dict[str, Any]:
        """The ``configurable`` values the manager sets itself that a client may echo unchanged."""
        return {"thread_id": spec.thread_id, "assistant_id": spec.assistant_id, "graph_id": LEAD_AGENT_NAME}

    def check(self, spec: RunSpec) -> None:
        """Refuse (422) a spec whose input, command, config or metadata the graph cannot take,
        and (400) one that asks for a model config.yaml does not name."""
        try:
            check_run_config(spec.config, self._owned(spec))
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
        settings, saver = self.config.runs, self.graph.checkpointer
        bounds = (
            ("max_thread_state_bytes", settings.max_thread_state_bytes, head_checkpoint_bytes,
             "bytes of state, and every step of a run would store it all again"),
            ("max_thread_checkpoint_bytes", settings.max_thread_checkpoint_bytes, thread_checkpoint_bytes,
             "bytes of checkpoints (each holds the messages again)"),
        )  # fmt: skip
        for key, limit, measure, what in bounds:
            if limit is not None and (size := await measure(saver, thread_id)) > limit:
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
            active = self.active_runs(spec.thread_id)
            if active:
                strategy = spec.multitask_strategy
                if strategy == "reject":
                    raise _busy(spec.thread_id, active[-1].run_id)
                if strategy in ("interrupt", "rollback"):
                    for other in active:
                        await self.cancel(other.thread_id, other.run_id, action=strategy, wait=True)
            # the thread's runs still at work (enqueue), and stopped ones still writing their input
            previous = [r.task for r in self._by_thread.get(spec.thread_id, ()) if r.task is not None and not r.task.done()]
            now = utc_now()
            run = Run(run_id=str(uuid.uuid4()), spec=spec, created_at=now, updated_at=now)
            # one transaction counts the queue and inserts the row: another process's run on the
            # thread (the strategy is then applied to it), and the limits, are seen by every gateway
            admission = self._admission(spec, worker=self.worker_id, hold=self._has_free_slot())
            decision = await self._admit(self._row(run, held=True), admission)
            if decision.verdict == "behind":
                return await self._queue_only(spec)
            if (refused := _refusal(decision, admission, spec)) is not None:
                raise refused
            if decision.verdict == "wait":
                return await self._queued(run)
            run.held_since = time.monotonic()
            self._runs[run.run_id] = run  # from here on the thread is busy (decided under its lock)
            self._by_thread.setdefault(run.thread_id, []).append(run)
            try:
                # Sent at once, so a client sees its run id before the graph starts; the records are
                # written by the run's task, first thing (``run.saved`` is set once they are).
                await self._publish_metadata(run)
                run.task = asyncio.create_task(self._execute(run, previous), name=f"run-{run.run_id}")
            except BaseException:
                self._forget(run.run_id)  # never started: the thread must not stay busy
                await self._unqueue(run)
                raise
            run.task.add_done_callback(lambda _: run.saved.set())  # even if cancelled before it began
            self._tell_watchers(run)
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
        return Admission(max_queued=limits.max_queued, max_running_per_user=limits.max_running_per_user,
                         max_queued_per_user=limits.max_queued_per_user, worker=worker, hold=hold,
                         reject_if_busy=spec.multitask_strategy == "reject")

    def _has_free_slot(self) -> bool:
        """Whether a new run would execute here at once: always without run limits (it waits for a
        slot in this process otherwise); with one, only while fewer than ``max_concurrency`` runs of
        this process are in progress, so the runs that wait, wait as rows of the queue, not here."""
        if not self.config.runs.limited:
            return True
        return sum(1 for r in self._runs.values() if r.status in ("pending", "running")) < self._max_concurrency

    def _row(self, run: Run, *, held: bool) -> QueuedRun:
        """The queue row of a new run, under a fresh lease: held by this process, or by no one
        (then claimable once :meth:`_queued` offered it, or once the lease ran out if this
        process died first)."""
        row = QueuedRun(run.run_id, run.thread_id, run.created_at, run.spec.to_queue(), user_id=run.spec.user or "",
                        lease_until=self._lease_end())
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
        if (refused := _refusal(decision, admission, spec)) is not None:
            raise refused
        return await self._queued(run)

    async def _admit(self, row: QueuedRun, admission: Admission) -> Decision:
        """Queue ``row`` as the limits allow; a queue that cannot be written refuses the run (503)."""
        try:
            return await self.queue.admit(row, admission, time.time())
        except Exception as exc:  # noqa: BLE001 - a run that is not queued would not survive its process
            log.warning("run_not_queued", run_id=row.run_id, thread_id=row.thread_id, error=_text(exc))
            raise QueueFullError(
                f"the run queue cannot be written ({type(exc).__name__}: {_text(exc)}); nothing was started: "
                f"send the run again in {QUEUE_FULL_RETRY_AFTER} seconds, and check the database if it persists"
            ) from None

    async def _queued(self, run: Run) -> Run:
        """A run whose row waits in the queue for a worker: send its ``metadata`` event; its
        records are written and it is offered to the workers by :meth:`_record_queued_runs`
        (``run.saved`` is set when done, ``run.save_error`` says why it failed), so a streamed
        run's first event waits for its queue row only. Meanwhile :meth:`get`, :meth:`cancel`
        and :meth:`join` find it here."""
        try:
            await self._publish_metadata(run)
        except BaseException:
            await self._unqueue(run)  # not created: the client gets the error, and nothing is left held
            raise
        self._recording[run.run_id] = run
        self._to_record.append(run)
        self._tell_watchers(run)  # a thread's event log follows it through the bridge
        if self._recorder is None or self._recorder.done():
            self._recorder = asyncio.create_task(self._record_queued_runs(), name="run-recorder")
        return run

    async def _record_queued_runs(self) -> None:
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
            recorded = [run for run, ok in zip(batch, await asyncio.gather(*map(self._record, batch))) if ok]
            for start in range(0, len(recorded), OFFER_BATCH):
                chunk = recorded[start:start + OFFER_BATCH]
                try:
                    await self.queue.offer([run.run_id for run in chunk])
                except Exception as exc:  # noqa: BLE001 - each run is taken back and told
                    for run in chunk:
                        await self._not_recorded(run, exc)
            for run in batch:
                if run.save_error is None:
                    log.info("run_queued", run_id=run.run_id, thread_id=run.thread_id, strategy=run.spec.multitask_strategy)
                self._recording.pop(run.run_id, None)
                run.saved.set()

    async def _record(self, run: Run) -> bool:
        """Write a queued run's record and mark its thread busy (together); False when they could not be."""
        try:
            await asyncio.gather(
                self.threads.put_run(run.to_dict()),
                self.threads.update(run.thread_id, metadata={"graph_id": LEAD_AGENT_NAME, "assistant_id": run.spec.assistant_id},
                                    status="busy"),
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
        log.warning("run_not_recorded", run_id=run.run_id, thread_id=run.thread_id, error=_text(exc))
        await self._unqueue(run)
        try:
            if not await self.queue.thread_runs(run.thread_id):  # marked busy beside the record that failed
                await self.threads.update(run.thread_id, status="idle")
            await self._publish(run, "error", {"error": type(exc).__name__, "message": f"the run was not started: {_text(exc)}"})
            await self._publish(run, END_EVENT, None)
            await self.bridge.finish(run.run_id)
        except Exception as undo_exc:  # noqa: BLE001 - a client waiting for the request still gets the error
            log.warning("run_error_not_published", run_id=run.run_id, error=_text(undo_exc))

    async def _unqueue(self, run: Run) -> None:
        """Take back a run whose creation failed: its queue row and its record, if written."""
        for undo in (self.queue.remove(run.run_id), self.threads.delete_run(run.thread_id, run.run_id)):
            try:
                await undo
            except Exception as exc:  # noqa: BLE001 - the creation's own error is what the client needs
                log.warning("run_not_taken_back", run_id=run.run_id, thread_id=run.thread_id, error=_text(exc))

    async def _check_resumable(self, spec: RunSpec) -> None:
        try:
            state = await self.graph.aget_state({"configurable": {"thread_id": spec.thread_id}})
        except Exception as exc:  # noqa: BLE001 - a thread whose state cannot be read has nothing to resume
            raise NothingToResumeError(
                f"thread {spec.thread_id}'s state cannot be read ({type(exc).__name__}: {_text(exc)}), so "
                "command.resume has nothing to answer; start from an earlier checkpoint (checkpoint_id) instead"
            ) from None
        if not state.interrupts and not self.active_runs(spec.thread_id):
            raise NothingToResumeError(
                f"thread {spec.thread_id} is not waiting at an interrupt, so command.resume has nothing "
                "to answer; send input (a new message) instead"
            )

    async def cancel(
        self, thread_id: str, run_id: str, *, action: CancelAction = "interrupt", wait: bool = False
    ) -> dict[str, Any]:
        """Stop a run. ``rollback`` also restores the thread to where it was before the run."""
        run = self._runs.get(run_id)
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
                await self._set_status(run, "interrupted")
            log.info("run_cancel_requested", run_id=run_id, thread_id=thread_id, action=run.cancel_action)
        if (wait or action == "rollback") and run.task is not None:
            await asyncio.wait([run.task])  # a rollback is done by the run's task as it ends (see _end)
        return run.to_dict()

    async def _cancel_elsewhere(self, thread_id: str, run_id: str, action: CancelAction, wait: bool) -> dict[str, Any]:
        """Cancel a run another gateway process executes (through the bridge), or report a finished one."""
        await self._recorded(run_id)
        record = await self.threads.get_run(thread_id, run_id)
        if record is None:
            raise RunNotFoundError(f"no run {run_id} on thread {thread_id}; list runs with GET /threads/{thread_id}/runs")
        if record.get("status") in FINAL_STATUSES:
            return record
        try:
            await self.queue.request_cancel(run_id, action)  # for a worker that takes it over (its own died)
            # a run no live process holds (waiting for a worker, or its worker died) is ended here at once,
            # unless it waits behind another run of its thread and keeps its input: that input goes
            # into the thread after what the runs ahead wrote, by the worker that claims it in turn
            taken = None if await self._waits_its_turn(thread_id, run_id, action) else \
                await self.queue.take(run_id, self.worker_id, time.time(), self._lease_end())
        except Exception as exc:  # noqa: BLE001 - the live holder still hears it through the bridge
            log.warning("run_cancel_not_queued", run_id=run_id, error=_text(exc))
            taken = None
        if taken is not None:
            try:
                ended = await self.take_over(taken)
            except Exception as exc:  # noqa: BLE001 - a row that cannot be read back as a run ends as an error
                await self._drop_unreadable(taken, exc)
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
        probe = Run(run_id=run_id, spec=RunSpec(**row.spec), created_at=row.created_at, updated_at=row.created_at,
                    cancel_action=action)
        return self._keeps_input(probe)

    async def _recorded(self, run_id: str) -> None:
        """Wait until the records of a run this process is queueing are written (at once otherwise)."""
        if (run := self._recording.get(run_id)) is not None:
            await run.saved.wait()

    async def serve_cancel_requests(self) -> None:
        """Cancel this process's runs when another process asks through the bridge (runs until
        cancelled). When the bridge fails (Redis away longer than its client reconnects), it
        listens again, 0.5 s later, then twice as long each time up to 5 s, until the bridge is
        closed: a listener that ended there left the process deaf to other gateways' cancels."""
        delay = RESUBSCRIBE_FIRST_SECONDS  # the backoff of stream_bridge.follow_run
        while True:
            try:
                await self._serve_cancels(self.bridge.cancel_requests())
                return
            except Exception as exc:  # noqa: BLE001 - listened to again unless the bridge was closed
                if self.bridge.closed:
                    return
                log.warning("run_cancel_listener_failed", worker_id=self.worker_id, retry_in=delay, error=_text(exc))
            await asyncio.sleep(delay)
            delay = min(delay * 2, RESUBSCRIBE_MAX_SECONDS)

    async def _queued_cancels(self) -> AsyncIterator[tuple[str, str]]:
        """Every ``runs.poll_seconds``, the cancels asked on the queue rows of this process's runs:
        without a shared bridge (Redis) no other process reaches them otherwise, and a thread
        deleted through another gateway had its run go on writing its checkpoints (red-team finding)."""
        while True:
            await asyncio.sleep(self.config.runs.poll_seconds)
            try:
                asked = await self.queue.cancels_asked(self.worker_id)
            except Exception as exc:  # noqa: BLE001 - asked again at the next beat
                log.warning("run_cancels_not_read", worker_id=self.worker_id, error=_text(exc))
                continue
            for request in asked.items():
                yield request

    async def _serve_cancels(self, requests: AsyncIterator[tuple[str, str]]) -> None:
        """Cancel this process's runs named by ``requests`` (run id, action), each once per action."""
        pending: set[asyncio.Task] = set()
        async for run_id, action in requests:
            run = self._runs.get(run_id)
            if run is None or run.status in FINAL_STATUSES or run.cancel_action == action:
                continue
            task = asyncio.create_task(self.cancel(run.thread_id, run_id, action="rollback" if action == "rollback" else "interrupt"))
            pending.add(task)
            task.add_done_callback(pending.discard)

    async def _rollback(self, run: Run) -> None:
        """Put the thread back to the checkpoint it had before ``run`` and forget the run: its
        checkpoints are deleted (LangGraph's server does so: the thread's history no longer shows
        them), and its files are back as they were at that checkpoint."""
        saver = self.graph.checkpointer
        versions = file_versions_of(saver)
        if not run.executed:
            pass  # cancelled while pending: it changed nothing
        elif run.checkpoint_before is None:
            await saver.adelete_thread(run.thread_id)
            if versions:
                await versions.collect(run.thread_id, saver)
        else:
            if versions:
                await versions.arestore(run.thread_id, run.checkpoint_before)  # and its files
            await drop_run_checkpoints(saver, run.thread_id, run.run_id)
            if versions:
                await versions.collect(run.thread_id, saver)
        await self.threads.delete_run(run.thread_id, run.run_id)
        self._forget(run.run_id)
        self._rolled_back[run.run_id] = run.thread_id
        while len(self._rolled_back) > KEEP_FINISHED:
            del self._rolled_back[next(iter(self._rolled_back))]  # the oldest first (dicts keep their order)
        log.info("run_rolled_back", run_id=run.run_id, thread_id=run.thread_id)

    async def join(self, thread_id: str, run_id: str) -> dict[str, Any]:
        """Wait for the run to end; its final state values (with ``__interrupt__`` when interrupted)."""
        run = self._runs.get(run_id)
        if run is None or run.thread_id != thread_id:
            await self._recorded(run_id)
            record = await self.threads.get_run(thread_id, run_id)
            if record is None and await self.rolled_back(thread_id, run_id):
                return await self._thread_values(thread_id)
            if record is None:
                raise RunNotFoundError(f"no run {run_id} on thread {thread_id}; list runs with GET /threads/{thread_id}/runs")
            waited = False
            while record is not None and (record.get("status") not in FINAL_STATUSES or await self._still_ending(run_id)):
                waited = True
                await asyncio.sleep(REMOTE_JOIN_POLL)  # another process executes it (or will take it over)
                if (mine := self._runs.get(run_id)) is not None and mine.task is not None:
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
        if (mine := self._runs.get(run_id)) is not None and mine.task is not None:
            return not mine.task.done()
        try:
            return await self.queue.get(run_id) is not None
        except Exception as exc:  # noqa: BLE001 - then the record's final status is all there is to go by
            log.warning("run_queue_not_read", run_id=run_id, error=_text(exc))
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
        if self._rolled_back.get(run_id) == thread_id:
            return True
        try:
            return await self.bridge.exists(run_id)
        except Exception as exc:  # noqa: BLE001 - then it is an unknown run
            log.warning("run_stream_not_read", run_id=run_id, error=_text(exc))
            return False

    async def shutdown(self) -> None:
        """Stop the workers, cancel every run of this process and wait for them to stop."""
        for worker in self._workers:
            worker.cancel()
        if self._workers:
            await asyncio.wait(self._workers)
        self._workers = []
        tasks = [r.task for r in self._runs.values() if r.task is not None and not r.task.done()]
        for task in tasks:
            task.cancel()
        if self._recorder is not None and not self._recorder.done():
            tasks.append(self._recorder)  # runs being queued are recorded and offered first
        if tasks:
            await asyncio.wait(tasks)

    async def hand_over(self) -> None:
        """Stop the workers and this process's runs without ending them: each goes back to the
        queue (its hold released), so another worker claims it at once and resumes it from its
        last checkpoint. What a ``herdsman worker`` that is asked to stop does."""
        self._handing_over = True
        await self.shutdown()

    async def _handed_back(self, run: Run) -> bool:
        """When :meth:`hand_over` stopped ``run`` (no one cancelled it): release its hold and
        forget it here, leaving its records and stream to the worker that claims it next; when
        it was stopped because its lease was lost: just forget it here."""
        if run.lease_lost:  # another worker holds it now: its records and stream are that worker's
            self._forget(run.run_id)
            return True
        if not self._handing_over or run.cancel_action is not None:
            return False
        try:
            await self.queue.release(run.run_id, self.worker_id)
        except Exception as exc:  # noqa: BLE001 - its lease then runs out, and it is claimed later
            log.warning("run_not_released", run_id=run.run_id, error=_text(exc))
        self._forget(run.run_id)
        log.info("run_handed_over", run_id=run.run_id, thread_id=run.thread_id)
        return True

    # -- workers: leases and runs taken over ------------------------------------------------

    def _lease_end(self) -> float:
        """When a lease taken or renewed now runs out (seconds since the epoch)."""
        return time.time() + self.config.runs.lease_seconds

    async def _hold(self, run: Run) -> None:
        """Record in the queue that this worker starts ``run`` (and which attempt it is)."""
        try:
            attempt = await self.queue.start(run.run_id, self.worker_id, self._lease_end(), run.checkpoint_before)
        except Exception as exc:  # noqa: BLE001 - the run goes on; only a takeover after a crash is lost
            log.warning("run_not_held", run_id=run.run_id, thread_id=run.thread_id, error=_text(exc))
            return
        if attempt == 0:  # another worker claimed it meanwhile (this process stalled): it is that worker's now
            run.lease_lost = True
            log.warning("run_lease_lost", run_id=run.run_id, thread_id=run.thread_id, worker_id=self.worker_id)
            raise asyncio.CancelledError
        run.attempt = attempt

    def start_workers(self) -> None:
        """With a durable queue: renew this process's leases, and run ``runs.workers`` workers
        that take over runs whose process died. With run limits, the workers also start the runs
        that wait in the queue for their user's turn, so a memory queue needs them too (without
        them a user's runs past ``runs.max_running_per_user`` waited for ever). Stopped by
        :meth:`shutdown`."""
        if not (self.queue.durable or self.config.runs.limited) or self._workers:
            return
        self._workers.append(asyncio.create_task(self._renew_leases(), name="run-leases"))
        self._workers.append(asyncio.create_task(self._serve_cancels(self._queued_cancels()), name="run-cancels"))
        for number in range(self.config.runs.workers):
            self._workers.append(asyncio.create_task(self._work(), name=f"run-worker-{number}"))
        log.info("run_workers_started", worker_id=self.worker_id, workers=self.config.runs.workers)

    async def _renew_leases(self) -> None:
        """Renew every lease this process holds, every third of ``runs.lease_seconds``; a run
        whose lease another worker took meanwhile (this process stalled, or lost the database
        longer than a lease) is stopped here, so it never executes in two places."""
        while True:
            await asyncio.sleep(self.config.runs.lease_seconds / 3)
            asked = time.monotonic()
            try:
                renewed = await self.queue.renew(self.worker_id, self._lease_end())
            except Exception as exc:  # noqa: BLE001 - try again at the next beat
                log.warning("run_leases_not_renewed", worker_id=self.worker_id, error=_text(exc))
                continue
            for run in list(self._runs.values()):
                held = run.held_since is not None and run.held_since < asked
                if held and run.status not in FINAL_STATUSES and run.run_id not in renewed and run.task is not None:
                    run.lease_lost = True
                    run.task.cancel()
                    log.warning("run_lease_lost", run_id=run.run_id, thread_id=run.thread_id, worker_id=self.worker_id)
            # a cancel asked on a row of this process reaches it through _queued_cancels

    async def _work(self) -> None:
        """One worker: claim a run whose lease ran out, execute it to its end, repeat."""
        while True:
            if not self._has_free_slot():  # with run limits: the run waits as a row, not in this process
                await asyncio.sleep(self.config.runs.poll_seconds)
                continue
            try:
                claimed = await self.queue.claim(self.worker_id, time.time(), self._lease_end(),
                                                 self.config.runs.max_running_per_user)
            except Exception as exc:  # noqa: BLE001 - the database may come back
                log.warning("run_claim_failed", worker_id=self.worker_id, error=_text(exc))
                claimed = None
            if claimed is None:
                await asyncio.sleep(self.config.runs.poll_seconds)
                continue
            try:
                run = await self.take_over(claimed)
            except Exception as exc:  # noqa: BLE001 - one bad row must not stop the worker
                await self._drop_unreadable(claimed, exc)
                continue
            if run is not None and run.task is not None:
                await asyncio.wait([run.task])

    async def _drop_unreadable(self, claimed: QueuedRun, exc: Exception) -> None:
        """End a claimed run that cannot be taken over (its row cannot be read back as a run,
        as after an upgrade that changed what a run holds) as an error, and drop its row."""
        log.error("run_not_taken_over", run_id=claimed.run_id, thread_id=claimed.thread_id, error=_text(exc))
        try:
            record = await self.threads.get_run(claimed.thread_id, claimed.run_id)
            if record is not None and record.get("status") not in FINAL_STATUSES:
                message = f"the run could not be resumed ({type(exc).__name__}: {_text(exc)}); start a new run on the thread"
                record.update(status="error", updated_at=utc_now(), error={"error": "RunNotResumable", "message": message})
                await self.threads.put_run(record)
                await self.threads.update(claimed.thread_id, status="error")
            await self.queue.remove(claimed.run_id)
        except Exception as store_exc:  # noqa: BLE001 - its lease runs out and it is tried again
            log.warning("run_not_dropped", run_id=claimed.run_id, error=_text(store_exc))

    async def take_over(self, claimed: QueuedRun) -> Run | None:
        """Execute a run claimed from the queue: resumed from its last checkpoint when it had
        started, or failed when it was started ``runs.max_attempts`` times already."""
        mine = self._runs.get(claimed.run_id)
        if mine is not None and mine.status not in FINAL_STATUSES:
            return None  # this process still executes it (its lease was renewed late)
        record = await self.threads.get_run(claimed.thread_id, claimed.run_id)
        if record is None or record.get("status") in FINAL_STATUSES:
            await self.queue.remove(claimed.run_id)  # its thread was deleted, or it ended just before its process did
            log.info("run_dropped_from_queue", run_id=claimed.run_id, thread_id=claimed.thread_id)
            return None
        now = utc_now()
        run = Run(run_id=claimed.run_id, spec=RunSpec(**claimed.spec), created_at=claimed.created_at, updated_at=now,
                  checkpoint_before=claimed.checkpoint_before, attempt=claimed.attempts, held_since=time.monotonic())
        run.saved.set()
        self._runs[run.run_id] = run
        self._by_thread.setdefault(run.thread_id, []).append(run)
        # a run whose worker died is a warning; one queued by a process without workers is routine
        report = log.warning if claimed.status == "running" else log.info
        report("run_taken_over" if claimed.status == "running" else "run_claimed", run_id=run.run_id,
               thread_id=run.thread_id, attempts=claimed.attempts, previous_worker=claimed.worker_id)
        run.executed = claimed.status == "running"
        if claimed.cancel_action in ("interrupt", "rollback"):
            run.cancel_action = claimed.cancel_action  # cancelled while no worker held it: not resumed
            # ended by a task of its own, as every run here: a join that finds it waits for that task,
            # not only for its status (its input is written before the status turns final)
            run.task = asyncio.create_task(self._end_cancelled(run), name=f"run-{run.run_id}")
            await run.task
            return run
        if claimed.attempts >= self.config.runs.max_attempts:
            run.error = {"error": "WorkerLost", "message": WORKER_LOST_MESSAGE.format(attempts=claimed.attempts)}
            await self._set_status(run, "error")
            await self._publish(run, "error", run.error)
            await self._end(run, 0.0)
            return run
        if run.executed:  # a start again (the first start's metadata event went out when it was accepted)
            await self._publish(run, "metadata", {"run_id": run.run_id, "attempt": claimed.attempts + 1})
        run.task = asyncio.create_task(
            self._execute(run, [], taken_over=True, resume=claimed.status == "running"), name=f"run-{run.run_id}"
        )
        self._tell_watchers(run)
        return run

    async def _end_cancelled(self, run: Run) -> None:
        """End a run that was cancelled while no worker held it, now that its turn has come
        (claimed in order, or nothing of its thread ahead): its input kept, ``interrupted``, and
        rolled back when that was asked."""
        await self._keep_input(run)
        await self._set_status(run, "interrupted")
        await self._end(run, 0.0)

    def _tell_watchers(self, run: Run) -> None:
        """Hand a new run of the thread (executed here or queued for a worker) to its watchers."""
        for queue in self._watchers.get(run.thread_id, ()):
            queue.put_nowait(run)

    # -- execution -------------------------------------------------------------------------

    def _graph_config(self, run: Run) -> dict[str, Any]:
        """The graph's config: the client's ``configurable`` (checked in :meth:`check`) under the
        keys the manager sets (``run_input.RESERVED_CONFIGURABLE``), merged as dicts, never as
        keyword arguments, so no client key can collide with a parameter name."""
        spec = run.spec
        user = dict(spec.config or {})
        owned = {**self._owned(spec), "run_id": run.run_id}
        if spec.checkpoint_id:
            owned.update(checkpoint_id=spec.checkpoint_id, checkpoint_ns=spec.checkpoint_ns)
        cfg = run_config(self.config, spec.thread_id)
        cfg["configurable"] = {**(user.pop("configurable", None) or {}), **cfg["configurable"], **owned}
        if "recursion_limit" in user:
            cfg["recursion_limit"] = user.pop("recursion_limit")
        cfg["metadata"] = {**(user.pop("metadata", None) or {}), **spec.metadata, "run_id": run.run_id,
                           "assistant_id": spec.assistant_id, "graph_id": LEAD_AGENT_NAME}
        cfg.update({k: v for k, v in user.items() if k in ("tags", "run_name")})
        return cfg

    async def _set_status(self, run: Run, status: RunStatus) -> None:
        """Set the run's status and save its record (a store that fails is logged: the status in
        memory is what decides whether the thread is busy)."""
        run.status = status
        run.updated_at = utc_now()
        try:
            await self.threads.put_run(run.to_dict())
        except Exception as exc:  # noqa: BLE001 - see the docstring
            log.warning("run_record_not_saved", run_id=run.run_id, thread_id=run.thread_id, status=status, error=_text(exc))

    async def _publish(self, run: Run, event: str, data: Any) -> None:
        await self.bridge.publish(run.run_id, event, dumps(data))

    async def _publish_metadata(self, run: Run) -> None:
        """Publish a new run's ``metadata`` event and keep it as ``run.first_event``: the stream
        of the request that created the run sends it at once, without reading it back."""
        data = dumps({"run_id": run.run_id, "attempt": 1})
        run.first_event = StreamEvent(await self.bridge.publish(run.run_id, "metadata", data), "metadata", data)

    async def _save_new(self, run: Run) -> None:
        """Write a new run's record and mark its thread busy (after its first event went out).

        A store that fails here is logged, not fatal: the run goes on, and its record is written
        again at each change of status.
        """
        try:
            await self.threads.update(
                run.thread_id,
                metadata={"graph_id": LEAD_AGENT_NAME, "assistant_id": run.spec.assistant_id},
                status="busy",
            )
            await self.threads.put_run(run.to_dict())
        except Exception as exc:  # noqa: BLE001 - see the docstring
            log.warning("run_record_not_saved", run_id=run.run_id, thread_id=run.thread_id, error=str(exc))
        finally:
            run.saved.set()

    async def _execute(self, run: Run, previous: list[asyncio.Task], *, taken_over: bool = False, resume: bool = False) -> None:
        """Save the run's records (a new run), wait for the thread's earlier runs and a free
        slot, then run the graph (``resume``: from the run's last checkpoint); never raises, and
        always ends the run (``error`` when anything failed)."""
        run.began = True
        try:
            if not taken_over:
                await self._save_new(run)
            if previous:
                await asyncio.wait(previous)
            if run.cancel_action is not None:  # cancelled before its task began
                raise asyncio.CancelledError
            await self._slots.acquire()
        except asyncio.CancelledError:
            if not await self._handed_back(run):
                await self._stop_unstarted(run, previous)
            return
        except Exception as exc:  # noqa: BLE001 - a run that cannot be set up ends as an error
            await self._fail(run, exc)
            await self._end(run, 0.0)
            return
        try:
            await self._run_graph(run, resume=resume)
        except Exception as exc:  # noqa: BLE001 - a safety net: no run may stay pending or running
            log.exception("run_not_ended", run_id=run.run_id, thread_id=run.thread_id)
            if run.status not in FINAL_STATUSES:
                await self._fail(run, exc)
                await self._end(run, 0.0)
        finally:
            self._slots.release()

    async def _stop_unstarted(self, run: Run, previous: list[asyncio.Task]) -> None:
        """End a run stopped before its graph began: its input kept, after what the thread's runs
        ahead of it wrote (it waits for them), then ``interrupted``."""
        try:
            if previous and self._keeps_input(run):
                await asyncio.wait(previous)
        except asyncio.CancelledError:  # stopped again while it waited (the process stops): it ends now
            log.warning("run_input_not_kept", run_id=run.run_id, thread_id=run.thread_id, error="stopped again")
        else:
            await self._keep_input(run)
        await self._set_status(run, "interrupted")
        await self._end(run, 0.0)

    async def _fail(self, run: Run, exc: BaseException) -> None:
        """End ``run`` as an error: status, record, and an ``error`` event for its stream."""
        run.error = {"error": type(exc).__name__, "message": _text(exc)}
        await self._set_status(run, "error")
        try:
            await self._publish(run, "error", run.error)
        except Exception as publish_exc:  # noqa: BLE001 - the status is what frees the thread
            log.warning("run_error_not_published", run_id=run.run_id, error=_text(publish_exc))
        log.warning("run_failed", run_id=run.run_id, error=run.error["error"], message=run.error["message"])

    async def _run_graph(self, run: Run, *, resume: bool = False) -> None:
        """Stream the graph for ``run`` and publish what it yields; never raises.

        ``resume`` (a run another process had started): when the thread's head checkpoint is
        the run's own, the graph goes on from it (``None`` input) instead of starting again.
        """
        started = time.monotonic()
        spec = run.spec
        translator = EventTranslator(spec.stream_mode)
        said = PartialAnswer()
        structlog.contextvars.bind_contextvars(run_id=run.run_id, thread_id=run.thread_id)
        try:
            cfg = self._graph_config(run)
            if self._pause is not None:
                await self._pause()  # a burst of new requests goes first, then this run starts
            # the saved head, not a state snapshot: a head whose writes cannot be applied must
            # not stop a run that starts from an earlier checkpoint
            head = await self.graph.checkpointer.aget_tuple({"configurable": {"thread_id": run.thread_id, "checkpoint_ns": ""}})
            resuming = resume and head is not None and (head.metadata or {}).get("run_id") == run.run_id
            if not resume:
                run.checkpoint_before = (head.config.get("configurable") or {}).get("checkpoint_id") if head else None
            if resuming:
                for key in ("checkpoint_id", "checkpoint_ns"):  # go on from the head, not from where it began
                    cfg["configurable"].pop(key, None)
            elif spec.checkpoint_id and not spec.checkpoint_ns and (versions := file_versions_of(self.graph.checkpointer)):
                await versions.arestore(run.thread_id, spec.checkpoint_id)  # time travel brings the files back too
            run.executed = True
            await self._hold(run)
            if resuming:  # a command in flight when its worker died is reported, not run again
                await settle_inflight_tool_calls(self.graph, cfg)
            await self._set_status(run, "running")
            for listener in self.listeners:
                listener.run_started(run)
            graph_input = None if resuming else _command(spec.command) if spec.command else spec.input
            if run.cancel_action is not None:  # a cancel that an await above lost (a library that swallows it)
                raise asyncio.CancelledError
            kwargs: dict[str, Any] = {
                "stream_mode": graph_modes(spec.stream_mode),
                "subgraphs": True,
                "interrupt_before": spec.interrupt_before,
                "interrupt_after": spec.interrupt_after,
            }
            run.scope = open_scope(self.config.subagents, cfg)  # fresh for each execution of the run
            kwargs["context"] = with_scope(spec.context, run.scope)
            if spec.durability:
                kwargs["durability"] = spec.durability
            elif file_versions_of(self.graph.checkpointer):
                kwargs["durability"] = "sync"  # each step's files are captured before the next step runs

            if "events" in spec.stream_mode:
                chunks = stream_with_events(self.graph, graph_input, cfg, kwargs)
            else:
                chunks = self.graph.astream(graph_input, cfg, **kwargs)
            # closed on a stop too: a stop that finds the graph between two chunks (publishing one)
            # left it suspended, and the checkpoints it had begun to save were written (or not)
            # only when the event loop finalized it, after the run had ended
            async with aclosing(chunks):
                async for namespace, mode, chunk in chunks:
                    said.see(tuple(namespace), mode, chunk)
                    if mode == "updates":
                        self._report_usage(run, chunk)
                    elif mode == "custom" and (outcome := subagent_outcome(chunk)):
                        for listener in self.listeners:
                            listener.subagent_finished(run, outcome)
                    if namespace and not spec.stream_subgraphs:
                        continue
                    for name, data in translator.translate(tuple(namespace), mode, chunk):
                        await self._publish(run, name, data)
                    if self._pause is not None:
                        await self._pause()
            run.result = translator.final_values()
            if translator.interrupts and "values" in spec.stream_mode:
                await self._publish(run, "values", run.result)
            await self._set_status(run, "success")
        except asyncio.CancelledError:
            if await self._handed_back(run):
                return
            # the input and the words said so far go into the thread before the status turns final: a
            # delete that waits for the final status must find them there, not have them written after it
            await self._keep_input(run)
            await self._keep_said(run, said)
            await self._set_status(run, "interrupted")
            log.info("run_cancelled", action=run.cancel_action)
        except Exception as exc:  # noqa: BLE001 - any failure of the agent ends the run as an error
            await self._fail(run, exc)
        finally:
            run.scope = None  # the run's sub-agents are over; nothing of it is kept
            structlog.contextvars.unbind_contextvars("run_id", "thread_id")
        await self._end(run, time.monotonic() - started, interrupted=bool(translator.interrupts))

    @staticmethod
    def _keeps_input(run: Run) -> bool:
        """Whether a stop of ``run`` keeps its input: a stop that is not a rollback (which undoes
        the run, as LangGraph's server does), of a run on a lasting thread sent with input (a
        command resumes or updates what the thread has; it brings no message of its own)."""
        spec = run.spec
        return run.cancel_action != "rollback" and spec.input is not None and not spec.command and not spec.temporary

    async def _keep_input(self, run: Run) -> None:
        """After a stop: make sure the run's input is in the thread (``kept_input.py``), even when the
        run was stopped before its graph began; a run that had not begun counts as executed once it
        wrote its input (so a rollback asked later removes it, and the thread shows it interrupted)."""
        if not self._keeps_input(run):
            return
        try:
            saver = self.graph.checkpointer
            if not run.executed:
                head = await saver.aget_tuple({"configurable": {"thread_id": run.thread_id, "checkpoint_ns": ""}})
                run.checkpoint_before = (head.config.get("configurable") or {}).get("checkpoint_id") if head else None
                if run.spec.checkpoint_id and not run.spec.checkpoint_ns and (versions := file_versions_of(saver)):
                    await versions.arestore(run.thread_id, run.spec.checkpoint_id)  # as the run would have
                run.executed = True
            kwargs: dict[str, Any] = {}
            if run.spec.durability or file_versions_of(saver):
                kwargs["durability"] = run.spec.durability or "sync"
            if await keep_input(self.graph, self._graph_config(run), run.spec.input, **kwargs):
                log.info("run_input_kept", run_id=run.run_id, thread_id=run.thread_id)
        except (Exception, asyncio.CancelledError) as exc:  # noqa: BLE001 - the stop itself must still end the run
            # (a second stop, the process's, cancels the run's task again while it writes)
            log.warning("run_input_not_kept", run_id=run.run_id, thread_id=run.thread_id, error=_text(exc))

    async def _keep_said(self, run: Run, said: PartialAnswer) -> None:
        """After a stop (not a rollback, which undoes the run): keep the streamed words of the
        answer in progress in the thread."""
        if run.cancel_action == "rollback":
            return
        try:
            if await said.keep(self.graph, run.thread_id):
                log.info("run_partial_answer_kept", run_id=run.run_id)
        except Exception as exc:  # noqa: BLE001 - the stop itself must still end the run
            log.warning("run_partial_answer_not_kept", run_id=run.run_id, error=_text(exc))

    @staticmethod
    def _has_breakpoints(run: Run) -> bool:
        """Whether the run could stop at a breakpoint (the lead graph has none of its own)."""
        return bool(run.spec.interrupt_before or run.spec.interrupt_after)

    async def _has_pending_tasks(self, thread_id: str) -> bool:
        snapshot = await self.graph.aget_state({"configurable": {"thread_id": thread_id}})
        return bool(snapshot.next)

    def _report_usage(self, run: Run, update: Any) -> None:
        for model, tokens_in, tokens_out in token_usage(update):
            for listener in self.listeners:
                listener.model_tokens(run, model, tokens_in, tokens_out)
        for tool, failed in tool_results(update):
            for listener in self.listeners:
                listener.tool_finished(run, tool, failed)

    async def _settle_thread(self, run: Run, interrupted: bool) -> None:
        """After ``run``: delete its temporary thread, or set the thread's status (when no other
        run of it is in progress)."""
        if run.spec.temporary:
            await self.graph.checkpointer.adelete_thread(run.thread_id)
            if versions := file_versions_of(self.graph.checkpointer):
                await versions.collect(run.thread_id, self.graph.checkpointer)
            # its files and sandbox too (they stayed on disk: <home>/threads/<id> of every stateless run)
            await asyncio.to_thread(remove_thread_files, self.sandbox, self.config.resolve_home(), run.thread_id)
            await self.threads.delete(run.thread_id)
        elif not self.active_runs(run.thread_id):
            status = "idle"
            if run.status == "error":
                status = "error"
            elif run.status == "interrupted" and run.executed and run.cancel_action == "interrupt":
                status = "interrupted"  # stopped mid-way: LangGraph's server shows a cancelled run's thread so
            elif run.status == "success" and (interrupted or (self._has_breakpoints(run) and await self._has_pending_tasks(run.thread_id))):
                status = "interrupted"  # an interrupt() or a breakpoint (interrupt_before/after)
            await self.threads.update(run.thread_id, status=status)

    async def _end(self, run: Run, seconds: float, interrupted: bool = False) -> None:
        """Settle the thread's status, close the run's stream, tell the listeners.

        The thread is settled first, so a client that reads it as soon as the stream ends sees
        it idle (as LangGraph's server answers). Each step is tried on its own (failures are
        logged): a store or bridge that fails here must not keep the others from happening.

        A run stopped with ``rollback`` is rolled back first, while its queue row still holds the
        thread: a run queued behind it (``multitask_strategy: rollback`` sent to another gateway)
        starts only from the thread as it was before this run.
        """
        if run.cancel_action == "rollback" and run.status == "interrupted":
            try:
                await self._rollback(run)
            except Exception as exc:  # noqa: BLE001 - see the docstring
                log.warning("run_not_rolled_back", run_id=run.run_id, thread_id=run.thread_id, error=_text(exc))
        try:
            await self.queue.remove(run.run_id)
        except Exception as exc:  # noqa: BLE001 - see the docstring
            log.warning("run_not_dequeued", run_id=run.run_id, thread_id=run.thread_id, error=_text(exc))
        try:
            await self._settle_thread(run, interrupted)
        except Exception as exc:  # noqa: BLE001 - see the docstring
            log.warning("thread_status_not_saved", run_id=run.run_id, thread_id=run.thread_id, error=_text(exc))
        try:
            await self._publish(run, END_EVENT, None)
            await self.bridge.finish(run.run_id)
        except Exception as exc:  # noqa: BLE001 - see the docstring
            log.warning("run_stream_not_closed", run_id=run.run_id, error=_text(exc))
        for listener in self.listeners:
            listener.run_finished(run, seconds)
        self._finished.append(run.run_id)
        while len(self._finished) > KEEP_FINISHED:
            self._forget(self._finished.popleft())
        log.info("run_finished", run_id=run.run_id, thread_id=run.thread_id, status=run.status, seconds=round(seconds, 3))
