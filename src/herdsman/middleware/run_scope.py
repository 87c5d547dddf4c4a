"""Run scope: what the lead and its sub-agents share during one run of a thread.

A scope holds the concurrency gate (at most ``max_concurrent`` sub-agents at once; the rest wait
in FIFO order, never dropped), the shared token budget, and the count of sub-agents started.
Scopes are keyed by thread id (a thread runs one run at a time); the lead's
:class:`RunScopeMiddleware` opens a fresh scope when a run starts and closes it at the end.
Per-run settings come from ``config["configurable"]`` (``max_concurrent_subagents``,
``token_budget``), falling back to ``subagents:`` in config.yaml.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langgraph.config import get_config

from herdsman.config.schema import SubagentsConfig
from herdsman.models.usage import TokenBudget


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

    def claim_slot(self) -> bool:
        """Count one more sub-agent for this run; False when ``max_subagents`` is reached."""
        if self.started >= self.max_subagents:
            return False
        self.started += 1
        return True


_SCOPES: dict[str, RunScope] = {}
_LOCK = threading.Lock()


def _thread_id(config: dict[str, Any] | None) -> str:
    return str(((config or {}).get("configurable") or {}).get("thread_id", "default"))


def open_scope(settings: SubagentsConfig, config: dict[str, Any] | None) -> RunScope:
    """A fresh scope for the run described by ``config`` (replacing any stale one)."""
    configurable = (config or {}).get("configurable") or {}
    scope = RunScope(
        max_concurrent=int(configurable.get("max_concurrent_subagents") or settings.max_concurrent),
        max_subagents=settings.max_per_run,
        budget=TokenBudget(configurable.get("token_budget") or settings.token_budget),
    )
    with _LOCK:
        _SCOPES[_thread_id(config)] = scope
    return scope


def current_scope(settings: SubagentsConfig, config: dict[str, Any] | None = None) -> RunScope:
    """The scope of the run in ``config`` (or the current LangGraph config); opened if missing."""
    if config is None:
        config = get_config()
    with _LOCK:
        scope = _SCOPES.get(_thread_id(config))
    return scope or open_scope(settings, config)


def cancel_task(thread_id: str, task_id: str) -> bool:
    """Cancel one running sub-agent of ``thread_id``'s run; its siblings go on. False if not running."""
    with _LOCK:
        scope = _SCOPES.get(thread_id)
    task = scope.tasks.get(task_id) if scope else None
    if task is None or task.done():
        return False
    task.get_loop().call_soon_threadsafe(task.cancel)
    return True


def close_scope(config: dict[str, Any] | None) -> None:
    """Forget the scope of the run in ``config``."""
    with _LOCK:
        _SCOPES.pop(_thread_id(config), None)


class RunScopeMiddleware(AgentMiddleware):
    """Open a run scope when the lead starts a run, and close it when the run ends."""

    def __init__(self, settings: SubagentsConfig) -> None:
        """``settings``: the ``subagents:`` section (defaults for per-run limits)."""
        super().__init__()
        self.settings = settings

    def before_agent(self, state: Any, runtime: Any) -> None:
        """Start the run with a fresh scope."""
        open_scope(self.settings, get_config())

    def after_agent(self, state: Any, runtime: Any) -> None:
        """Drop the run's scope."""
        close_scope(get_config())
