"""Request and response bodies of the LangGraph-compatible API (pydantic, shown in OpenAPI).

Unknown request keys are ignored rather than refused: LangGraph clients and UIs send fields
this server does not use (``webhook``, ``feedback_keys``, ``langsmith_tracer``...), and
refusing them would break those clients.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from herdsman.runtime.runs.run_events import API_STREAM_MODES
from herdsman.runtime.runs.run_input import RunInputError, check_json

UNSTORABLE = "unstorable_json"  # the pydantic error type of a body no database could keep


class StorableBody(BaseModel):
    """A request body whose every value a database can keep.

    Refused whole, as a 422 naming the field, before any route reads it: text that is not valid
    Unicode (a lone surrogate such as ``\\ud800``, which JSON escapes can carry), integers beyond
    64 bits, nesting deeper than 255 levels. One check for every route, so none can pass such a
    value on to SQLite, Postgres or a log line that cannot encode it.
    """

    model_config = ConfigDict(extra="ignore")

    @model_validator(mode="before")
    @classmethod
    def _storable(cls, data: Any) -> Any:
        try:
            check_json("body", data)
        except RunInputError as exc:
            field = "the request body" if exc.field == "body" else exc.field.removeprefix("body.")
            raise PydanticCustomError(UNSTORABLE, "{field}: {reason}", {"field": field, "reason": exc.reason}) from None
        return data


# -- assistants ------------------------------------------------------------------------------


class AssistantSearch(StorableBody):
    """``POST /assistants/search``."""

    graph_id: str | None = None
    metadata: dict[str, Any] | None = None
    name: str | None = None
    limit: int = Field(10, ge=0, le=1000)
    offset: int = Field(0, ge=0)
    sort_by: str | None = None
    sort_order: Literal["asc", "desc"] | None = None
    select: list[str] | None = None


class AssistantCount(StorableBody):
    """``POST /assistants/count``."""

    graph_id: str | None = None
    metadata: dict[str, Any] | None = None
    name: str | None = None


class AssistantCreate(StorableBody):
    """``POST /assistants``: a custom agent (its settings in ``context``, see the README)."""

    graph_id: str = Field(..., description='The graph the assistant runs: "lead_agent".')
    assistant_id: str | None = Field(None, description="A UUID; a new one when omitted.")
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    if_exists: Literal["raise", "do_nothing"] = "raise"
    name: str | None = Field(None, max_length=200)
    description: str | None = Field(None, max_length=2000)


class AssistantPatch(StorableBody):
    """``PATCH /assistants/{assistant_id}``: a new version (given fields replace the latest's)."""

    graph_id: str | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    name: str | None = Field(None, max_length=200)
    description: str | None = Field(None, max_length=2000)


class AssistantVersionsSearch(StorableBody):
    """``POST /assistants/{assistant_id}/versions``."""

    metadata: dict[str, Any] | None = None
    limit: int = Field(10, ge=0, le=1000)
    offset: int = Field(0, ge=0)


class AssistantVersionChange(StorableBody):
    """``POST /assistants/{assistant_id}/latest``."""

    version: int = Field(..., ge=1)


class Assistant(BaseModel):
    """An assistant: a graph with its configuration."""

    assistant_id: str
    graph_id: str
    config: dict[str, Any]
    context: dict[str, Any]
    created_at: str
    updated_at: str
    metadata: dict[str, Any]
    version: int
    name: str
    description: str | None


# -- threads ---------------------------------------------------------------------------------


class ThreadCreate(StorableBody):
    """``POST /threads``."""

    thread_id: str | None = Field(None, description="Id of the new thread; a UUID when omitted.")
    metadata: dict[str, Any] | None = None
    if_exists: Literal["raise", "do_nothing"] = "raise"


class ThreadPatch(StorableBody):
    """``PATCH /threads/{thread_id}``: metadata is merged into the thread's."""

    metadata: dict[str, Any] = Field(default_factory=dict)


class ThreadSearch(StorableBody):
    """``POST /threads/search``."""

    metadata: dict[str, Any] | None = None
    values: dict[str, Any] | None = None
    ids: list[str] | None = None
    status: Literal["idle", "busy", "interrupted", "error"] | None = None
    limit: int = Field(10, ge=0, le=1000)
    offset: int = Field(0, ge=0)
    sort_by: Literal["thread_id", "status", "created_at", "updated_at"] | None = None
    sort_order: Literal["asc", "desc"] | None = None
    select: list[str] | None = None


class ThreadCount(StorableBody):
    """``POST /threads/count``."""

    metadata: dict[str, Any] | None = None
    values: dict[str, Any] | None = None
    status: Literal["idle", "busy", "interrupted", "error"] | None = None


class ThreadPrune(StorableBody):
    """``POST /threads/prune``."""

    thread_ids: list[str] = Field(..., max_length=1000, description="The threads to prune.")
    strategy: Literal["delete", "keep_latest"] = Field(
        "delete", description="delete: the whole thread; keep_latest: only its older checkpoints."
    )


class PruneResult(BaseModel):
    """How many threads ``POST /threads/prune`` pruned."""

    pruned_count: int


class Thread(BaseModel):
    """A thread as the LangGraph API returns it."""

    thread_id: str
    created_at: str
    updated_at: str
    metadata: dict[str, Any]
    status: Literal["idle", "busy", "interrupted", "error"]
    values: dict[str, Any] | None = None
    interrupts: dict[str, list[Any]] = Field(default_factory=dict)
    error: str | None = Field(None, description="Set when the thread's state cannot be read; says what to do.")


# -- state -----------------------------------------------------------------------------------


class CheckpointRef(StorableBody):
    """A checkpoint of a thread."""

    thread_id: str | None = None
    checkpoint_ns: str = ""
    checkpoint_id: str | None = None
    checkpoint_map: dict[str, Any] | None = None


class StateUpdate(StorableBody):
    """``POST /threads/{thread_id}/state``."""

    values: dict[str, Any] | list[dict[str, Any]] | None = None
    checkpoint_id: str | None = None
    checkpoint: CheckpointRef | None = None
    as_node: str | None = None


class StateAtCheckpoint(StorableBody):
    """``POST /threads/{thread_id}/state/checkpoint``."""

    checkpoint: CheckpointRef
    subgraphs: bool = False


class HistoryRequest(StorableBody):
    """``POST /threads/{thread_id}/history``."""

    limit: int = Field(10, ge=1, le=1000)
    before: CheckpointRef | str | None = None
    metadata: dict[str, Any] | None = None
    checkpoint: CheckpointRef | None = None


class ThreadState(BaseModel):
    """The state of a thread at one checkpoint."""

    values: dict[str, Any] | list[Any]
    next: list[str]
    tasks: list[dict[str, Any]]
    checkpoint: dict[str, Any] | None
    metadata: dict[str, Any] | None
    created_at: str | None
    parent_checkpoint: dict[str, Any] | None
    interrupts: list[dict[str, Any]]
    error: str | None = Field(None, description="Set when this state cannot be read; the values are as last saved.")


class StateUpdateResult(BaseModel):
    """The checkpoint written by a state update (as LangGraph's server: the checkpoint, the same as
    ``configurable``, and its id)."""

    checkpoint: dict[str, Any]
    configurable: dict[str, Any]
    checkpoint_id: str | None


# -- runs ------------------------------------------------------------------------------------


class RunCommand(StorableBody):
    """``command``: resume an interrupt, update the state, or go to a node."""

    resume: Any = None
    update: Any = None
    goto: Any = None


class RunCreate(StorableBody):
    """The body of every run-creating endpoint (``/runs/stream``, ``/runs/wait``, ``/runs``)."""

    assistant_id: str = Field(..., description='The assistant or graph id: "lead_agent".')
    input: Any = None
    command: RunCommand | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    stream_mode: str | list[str] = "values"
    stream_subgraphs: bool = False
    stream_resumable: bool = False
    on_disconnect: Literal["cancel", "continue"] = "continue"
    multitask_strategy: Literal["reject", "interrupt", "rollback", "enqueue"] = Field(
        "enqueue",
        description="When the thread has a run in progress: wait for it (enqueue, as LangGraph's server), "
        "refuse (reject), or stop it first (interrupt, rollback).",
    )
    if_not_exists: Literal["create", "reject"] = "reject"
    on_completion: Literal["delete", "keep"] | None = None
    checkpoint: CheckpointRef | None = None
    checkpoint_id: str | None = None
    interrupt_before: Literal["*"] | list[str] | None = None
    interrupt_after: Literal["*"] | list[str] | None = None
    durability: Literal["sync", "async", "exit"] | None = None

    @field_validator("stream_mode")
    @classmethod
    def _known_modes(cls, value: str | list[str]) -> str | list[str]:
        modes = [value] if isinstance(value, str) else value
        unknown = [m for m in modes if m not in API_STREAM_MODES]
        if unknown:
            raise ValueError(f"unknown stream mode(s) {unknown}; use some of {list(API_STREAM_MODES)}")
        return value


class RunsCancel(StorableBody):
    """``POST /runs/cancel``: the runs ``run_ids`` of ``thread_id``, or every run with ``status``."""

    thread_id: str | None = None
    run_ids: list[str] | None = Field(None, max_length=1000)
    status: Literal["pending", "running", "all"] | None = None


class Run(BaseModel):  # type: ignore[no-redef]  # its field kwargs (the API's): pydantic's plugin sees __init__'s **kwargs
    """A run as the LangGraph API returns it."""

    run_id: str
    thread_id: str
    assistant_id: str
    created_at: str
    updated_at: str
    status: Literal["pending", "running", "error", "success", "timeout", "interrupted"]
    metadata: dict[str, Any]
    multitask_strategy: str
    kwargs: dict[str, Any]
    error: dict[str, str] | None = None
    attempt: int = Field(1, description="How many times a worker started the run (more than 1 after its worker died).")


# -- crons -----------------------------------------------------------------------------------


class _CronFields(StorableBody):
    """What a cron body may set besides its schedule: when it stops, and the run it starts."""

    timezone: str | None = Field(
        None, description='IANA timezone of the schedule, e.g. "Europe/Paris"; UTC when omitted.'
    )
    end_time: str | None = Field(None, description="ISO-8601 time after which the cron no longer fires.")
    input: Any = None
    metadata: dict[str, Any] | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    webhook: str | None = Field(None, description="Kept with the cron, never called.")
    interrupt_before: Literal["*"] | list[str] | None = None
    interrupt_after: Literal["*"] | list[str] | None = None
    on_run_completed: Literal["delete", "keep"] | None = Field(
        None, description="For a cron without thread: delete (default) or keep the new thread of each run."
    )
    stream_mode: str | list[str] | None = None
    stream_subgraphs: bool | None = None
    stream_resumable: bool | None = None
    durability: Literal["sync", "async", "exit"] | None = None


class CronCreate(_CronFields):
    """``POST /runs/crons`` and ``POST /threads/{thread_id}/runs/crons``: a schedule and the run it
    starts (``checkpoint_during``, deprecated, is ignored)."""

    schedule: str = Field(..., description='Cron expression in UTC (or `timezone`), e.g. "0 9 * * 1-5".')
    assistant_id: str = Field(..., description='The assistant or graph id: "lead_agent".')
    multitask_strategy: Literal["reject", "interrupt", "rollback", "enqueue"] | None = Field(
        None, description="For a thread's cron, when the thread is busy at firing time (default enqueue)."
    )
    enabled: bool = True


class CronPatch(_CronFields):
    """``PATCH /runs/crons/{cron_id}``: the fields to change (``end_time: null`` clears the end time)."""

    schedule: str | None = None
    enabled: bool | None = None


class CronSearch(StorableBody):
    """``POST /runs/crons/search``."""

    assistant_id: str | None = None
    thread_id: str | None = None
    enabled: bool | None = None
    metadata: dict[str, Any] | None = None
    limit: int = Field(10, ge=0, le=1000)
    offset: int = Field(0, ge=0)
    sort_by: (
        Literal["cron_id", "assistant_id", "thread_id", "created_at", "updated_at", "next_run_date", "end_time"] | None
    ) = None
    sort_order: Literal["asc", "desc"] | None = None
    select: list[str] | None = None


class CronCount(StorableBody):
    """``POST /runs/crons/count``."""

    assistant_id: str | None = None
    thread_id: str | None = None
    metadata: dict[str, Any] | None = None


class CronFiring(BaseModel):
    """One firing of a cron: when it was due, when it fired, its run and how that run ended."""

    cron_id: str
    scheduled_at: str
    fired_at: str
    run_id: str | None
    thread_id: str | None
    status: str = Field(description="starting, pending, running, then the run's final status; error if no run started.")
    error: str | None


class Cron(BaseModel):
    """A cron as the LangGraph API returns it, plus ``last_run``: its latest firing."""

    cron_id: str
    assistant_id: str
    thread_id: str | None
    user_id: str | None
    schedule: str
    timezone: str | None
    end_time: str | None
    on_run_completed: str | None
    payload: dict[str, Any]
    metadata: dict[str, Any]
    enabled: bool
    next_run_date: str | None
    created_at: str
    updated_at: str
    last_run: CronFiring | None = None
