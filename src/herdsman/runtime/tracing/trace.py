"""A thread's trace: every model call and tool call of its runs, in order, from its checkpoints.

:func:`build_trace` is pure: it takes the thread's checkpoints oldest first (their messages and
the ``run_id`` LangGraph copies from the run's config into checkpoint metadata) and attributes
each message to the run whose checkpoint first holds it. Then each message becomes a step:

- ``input``: a user message;
- ``model``: an AI message: the model's name, a preview of its text, the tool calls it asked
  for, and its token usage (``usage_metadata``);
- ``tool``: a tool result: the tool's name and arguments (from the call that asked for it), a
  preview of its result, ``success`` or ``error``, and what its artifact tells: for ``bash``
  the command, exit code, stdout and stderr; the files a tool created, modified or deleted
  (see ``herdsman.sandbox.tools``); for ``task`` the sub-agents' token usage.

:func:`read_trace` is the thin I/O edge: it reads the checkpoints through the graph's
checkpointer, one pair per run where it can (see :func:`read_checkpoints`), and calls
:func:`build_trace`. Long texts are cut to
:data:`MAX_TEXT_CHARS` with a note saying how much was left out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from pydantic import BaseModel, Field

from herdsman.runtime.streaming.serde import to_jsonable

MAX_TEXT_CHARS = 20_000
MAX_PREVIEW_CHARS = 2_000


class TokenUsage(BaseModel):
    """Tokens of one model call, or summed over several."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0


class RequestedToolCall(BaseModel):
    """A tool call a model asked for."""

    id: str | None = None
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class FileChange(BaseModel):
    """A file a tool created, modified or deleted (virtual path)."""

    path: str
    action: str


class BashRun(BaseModel):
    """What the bash tool ran and how it ended.

    ``stdout``/``stderr`` are None when the sandbox could not tell them apart; ``output`` then
    holds both merged.
    """

    command: str
    exit_code: int
    stdout: str | None = None
    stderr: str | None = None
    output: str | None = None
    timed_out: bool = False


class TraceStep(BaseModel):
    """One step of a trace: a user message, a model call or a tool call."""

    index: int = Field(description="1-based position in the trace")
    kind: Literal["input", "model", "tool"]
    run_id: str | None = None
    message_id: str | None = None
    text: str = Field("", description="the message text or the tool result, cut to a preview")
    model: str | None = None
    usage: TokenUsage | None = None
    tool_calls: list[RequestedToolCall] = Field(default_factory=list)
    tool: str | None = None
    tool_call_id: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    status: Literal["success", "error"] | None = None
    bash: BashRun | None = None
    files_changed: list[FileChange] = Field(default_factory=list)
    files_changed_incomplete: bool = False
    subagents: list[SubagentTrace] = Field(
        default_factory=list, description="for task and run_plan: each sub-agent and what it did"
    )


class SubagentTrace(BaseModel):
    """One sub-agent a ``task`` or ``run_plan`` step started: how it ended and its own steps."""

    task_id: str
    subagent_type: str | None = None
    description: str | None = None
    status: str | None = None
    steps: list[TraceStep] = Field(default_factory=list, description="empty when no transcript was kept")


class TraceRun(BaseModel):
    """A run of the thread: its steps (by index) and the tokens its model calls used."""

    run_id: str | None
    first_step: int
    step_count: int
    model_calls: int = 0
    tool_calls: int = 0
    usage: TokenUsage = Field(default_factory=TokenUsage)


class Trace(BaseModel):
    """The steps of a thread (or of one of its runs), in order, grouped by run."""

    thread_id: str
    run_id: str | None = None
    steps: list[TraceStep] = Field(default_factory=list)
    runs: list[TraceRun] = Field(default_factory=list)
    usage: TokenUsage = Field(default_factory=TokenUsage)


@dataclass(frozen=True)
class CheckpointMessages:
    """The messages of one checkpoint and the run that wrote it."""

    messages: Sequence[BaseMessage]
    run_id: str | None = None


def cut(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """``text`` up to ``limit`` characters, with a note on how many were left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n... [{len(text) - limit} more characters not shown]"


def _text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else message.text


def _usage(raw: Mapping[str, Any] | None) -> TokenUsage | None:
    if not raw:
        return None
    inp, out = int(raw.get("input_tokens") or 0), int(raw.get("output_tokens") or 0)
    return TokenUsage(input_tokens=inp, output_tokens=out, total_tokens=int(raw.get("total_tokens") or inp + out))


def _add(total: TokenUsage, usage: TokenUsage | None) -> None:
    if usage is not None:
        total.input_tokens += usage.input_tokens
        total.output_tokens += usage.output_tokens
        total.total_tokens += usage.total_tokens


def _model_name(message: AIMessage) -> str | None:
    meta = message.response_metadata or {}
    name = meta.get("model_name") or meta.get("model") or meta.get("model_id")
    return str(name) if name else None


def _bash(artifact: Mapping[str, Any]) -> BashRun | None:
    if "command" not in artifact or "exit_code" not in artifact:
        return None

    def text(key: str) -> str | None:
        value = artifact.get(key)
        return None if value is None else cut(str(value))

    return BashRun(
        command=cut(str(artifact["command"])),
        exit_code=int(artifact["exit_code"]),
        stdout=text("stdout"),
        stderr=text("stderr"),
        output=text("output"),
        timed_out=bool(artifact.get("timed_out")),
    )


def _files(artifact: Mapping[str, Any]) -> list[FileChange]:
    changes = artifact.get("files_changed")
    if isinstance(changes, list):
        return [
            FileChange(path=str(c["path"]), action=str(c.get("action", "modified")))
            for c in changes
            if isinstance(c, Mapping) and "path" in c
        ]
    written: list[FileChange] = []
    for result in artifact.get("results") or ():  # the task tool: files its sub-agents wrote
        if isinstance(result, Mapping):
            written.extend(FileChange(path=str(p), action="written") for p in result.get("files_written") or ())
    return written


def _subagent_usage(artifact: Mapping[str, Any]) -> TokenUsage | None:
    results = [r for r in artifact.get("results") or () if isinstance(r, Mapping) and r.get("usage")]
    if not results:
        return None
    total = TokenUsage()
    for result in results:
        _add(total, _usage(result["usage"]))
    return total


def _subagents(artifact: Mapping[str, Any]) -> list[SubagentTrace]:
    """The sub-agents a task/run_plan result names (their steps are filled in from transcripts)."""
    return [
        SubagentTrace(
            task_id=str(r["task_id"]),
            subagent_type=r.get("subagent_type"),
            description=r.get("description"),
            status=r.get("status"),
        )
        for r in artifact.get("results") or ()
        if isinstance(r, Mapping) and r.get("task_id")
    ]


def _tool_step(message: ToolMessage, requested: Mapping[str, RequestedToolCall], base: dict[str, Any]) -> TraceStep:
    call = requested.get(message.tool_call_id)
    artifact = message.artifact if isinstance(message.artifact, Mapping) else {}
    return TraceStep(
        **base,
        kind="tool",
        text=cut(_text(message), MAX_PREVIEW_CHARS),
        tool=message.name or (call.name if call else None),
        tool_call_id=message.tool_call_id,
        args=call.args if call else {},
        status="error" if message.status == "error" else "success",
        bash=_bash(artifact) if artifact else None,
        files_changed=_files(artifact) if artifact else [],
        files_changed_incomplete=bool(artifact.get("files_changed_incomplete")),
        usage=_subagent_usage(artifact) if artifact else None,
        subagents=_subagents(artifact) if artifact else [],
    )


def _ordered_messages(checkpoints: Iterable[CheckpointMessages]) -> list[tuple[BaseMessage, str | None]]:
    """Each message once, in order, with the run of the first checkpoint that holds it."""
    seen: set[str] = set()
    ordered: list[tuple[BaseMessage, str | None]] = []
    for checkpoint in checkpoints:
        for position, message in enumerate(checkpoint.messages):
            key = message.id or f"{position}:{message.type}:{_text(message)[:200]}"
            if key in seen:
                continue
            seen.add(key)
            ordered.append((message, checkpoint.run_id))
    return ordered


def build_trace(thread_id: str, checkpoints: Iterable[CheckpointMessages], run_id: str | None = None) -> Trace:
    """The trace of a thread from its checkpoints, oldest first; only ``run_id``'s steps if given."""
    requested: dict[str, RequestedToolCall] = {}
    steps: list[TraceStep] = []
    for message, owner in _ordered_messages(checkpoints):
        if isinstance(message, AIMessage):
            calls = [
                RequestedToolCall(id=c.get("id"), name=c["name"], args=to_jsonable(c.get("args") or {}))
                for c in message.tool_calls
            ]
            requested.update({c.id: c for c in calls if c.id})
        if run_id is not None and owner != run_id:
            continue
        base: dict[str, Any] = {"index": len(steps) + 1, "run_id": owner, "message_id": message.id}
        if isinstance(message, AIMessage):
            steps.append(TraceStep(
                **base, kind="model", model=_model_name(message), text=cut(_text(message), MAX_PREVIEW_CHARS),
                usage=_usage(message.usage_metadata), tool_calls=calls,
            ))  # fmt: skip
        elif isinstance(message, ToolMessage):
            steps.append(_tool_step(message, requested, base))
        elif isinstance(message, HumanMessage):
            steps.append(TraceStep(**base, kind="input", text=cut(_text(message), MAX_PREVIEW_CHARS)))
    return Trace(thread_id=thread_id, run_id=run_id, steps=steps, **_group(steps))


def _group(steps: list[TraceStep]) -> dict[str, Any]:
    """Runs (consecutive steps of one run) and the token totals."""
    runs: list[TraceRun] = []
    total = TokenUsage()
    for step in steps:
        if not runs or runs[-1].run_id != step.run_id:
            runs.append(TraceRun(run_id=step.run_id, first_step=step.index, step_count=0))
        run = runs[-1]
        run.step_count += 1
        run.model_calls += step.kind == "model"
        run.tool_calls += step.kind == "tool"
        if step.kind == "model":  # a task step's usage is the sub-agents', counted in their own threads
            _add(run.usage, step.usage)
            _add(total, step.usage)
    return {"runs": runs, "usage": total}


def _messages_of(checkpoint: Any) -> CheckpointMessages:
    """The messages and run of one checkpoint tuple (as a checkpointer lists them)."""
    values = (checkpoint.checkpoint or {}).get("channel_values") or {}
    messages = values.get("messages") if isinstance(values, Mapping) else None
    return CheckpointMessages(messages=list(messages or []), run_id=(checkpoint.metadata or {}).get("run_id"))


def _id_of(checkpoint: Any) -> str:
    return checkpoint.config["configurable"]["checkpoint_id"]


async def _between(
    saver: Any, config: dict[str, Any], first: str | None, before: str | None, limit: int | None = None
) -> list[Any]:
    """The thread's checkpoints created from ``first`` (None: the oldest) up to, not including,
    ``before`` (None: the newest included), oldest first; the newest ``limit`` of them only."""
    upto = {"configurable": {**config["configurable"], "checkpoint_id": before}} if before else None
    found = []
    async for checkpoint in saver.alist(config, before=upto, limit=limit):
        if first is not None and _id_of(checkpoint) < first:
            break
        found.append(checkpoint)
    return found[::-1]


async def read_checkpoints(saver: Any, thread_id: str) -> list[CheckpointMessages]:
    """The checkpoints :func:`build_trace` needs, oldest first, read run by run.

    Every checkpoint holds every message of the thread so far, so reading them all costs the
    square of the thread's length. A run starts at an ``input`` checkpoint (found by metadata,
    which checkpointers filter before loading values); when its last checkpoint still holds all
    the messages of its first and was written by the same run, these two say everything. A run
    that removed messages (a summary) or was followed by a resumed run (which has no ``input``
    checkpoint of its own) is read checkpoint by checkpoint.
    """
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    starts = [c async for c in saver.alist(config, filter={"source": "input"})][::-1]
    if not starts:
        return [_messages_of(c) for c in await _between(saver, config, None, None)]
    chosen = [_messages_of(c) for c in await _between(saver, config, None, _id_of(starts[0]))]  # before any run
    for index, start in enumerate(starts):
        following = _id_of(starts[index + 1]) if index + 1 < len(starts) else None
        first = _messages_of(start)
        last = _messages_of((await _between(saver, config, _id_of(start), following, limit=1))[-1])
        kept = {m.id for m in last.messages}
        if last.run_id == first.run_id and all(m.id in kept for m in first.messages):
            chosen += [first, last]
        else:
            chosen += [_messages_of(c) for c in await _between(saver, config, _id_of(start), following)]
    return chosen


def attach_transcripts(
    steps: Sequence[TraceStep], load: Callable[[str], list[TraceStep] | None], depth: int = 3
) -> None:
    """Fill in the steps of each sub-agent of ``steps`` with ``load(task_id)`` (its kept
    transcript, or None), and theirs in turn, ``depth`` levels deep."""
    if depth <= 0:
        return
    for step in steps:
        for subagent in step.subagents:
            subagent.steps = load(subagent.task_id) or []
            attach_transcripts(subagent.steps, load, depth - 1)


async def read_trace(
    graph: Any,
    thread_id: str,
    run_id: str | None = None,
    transcripts: Callable[[str], list[TraceStep] | None] | None = None,
) -> Trace:
    """The trace of ``thread_id`` read from ``graph``'s checkpointer (see :func:`build_trace`);
    ``transcripts(task_id)`` gives the steps of a sub-agent, when they were kept."""
    trace = build_trace(thread_id, await read_checkpoints(graph.checkpointer, thread_id), run_id)
    if transcripts is not None:
        attach_transcripts(trace.steps, transcripts)
    return trace
