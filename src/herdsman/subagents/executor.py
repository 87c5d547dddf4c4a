"""Run sub-agents: a fresh agent per task, in the run's own event loop, under the run's limits.

Each sub-agent is a LangChain agent of its own, with its own context: it sees only the prompt
the lead wrote (and results of tasks it depends on), never the lead's conversation. It shares the
thread's sandbox (same thread id) and runs as a LangGraph subgraph under the namespace
``tools:<task_id>``, so with ``subgraphs=True`` its messages stream like any subgraph's.

Limits: a concurrency gate per run (the rest wait in FIFO order), a cap of sub-agents per run, a
timeout and a turn limit per sub-agent, and the run's shared token budget (the gate, cap and budget
are the run scope the task tool finds in the lead's runtime context, which the sub-agent's graph
runs with too; see :mod:`herdsman.turns.run_scope`). A failure, timeout or cancellation of one
sub-agent is caught here and becomes its result: siblings go on. Failed attempts are retried from a
clean context (``subagents.retries``), with ``fallback_model`` when set, and from clean files (an
attempt whose answer its completion check still rejects when its rounds run out counts as failed
when a retry is left; the last attempt's answer is kept, with what the check found in its result's
``unresolved``): the files the failed attempt changed are put back as they were when it started
(:meth:`~herdsman.sandbox.history.FileHistory.revert`), except those a sibling running alongside may
have changed too (it named them, or its command's before/after comparison saw them and this task did
not name them), which are kept and reported. Progress is reported as custom stream events
(``task_queued``, ``task_started``, ``task_generating`` while a model call streams,
``task_progress`` after each step, ``task_completed``, ``task_failed``, ``task_timed_out``,
``task_cancelled``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool

from herdsman import pools
from herdsman.config.schema import HerdsmanConfig
from herdsman.logs import get_logger
from herdsman.middleware.agent_profile import SUBAGENT_TYPES
from herdsman.middleware.chain import compose
from herdsman.models.resolver import ModelResolver
from herdsman.models.usage import usage_delta
from herdsman.sandbox.base import SandboxProvider
from herdsman.sandbox.history import FileHistory, thread_history
from herdsman.subagents.live import LiveTokens
from herdsman.subagents.prompt import subagent_system_prompt
from herdsman.subagents.result import TaskResult
from herdsman.subagents.types import SubagentType, select_tools, subagent_types
from herdsman.turns.run_scope import RUN_SCOPE, RunScope, run_scope, with_scope
from herdsman.turns.turn import stop_reason

log = get_logger(__name__)

FILE_WRITING_TOOLS = frozenset({"write_file", "str_replace"})


Writer = Callable[[Any], None]


def _noop_writer(_: Any) -> None:
    return None


@dataclass(frozen=True)
class TaskRequest:
    """One piece of work for a sub-agent."""

    task_id: str
    description: str
    prompt: str
    subagent_type: str
    deliverables: tuple[str, ...] = ()
    """Output paths the user's request names and the lead's prompt does not (see :meth:`SubagentRunner.opening`)."""


TranscriptKeeper = Callable[[str, str, list[Any]], None]
"""Keeps a sub-agent's messages: ``(thread_id, task_id, messages)``; never raises."""


class StackBuilder(Protocol):
    """Builds a sub-agent's middlewares: the lead's
    :func:`herdsman.agents.stack.build_middleware` for role ``subagent``, bound to the thread's
    files and memory (that layer sits above this one, so it is handed in, not imported)."""

    def __call__(
        self,
        system_prompt: str,
        *,
        tool_names: Sequence[str],
        profile: str,
        max_steps: int,
    ) -> list[AgentMiddleware]:
        """The middlewares, outermost first."""
        ...


@dataclass
class _Outcome:
    """What one attempt produced, before it becomes a :class:`TaskResult`."""

    status: str
    answer: str = ""
    error: str | None = None
    files: list[str] = field(default_factory=list)
    seen: list[str] = field(default_factory=list)  # of those, the files it knew whole (files_seen)
    usage: dict[str, Any] = field(default_factory=dict)
    unresolved: list[str] = field(default_factory=list)  # what the completion check still found (its notes' lines)
    unresolved_rules: list[str] = field(default_factory=list)  # the rule ids of those findings

    @property
    def rejected(self) -> bool:
        """It ended with an answer that its completion check, out of rounds, still found short."""
        return self.status == "completed" and bool(self.unresolved)


def files_written(messages: Sequence[Any]) -> list[str]:
    """Paths written by successful file-tool calls in ``messages``, in order, without repeats."""
    failed = {m.tool_call_id for m in messages if isinstance(m, ToolMessage) and m.status == "error"}
    paths: list[str] = []
    for m in messages:
        if isinstance(m, AIMessage):
            for call in m.tool_calls:
                path = call["args"].get("path") if isinstance(call.get("args"), dict) else None
                if call["name"] in FILE_WRITING_TOOLS and call["id"] not in failed and path and path not in paths:
                    paths.append(path)
    return paths


def files_seen(messages: Sequence[Any]) -> list[str]:
    """The paths of :func:`files_written` whose content the sub-agent knew: those it first
    replaced whole (``write_file``) or edited (``str_replace``), each after its own read before
    write. A file whose first write was an append is left out: an append is free, so what was
    there may never have been read, and the lead would then count the file as read (a red-team
    finding: the lead replaced a user's file blindly after its delegate appended a line)."""
    failed = {m.tool_call_id for m in messages if isinstance(m, ToolMessage) and m.status == "error"}
    first: dict[str, bool] = {}  # path -> its first successful write was an append
    for m in messages:
        for call in m.tool_calls if isinstance(m, AIMessage) else ():
            args = call.get("args") if isinstance(call.get("args"), dict) else {}
            if call["name"] in FILE_WRITING_TOOLS and call["id"] not in failed and args.get("path"):
                first.setdefault(args["path"], call["name"] == "write_file" and bool(args.get("append")))
    return [p for p in files_written(messages) if not first.get(p)]


def files_changed(messages: Sequence[Any], *, only_named: bool = False) -> list[str]:
    """Every path the tool results in ``messages`` report changed (their artifacts' ``files_changed``),
    in order, without repeats. ``only_named``: just the files a file tool named; a bash command's
    list comes from comparing the files before and after it, so it also holds what a sibling
    running at the same time changed."""
    paths: list[str] = []
    for m in messages:
        artifact = getattr(m, "artifact", None) if isinstance(m, ToolMessage) else None
        if not isinstance(artifact, dict) or (only_named and "command" in artifact):
            continue
        for change in artifact.get("files_changed") or ():
            path = change.get("path") if isinstance(change, dict) else None
            if path and path not in paths:
                paths.append(path)
    return paths


def sum_usage(messages: Sequence[Any], pricing: tuple[float, float] | None) -> dict[str, Any]:
    """Token usage (and cost) of every model reply in ``messages``."""
    total: dict[str, Any] = {
        "input_tokens": 0,
        "output_tokens": 0,
        "total_tokens": 0,
        "cost_usd": 0.0,
        "model_calls": 0,
    }
    for m in messages:
        if isinstance(m, AIMessage) and m.usage_metadata:
            for key, value in usage_delta(m, pricing).items():
                total[key] += value
    total["cost_usd"] = round(total["cost_usd"], 8)
    return total


class SubagentRunner:
    """Builds and runs sub-agents for one lead agent (or, when nesting, one sub-agent level)."""

    def __init__(
        self,
        config: HerdsmanConfig,
        resolver: ModelResolver,
        tools: Sequence[BaseTool],
        lead_model_name: str,
        stack: StackBuilder,
        depth: int = 1,
        provider: SandboxProvider | None = None,
        keep_transcript: TranscriptKeeper | None = None,
    ) -> None:
        """``tools``: the lead's tools, from which each type's allowlist picks; ``stack``: builds a
        sub-agent's middlewares (the lead's without its conversation-level ones; the lead's
        long-term memory is read there, never written); ``depth``: 1 for the lead's sub-agents;
        ``provider``: the thread's files, to undo a failed attempt's changes;
        ``keep_transcript(thread_id, task_id, messages)``: keeps what a sub-agent did, for the trace
        (the runtime's ``save_transcript``; this layer cannot import it)."""
        self.config = config
        self.settings = config.subagents
        self.resolver = resolver
        self.tools = list(tools)
        self.lead_model_name = lead_model_name
        self.depth = depth
        self.stack = stack
        self.provider = provider
        self.keep_transcript = keep_transcript
        self.types = subagent_types(config)
        self._agents: dict[tuple[str, str], Any] = {}
        self.extra_tools: list[BaseTool] = []  # delegation tools, when nesting is allowed

    # -- building ---------------------------------------------------------------------------

    def model_name_for(self, spec: SubagentType, attempt: int) -> str:
        """The model of ``spec``'s ``attempt``: the fallback model on retries, when configured."""
        if attempt > 1 and self.settings.fallback_model:
            return self.settings.fallback_model
        return spec.model or self.settings.model or self.lead_model_name

    def max_turns(self, spec: SubagentType) -> int:
        """Model calls a sub-agent of ``spec`` may make."""
        return spec.max_turns or self.settings.max_turns

    def timeout(self, spec: SubagentType) -> float:
        """Seconds a sub-agent of ``spec`` may run."""
        return spec.timeout_seconds or self.settings.timeout_seconds

    def agent_for(self, spec: SubagentType, model_name: str) -> Any:
        """The compiled agent for ``spec`` on ``model_name`` (built once, then reused). A tool that
        needs a human's approval (``tools.require_approval``) is not given to it: a sub-agent has
        no one to ask, and a lead whose bash calls waited for approval had a sub-agent run its
        commands at once (a red-team finding)."""
        key = (spec.name, model_name)
        if key not in self._agents:
            allow_nesting = self.depth < self.settings.max_depth
            approval = set(self.config.tools.require_approval)
            tools = [
                t
                for t in select_tools(spec, [*self.tools, *self.extra_tools], allow_delegation=allow_nesting)
                if t.name not in approval
            ]
            small = self.config.model_profile(model_name) == "small"
            self._agents[key] = create_agent(
                self.resolver.get(model_name),
                tools=tools,
                middleware=compose(self.middleware_for(spec, tools, small)),
                checkpointer=False,
                name=f"subagent:{spec.name}",
            )
        return self._agents[key]

    def middleware_for(self, spec: SubagentType, tools: Sequence[BaseTool], small: bool) -> list[AgentMiddleware]:
        """A sub-agent's middlewares: the lead's harness for doing the work (the completion check,
        read before write and, for a ``small`` model, its prompt, tool selection, answer nudge and
        one call at a time), without the lead's conversation-level ones
        (:data:`herdsman.agents.stack.LEAD_ONLY`)."""
        return self.stack(
            subagent_system_prompt(spec, tools, small=small),
            tool_names=[t.name for t in tools],
            profile="small" if small else "standard",
            max_steps=self.max_turns(spec),
        )

    def opening(self, request: TaskRequest, model_name: str) -> str:
        """The sub-agent's first message: the lead's prompt; on a ``small`` model with the task's
        description above it when the prompt does not say it (a dev task: the lead's prompt was
        just "python3 hello.py", the goal was only in the description), and the request's
        deliverables below it when the prompt names none (a dev task: a small lead asked for "a
        JSON list of the names" of a request to create outputs/team.json)."""
        if self.config.model_profile(model_name) != "small":
            return request.prompt
        description = request.description.strip()
        text = (
            request.prompt
            if not description or description in request.prompt
            else f"Task: {description}\n\n{request.prompt}"
        )
        if request.deliverables:
            text += f"\n\nDeliver to: {', '.join(request.deliverables)} (named in the user's request)."
        return text

    # -- running ----------------------------------------------------------------------------

    def refuse(self, request: TaskRequest, reason: str) -> TaskResult:
        """A result for a task that was not started, with the reason."""
        return TaskResult(request.task_id, request.subagent_type, request.description, "refused", error=reason)

    def check(self, request: TaskRequest) -> str | None:
        """Why ``request`` cannot run (unknown type, empty prompt), or ``None``."""
        if request.subagent_type not in self.types:
            return f"unknown subagent_type {request.subagent_type!r}; choose one of {sorted(self.types)}"
        if not request.prompt.strip():
            return "the prompt is empty; say what the sub-agent should do and give it the context it needs"
        return None

    @staticmethod
    def check_allowed(request: TaskRequest, parent_config: dict[str, Any]) -> str | None:
        """Why the run's custom agent may not delegate to ``request``'s type (its
        ``configurable.subagent_types`` allow-list), or ``None``."""
        types = (parent_config.get("configurable") or {}).get(SUBAGENT_TYPES)
        if not isinstance(types, list) or request.subagent_type in types:
            return None
        if not types:
            return "this agent does not delegate; do the work yourself"
        return f"this agent may not use subagent_type {request.subagent_type!r}; choose one of {sorted(types)}"

    async def run(
        self,
        request: TaskRequest,
        parent_config: dict[str, Any],
        writer: Writer | None = None,
        context: Any = None,
    ) -> TaskResult:
        """Run ``request`` to its end and return its result; never raises for the sub-agent's own failures.

        ``context``: the parent's runtime context, whose run scope (gate, cap, budget) the task
        runs under and passes on to the sub-agent's graph; without one (a call outside any run),
        the task has a scope of its own."""
        writer = writer or _noop_writer
        reason = self.check(request) or self.check_allowed(request, parent_config)
        if reason:
            return self.refuse(request, reason)
        scope = run_scope(self.settings, context, parent_config)
        context = with_scope(context, scope)
        if not scope.claim_slot():
            return self.refuse(
                request,
                f"this run already started {scope.max_subagents} sub-agents (subagents.max_per_run); "
                "finish the work yourself or raise the limit",
            )
        spec = self.types[request.subagent_type]
        base = {"task_id": request.task_id, "subagent_type": spec.name, "description": request.description}
        enqueued = time.monotonic()
        if scope.gate.locked():
            writer({"type": "task_queued", **base, "running": scope.running, "limit": scope.max_concurrent})
        kept: list[Any] = []  # the sub-agent's messages, for its transcript
        async with scope.gate:
            queued_s = time.monotonic() - enqueued
            scope.running += 1
            try:
                result = await self._attempts(request, spec, context, parent_config, writer, base, kept)
            finally:
                scope.running -= 1
        result.queued_s = queued_s
        final = {
            "completed": "task_completed",
            "timed_out": "task_timed_out",
            "cancelled": "task_cancelled",
        }.get(result.status, "task_failed")
        writer(
            {
                "type": final,
                **base,
                "status": result.status,
                "error": result.error,
                "usage": result.usage,
                "duration_s": round(result.duration_s, 3),
                "files_written": result.files_written,
                "attempts": result.attempts,
                "unresolved": result.unresolved,
                "unresolved_rules": result.unresolved_rules,
            }
        )
        log.info("subagent_finished", **base, status=result.status, duration_s=round(result.duration_s, 3))
        thread_id = (parent_config.get("configurable") or {}).get("thread_id")
        if thread_id and kept and self.keep_transcript is not None:  # after the event: never delays the news
            await asyncio.to_thread(self.keep_transcript, str(thread_id), request.task_id, kept)
        return result

    async def _attempts(
        self,
        request: TaskRequest,
        spec: SubagentType,
        context: dict[str, Any],
        parent_config: dict[str, Any],
        writer: Writer,
        base: dict[str, Any],
        kept: list[Any],
    ) -> TaskResult:
        """Run the task's attempts (a retry after a failure) under the run scope in ``context``."""
        scope: RunScope = context[RUN_SCOPE]
        started = time.monotonic()
        retries = self.settings.retries
        usage: dict[str, Any] = {}
        outcome = _Outcome("failed")
        attempt = 0
        model_name = self.model_name_for(spec, 1)
        history = self._history(parent_config) if retries else None
        for attempt in range(1, retries + 2):
            model_name = self.model_name_for(spec, attempt)
            if scope.budget.exhausted:
                outcome = _Outcome("budget_exceeded", error=scope.budget.message())
                break
            before = (
                await pools.run(pools.CAPTURES, pools.user_of(parent_config), history.capture)
                if history is not None and attempt <= retries
                else None
            )
            writer({"type": "task_started", **base, "attempt": attempt, "model": model_name})
            outcome = await self._attempt(request, spec, model_name, parent_config, context, writer, base, kept)
            for key, value in outcome.usage.items():
                usage[key] = usage.get(key, 0) + value
            if outcome.status in ("cancelled", "budget_exceeded", "max_turns") or (
                outcome.status == "completed" and not outcome.rejected
            ):
                break
            if attempt <= retries:
                error = outcome.error or "rejected by the completion check: " + "; ".join(outcome.unresolved)
                undone = await self._roll_back(history, before, request.task_id, scope, kept)
                writer(
                    {
                        "type": "task_failed",
                        **base,
                        "attempt": attempt,
                        "error": error,
                        "will_retry": True,
                        "rejected": outcome.rejected,
                        "next_model": self.model_name_for(spec, attempt + 1),
                        **undone,
                    }
                )
        if "model_calls" in usage:
            usage["model"] = model_name
        return TaskResult(
            task_id=request.task_id,
            subagent_type=spec.name,
            description=request.description,
            status=outcome.status,  # type: ignore[arg-type]  # outcome.status is one of the record's statuses (set from them), typed str
            answer=outcome.answer,
            error=outcome.error,
            files_written=outcome.files,
            files_seen=outcome.seen,
            usage=usage,
            duration_s=time.monotonic() - started,
            attempts=attempt,
            model=model_name,
            unresolved=outcome.unresolved,
            unresolved_rules=outcome.unresolved_rules,
        )

    def _history(self, parent_config: dict[str, Any]) -> FileHistory | None:
        """The thread's file history, to undo a failed attempt (None: versions off or no files here)."""
        thread_id = (parent_config.get("configurable") or {}).get("thread_id")
        if self.provider is None or not thread_id:
            return None
        try:
            return thread_history(self.provider, self.config, str(thread_id))
        except Exception as exc:  # noqa: BLE001 - without a history a retry simply starts where it is
            log.warning("subagent_history_unavailable", error=str(exc))
            return None

    async def _roll_back(
        self,
        history: FileHistory | None,
        before: str | None,
        task_id: str,
        scope: RunScope,
        messages: list[Any],
    ) -> dict[str, Any]:
        """Undo the files a failed attempt changed (``files_changed`` of its tool results), except
        those a sibling sub-agent changed too; what was undone and what was kept, for the event."""
        if history is None or before is None:
            return {}
        changed = files_changed(messages)
        shared = scope.shared(task_id, changed, named_here=set(files_changed(messages, only_named=True)))
        mine = [p for p in changed if p not in shared]
        try:
            report = await asyncio.to_thread(history.revert, before, mine)
        except Exception as exc:  # noqa: BLE001 - the retry goes on from where the files are
            log.warning("subagent_rollback_failed", task_id=task_id, error=str(exc))
            return {"rolled_back": [], "rollback_error": str(exc)}
        log.info("subagent_rolled_back", task_id=task_id, files=len(mine), kept_for_siblings=len(shared))
        return {"rolled_back": report.written + report.removed, "kept_for_siblings": shared}

    async def _attempt(
        self,
        request: TaskRequest,
        spec: SubagentType,
        model_name: str,
        parent_config: dict[str, Any],
        context: dict[str, Any],
        writer: Writer,
        base: dict[str, Any],
        kept: list[Any],
    ) -> _Outcome:
        try:
            agent = self.agent_for(spec, model_name)
        except Exception as exc:  # noqa: BLE001 - a model that cannot be built fails this task only
            return _Outcome("failed", error=f"cannot build the sub-agent's model {model_name!r}: {exc}")
        configurable = {
            # not the lead's durability: "sync" (a lead run with file versions) fails in LangGraph for
            # a graph that saves no checkpoints, and a sub-agent keeps none of its own
            **{k: v for k, v in (parent_config.get("configurable") or {}).items() if k != "__pregel_durability"},
            "checkpoint_ns": f"tools:{request.task_id}",
            "herdsman_depth": self.depth,
        }
        config = {
            **{k: v for k, v in parent_config.items() if k != "configurable"},
            "configurable": configurable,
            "recursion_limit": self.max_turns(spec) * 2 + 10,
        }
        scope: RunScope = context[RUN_SCOPE]
        inner = asyncio.create_task(self._drive(request, spec, agent, model_name, config, context, writer, base, kept))
        scope.tasks[request.task_id] = inner
        try:
            return await inner
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                writer({"type": "task_cancelled", **base, "status": "cancelled"})
                raise  # the whole run is being cancelled
            # only a user stops one sub-agent (RunScope.cancel); the run goes on without it
            return _Outcome("cancelled", error="stopped by the user; do not start it again unless they ask")
        finally:
            scope.tasks.pop(request.task_id, None)

    async def _drive(
        self,
        request: TaskRequest,
        spec: SubagentType,
        agent: Any,
        model_name: str,
        config: dict[str, Any],
        context: dict[str, Any],
        writer: Writer,
        base: dict[str, Any],
        messages: list[Any],
    ) -> _Outcome:
        """Stream the sub-agent to its end, with the lead's runtime ``context``, reporting each
        step; failures become outcomes. ``messages`` holds its messages as it goes (an earlier
        attempt's are replaced); the files its tools change are noted in the run scope as they are."""
        scope: RunScope = context[RUN_SCOPE]
        messages.clear()
        pricing = self.resolver.pricing(model_name)
        steps, stepped = 0, (0, cast("str | None", None))
        unresolved: list[dict[str, Any]] = []
        live = LiveTokens(writer, base)
        try:
            async with asyncio.timeout(self.timeout(spec)):
                opening = HumanMessage(self.opening(request, model_name))
                async for mode, chunk in agent.astream(
                    {"messages": [opening]}, config, context=context, stream_mode=["values", "messages", "custom"]
                ):
                    if mode == "messages":
                        live.saw(chunk[0], steps + 1)
                        continue
                    if mode == "custom":  # drafts of a call being written (other events stay inside)
                        live.drafted(chunk, steps + 1)
                        continue
                    messages[:] = chunk.get("messages", messages)
                    unresolved = list(chunk.get("completion_unresolved") or [])  # finding dicts
                    scope.note_files(request.task_id, files_changed(messages), files_changed(messages, only_named=True))
                    last = messages[-1] if messages else None
                    if isinstance(last, AIMessage) and (len(messages), last.id) != stepped:
                        stepped = (len(messages), last.id)  # later nodes (after_agent) repeat the last message
                        steps += 1
                        live.step_done()
                        writer(
                            {
                                "type": "task_progress",
                                **base,
                                "step": steps,
                                "tool_calls": [c["name"] for c in last.tool_calls],
                                "usage": sum_usage(messages, pricing),
                            }
                        )
        except TimeoutError:
            return _Outcome(
                "timed_out",
                error=f"no result after {self.timeout(spec):g}s (timeout_seconds); "
                "give it a smaller part or raise the limit",
                files=files_written(messages),
                seen=files_seen(messages),
                usage=sum_usage(messages, pricing),
            )
        except Exception as exc:  # noqa: BLE001 - one sub-agent's failure never ends the run
            log.warning("subagent_failed", **base, error=str(exc), error_type=type(exc).__name__)
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else "no details"
            return _Outcome(
                "failed",
                error=f"{type(exc).__name__}: {detail[:500]}",
                files=files_written(messages),
                seen=files_seen(messages),
                usage=sum_usage(messages, pricing),
            )
        answer = next((m.text for m in reversed(messages) if isinstance(m, AIMessage)), "")
        usage = sum_usage(messages, pricing)
        files, seen = files_written(messages), files_seen(messages)
        stopped_by = stop_reason(next((m for m in reversed(messages) if isinstance(m, AIMessage)), None))
        if stopped_by == "token_budget":
            return _Outcome("budget_exceeded", answer="", error=answer, files=files, usage=usage)
        if stopped_by == "max_steps":
            return _Outcome("max_turns", error=answer, files=files, seen=seen, usage=usage)
        return _Outcome(
            "completed",
            answer=answer,
            files=files,
            seen=seen,
            usage=usage,
            unresolved=[f.get("text") or f["rule"] for f in unresolved],
            unresolved_rules=[f["rule"] for f in unresolved],
        )
