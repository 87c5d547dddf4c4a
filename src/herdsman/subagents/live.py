"""A sub-agent's model call as it streams: ``task_generating`` events, a few a second at most.

Step events (``task_progress``) arrive only when a model call ends, and on a small local model
one call can take minutes, so a card would read "0 tokens" all that time. :class:`LiveTokens`
counts what the call has streamed so far and reports it, throttled to one event per
:data:`INTERVAL` seconds. The count is an estimate (four characters a token, text and tool-call
arguments alike): the real figures come with the step's usage when the call ends. A model that
sends its calls whole at the end (the embedded model) streams no chunk while it writes one, only
drafts on its custom stream (:mod:`herdsman.models.call_drafts`): those count too, and the event
then names the tool being written (``writing``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessageChunk

from herdsman.models.call_drafts import DRAFT_EVENT

INTERVAL = 1.0  # seconds between two task_generating events of one sub-agent
CHARS_PER_TOKEN = 4


class LiveTokens:
    """Counts one sub-agent's streamed output and reports it through ``writer``."""

    def __init__(self, writer: Callable[[dict[str, Any]], None], base: dict[str, Any]) -> None:
        """``base`` is what every event of this task carries (task id, type, description)."""
        self._writer = writer
        self._base = base
        self._chars = 0
        self._sent = -math.inf

    def saw(self, message: Any, step: int) -> None:
        """Take one streamed chunk of the model call that makes step ``step``."""
        if not isinstance(message, AIMessageChunk):
            return
        self._chars += len(message.text) + sum(len(c.get("args") or "") for c in message.tool_call_chunks)
        now = time.monotonic()
        if self._chars and now - self._sent >= INTERVAL:
            self._sent = now
            self._writer(
                {
                    "type": "task_generating",
                    **self._base,
                    "step": step,
                    "tokens": math.ceil(self._chars / CHARS_PER_TOKEN),
                }
            )

    def drafted(self, draft: Any, step: int) -> None:
        """Take one draft of a tool call the model call of step ``step`` is writing."""
        if not isinstance(draft, dict) or draft.get("type") != DRAFT_EVENT:
            return
        now = time.monotonic()
        if now - self._sent >= INTERVAL:
            self._sent = now
            chars = self._chars + int(draft.get("chars") or 0)
            self._writer(
                {
                    "type": "task_generating",
                    **self._base,
                    "step": step,
                    "tokens": math.ceil(chars / CHARS_PER_TOKEN),
                    "writing": draft.get("name") or "",
                }
            )

    def step_done(self) -> None:
        """The call ended (its step event carries the real usage): count the next from zero."""
        self._chars = 0
        self._sent = -math.inf
