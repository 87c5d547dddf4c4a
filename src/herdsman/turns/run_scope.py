"""Run scope: what the lead and its sub-agents share during one run of a thread.

A scope holds the concurrency gate (at most ``max_concurrent`` sub-agents at once; the rest wait
in FIFO order, never dropped), the shared token budget, the count of sub-agents started, the
running sub-agents' tasks (so one can be stopped) and the files each changed.

It lives in LangGraph's runtime context of the run, under :data:`RUN_SCOPE` (the lead graph's
``context_schema`` is :class:`RunContext`): whoever starts a run makes a fresh scope for it and
passes it with ``graph.astream(..., context=with_scope(context, scope))`` (the run manager keeps
it on its ``Run``, so the gateway can stop one sub-agent; the embedded client keeps it while the
run streams). The lead graph (:class:`herdsman.agents.lead_graph.LeadGraph`) makes one for an
invocation that brings none (tests, a direct ``invoke``), so each invocation, never each thread,
has its own. Middleware read it from ``request.runtime.context``, tools from
``ToolRuntime.context``, and sub-agent graphs get the lead's context passed on. Nothing keeps
scopes in the process: a scope ends with its run.

Per-run settings come from ``config["configurable"]`` (``max_concurrent_subagents``,
``token_budget``), falling back to ``subagents:`` in config.yaml, which caps them: a run may lower
its limits, never raise them (the gateway refuses a higher or malformed value with 422).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langgraph.config import get_config
from pydantic import ConfigDict
from pydantic.json_schema import SkipJsonSchema
from typing_extensions import TypedDict

from herdsman.config.schema import SubagentsConfig
from herdsman.models.usage import TokenBudget

RUN_SCOPE = "run_scope"  # the key of the run's scope in its runtime context


@dataclass
class RunScope:
    """Shared limits of one run."""

    max_concurrent: int
    max_subagents: int
    budget: TokenBudget
    started: int = 0
    running: int = 0
    tasks: dict[str, asyncio.Task] = field(default_factory=dict)
    # path -> the sub-agent tasks that changed it in this run (to keep a sibling's files on a
    # rollback): ``named`` by a file tool (certain), ``seen`` in a bash command's before/after
    # comparison (which also catches what a sibling changed at the same time)
    named: dict[str, set[str]] = field(default_factory=dict)
    seen: dict[str, set[str]] = field(default_factory=dict)
    _gate: asyncio.Semaphore | None = field(default=None, repr=False)

    def note_files(self, task_id: str, seen: list[str], named: list[str]) -> None:
        """Record the files sub-agent ``task_id`` changed: all it ``seen`` change, and those ``named``."""
        for path in seen:
            self.seen.setdefault(path, set()).add(task_id)
        for path in named:
            self.named.setdefault(path, set()).add(task_id)

    def shared(self, task_id: str, paths: list[str], named_here: set[str]) -> list[str]:
        """Those of ``paths`` that may be another sub-agent's work: one named them, or one saw
        them change while this task (``named_here``: the paths it named itself) did not name them."""
        out = []
        for path in paths:
            named_elsewhere = self.named.get(path, set()) - {task_id}
            seen_elsewhere = self.seen.get(path, set()) - {task_id}
            if named_elsewhere or (seen_elsewhere and path not in named_here):
                out.append(path)
        return out

    @property
    def gate(self) -> asyncio.Semaphore:
        """The semaphore limiting concurrent sub-agents (made in the running event loop)."""
        if self._gate is None:
            self._gate = asyncio.Semaphore(self.max_concurrent)
        return self._gate

    def cancel(self, task_id: str) -> bool:
        """Stop the running sub-agent ``task_id`` of this run (its siblings go on); False when it
        is not running (finished, or never started)."""
        task = self.tasks.get(task_id)
        if task is None or task.done():
            return False
        task.get_loop().call_soon_threadsafe(task.cancel)
        return True

    def claim_slot(self) -> bool:
        """Count one more sub-agent for this run; False when ``max_subagents`` is reached."""
        if self.started >= self.max_subagents:
            return False
        self.started += 1
        return True


# the ``configurable`` keys a run may set its limits with -> the ``subagents:`` setting capping each
RUN_LIMITS = {"max_concurrent_subagents": "max_concurrent", "token_budget": "token_budget"}


def limit_problem(settings: SubagentsConfig, key: str, value: Any) -> str | None:
    """Why ``value`` cannot be the run's limit ``key`` (one of :data:`RUN_LIMITS`), or None. A run
    may lower what config.yaml allows, never raise it: the operator's limits hold for every
    client (a budget is what a user's key may spend)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return f"must be a positive integer, not {value!r}"
    cap = getattr(settings, RUN_LIMITS[key])
    if cap is not None and value > cap:
        return (
            f"{value} is above subagents.{RUN_LIMITS[key]} ({cap}) in config.yaml; a run may only lower it, "
            "so send at most that, or leave it out (if the run's assistant sets it, update the assistant's "
            "config with PATCH /assistants/{id})"
        )
    return None


def _run_limit(settings: SubagentsConfig, configurable: Mapping[str, Any], key: str) -> Any:
    """The run's own ``key`` when it is one it may set (see :func:`limit_problem`), else config.yaml's."""
    value = configurable.get(key)
    if value is None or limit_problem(settings, key, value) is not None:
        return getattr(settings, RUN_LIMITS[key])
    return value


def open_scope(settings: SubagentsConfig, config: dict[str, Any] | None) -> RunScope:
    """A fresh scope for the run described by ``config`` (its ``configurable`` may lower the limits)."""
    configurable = (config or {}).get("configurable") or {}
    return RunScope(
        max_concurrent=_run_limit(settings, configurable, "max_concurrent_subagents"),
        max_subagents=settings.max_per_run,
        budget=TokenBudget(_run_limit(settings, configurable, "token_budget")),
    )


def scope_in(context: Any) -> RunScope | None:
    """The run scope that a runtime ``context`` carries, or None."""
    value = context.get(RUN_SCOPE) if isinstance(context, Mapping) else getattr(context, RUN_SCOPE, None)
    return value if isinstance(value, RunScope) else None


def with_scope(context: Mapping[str, Any] | None, scope: RunScope) -> dict[str, Any]:
    """A copy of the run's ``context`` (the client's keys, if any) that carries ``scope``; a
    client's own ``run_scope`` key is replaced, never trusted."""
    return {**(context or {}), RUN_SCOPE: scope}


def run_scope(settings: SubagentsConfig, context: Any, config: dict[str, Any] | None = None) -> RunScope:
    """The scope the runtime ``context`` carries; outside a run that has one (an agent invoked
    on its own), a fresh one for this call, with the limits of ``config`` (or the current
    LangGraph config)."""
    scope = scope_in(context)
    if scope is not None:
        return scope
    if config is None:
        try:
            config = dict(get_config())
        except RuntimeError:  # outside a graph
            config = None
    return open_scope(settings, config)


class RunContext(TypedDict, total=False):
    """The lead graph's runtime context (its ``context_schema``): what a client sends as the run's
    ``context``, plus the run's scope, which the server sets (left out of the JSON schema)."""

    __pydantic_config__ = ConfigDict(arbitrary_types_allowed=True)  # type: ignore[misc]  # pydantic reads this attribute of a TypedDict; mypy does not know it

    run_scope: SkipJsonSchema[RunScope]
