"""After a turn, queue it for the memory model (``memory.mode: auto``), durably.

The turn's user message and the agent's answers are appended to the thread's row of the
:class:`~herdsman.memory.queue.UpdateQueue` with the debounce delay, and the background worker
is kicked. Runs once per run (``after_agent``); a queue that cannot be written is logged and
skipped, so the turn itself always succeeds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain_core.messages import AIMessage, AnyMessage

from herdsman.logs import get_logger
from herdsman.memory.service import MemoryService, current_user_id
from herdsman.skills.activation import is_user_message

log = get_logger(__name__)


def turn_messages(messages: Sequence[AnyMessage]) -> list[dict[str, str]]:
    """The last turn as ``{role, content}``: the user's message and the agent's non-empty texts."""
    start = next((i for i in range(len(messages) - 1, -1, -1) if is_user_message(messages[i])), None)
    if start is None:
        return []
    turn = [{"role": "user", "content": messages[start].text}]
    for message in messages[start + 1 :]:
        if isinstance(message, AIMessage) and message.text.strip():
            turn.append({"role": "assistant", "content": message.text})
    return turn


def _run_ids() -> tuple[str | None, str | None]:
    """The thread and run of the current run (None outside one)."""
    try:
        from langgraph.config import get_config

        config = get_config()
    except RuntimeError:
        return None, None
    configurable = config.get("configurable") or {}
    run = configurable.get("run_id") or (config.get("metadata") or {}).get("run_id")
    return configurable.get("thread_id"), str(run) if run else None


class MemoryQueueMiddleware(AgentMiddleware):
    """Queue each finished turn for the memory model (see module docstring)."""

    def __init__(self, service: MemoryService) -> None:
        """``service``: the agent's memory (its queue and worker)."""
        super().__init__()
        self.service = service

    def _enabled(self, user: str) -> bool:
        """The user's off switch; a store that is down counts as on (the turn is queued, durably,
        and the updater looks at the switch again before it writes anything)."""
        try:
            return self.service.store.enabled_for(user)
        except Exception as exc:  # noqa: BLE001 - memory must never fail a turn
            log.warning("memory_switch_unreadable", user_id=user, error=str(exc))
            return True

    def _enqueue(self, state: AgentState) -> bool:
        thread_id, run_id = _run_ids()
        turn = turn_messages(state.get("messages", []))
        if not thread_id or len(turn) < 2:
            return False
        user = current_user_id(self.service.config.user_id)
        if run_id:
            turn[0]["run_id"] = run_id  # the audit trail names the run a memory came from
        if not self._enabled(user):
            return False  # the user turned their memory off
        try:
            self.service.queue.enqueue(str(thread_id), user, turn, self.service.config.debounce_seconds)
        except Exception as exc:  # noqa: BLE001 - memory must never fail a turn
            log.warning("memory_enqueue_failed", thread_id=thread_id, error=str(exc))
            return False
        return True

    def after_agent(self, state: AgentState, runtime: Any) -> None:
        """Queue the turn and kick the worker."""
        if self._enqueue(state) and self.service.worker is not None:
            self.service.worker.kick()

    async def aafter_agent(self, state: AgentState, runtime: Any) -> None:
        """Async twin of :meth:`after_agent` (the queue is written in a worker thread)."""
        if await asyncio.to_thread(self._enqueue, state) and self.service.worker is not None:
            self.service.worker.kick()
