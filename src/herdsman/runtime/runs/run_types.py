"""The data of runs: what a client asks for (:class:`RunSpec`), a run's record and task
(:class:`Run`), who hears about runs (:class:`RunListener`), the errors a run's creation or change
answers with (each with its HTTP status), and the small rules several parts of the run manager
share (whether a stop keeps the input, the ``configurable`` keys the manager owns).

Kept apart from :mod:`herdsman.runtime.runs.runs` so that the run manager's parts (the executor, the
recorder, the workers, the cancel relay) can use them without importing the manager.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

from langgraph.types import Command

from herdsman.agents.lead import LEAD_AGENT_NAME
from herdsman.runtime.runs.run_admission import Admission, Decision
from herdsman.runtime.streaming.serde import to_jsonable
from herdsman.runtime.streaming.stream_bridge import StreamEvent
from herdsman.turns.run_scope import RunScope

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
    record_due: bool = False  # its status changed in memory; the record is saved when it ends (with its thread's)

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


def command_of(data: dict[str, Any]) -> Command:
    """The LangGraph ``Command`` a run's ``command`` asks for."""
    return Command(resume=data.get("resume"), update=data.get("update"), goto=data.get("goto") or ())


def busy_error(thread_id: str, run_id: str) -> ThreadBusyError:
    """The refusal of a run sent with ``multitask_strategy: reject`` to a busy thread."""
    return ThreadBusyError(
        f"thread {thread_id} already has run {run_id} in progress; wait for it (GET .../runs/{{run_id}}/join), "
        "cancel it, or send multitask_strategy interrupt, rollback or enqueue"
    )


def refusal(decision: Decision, admission: Admission, spec: RunSpec) -> RunError | None:
    """The error for a run the queue did not admit (None when it did)."""
    counts = decision.counts
    if decision.verdict == "busy":
        return busy_error(spec.thread_id, counts.thread_run or "")
    if decision.verdict == "queue_full":
        return QueueFullError(
            f"the run queue is full: {counts.waiting} runs wait for a worker "
            f"(runs.max_queued: {admission.max_queued}); "
            f"send the run again in {QUEUE_FULL_RETRY_AFTER} seconds (Retry-After), or add workers (herdsman worker)"
        )
    if decision.verdict == "user_full":
        who = f"user {spec.user}" if spec.user else "the local user"
        return RunLimitError(
            f"{who} has {counts.user_held} runs in progress "
            f"(runs.max_running_per_user: {admission.max_running_per_user}) "
            f"and {counts.user_waiting} waiting (runs.max_queued_per_user: {admission.max_queued_per_user}); "
            "wait for one to end (GET /threads/{thread_id}/runs/{run_id}/join) or cancel one (POST /runs/cancel), "
            "then send this run again"
        )
    return None


def error_text(exc: BaseException) -> str:
    """An exception's message as text that always encodes (lone surrogates replaced)."""
    text = str(exc) or type(exc).__name__
    return text.encode("utf-8", "replace").decode("utf-8")


def owned_configurable(spec: RunSpec) -> dict[str, Any]:
    """The ``configurable`` values the manager sets itself that a client may echo unchanged."""
    return {"thread_id": spec.thread_id, "assistant_id": spec.assistant_id, "graph_id": LEAD_AGENT_NAME}


def keeps_input(run: Run) -> bool:
    """Whether a stop of ``run`` keeps its input: a stop that is not a rollback (which undoes
    the run, as LangGraph's server does), of a run on a lasting thread sent with input (a
    command resumes or updates what the thread has; it brings no message of its own)."""
    spec = run.spec
    return run.cancel_action != "rollback" and spec.input is not None and not spec.command and not spec.temporary
