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

import structlog
from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain_core.messages import AIMessage, AnyMessage

from herdsman.memory.service import MemoryService, current_user_id
from herdsman.skills.activation import is_user_message

log = structlog.get_logger(__name__)


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


def _thread_id() -> str | None:
    try:
        from langgraph.config import get_config

        return (get_config().get("configurable") or {}).get("thread_id")
    except RuntimeError:
        return None


class MemoryQueueMiddleware(AgentMiddleware):
    """Queue each finished turn for the memory model (see module docstring)."""

    def __init__(self, service: MemoryService) -> None:
        """``service``: the agent's memory (its queue and worker)."""
        super().__init__()
        self.service = service

    def _enqueue(self, state: AgentState) -> bool:
        thread_id = _thread_id()
        turn = turn_messages(state.get("messages", []))
        if not thread_id or len(turn) < 2:
            return False
        user = current_user_id(self.service.config.user_id)
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
