"""Progress notes for a chat: what a run's stream events mean to a person, sent at a calm pace.

:func:`progress_lines` reads one run event (``updates`` and ``custom`` events of the stream
bridge, root and sub-agents) and returns short lines such as ``🔧 write_file``, ``🤖 sub-agent
researcher started`` or ``🔎 checked: 2 findings, sent back to the agent`` (a note of the harness's
completion check to the model, told in one line, never as conversation). :class:`Throttle` batches
them so a chat gets at most one progress message per interval; the clock is injectable so tests need
no sleeping.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from herdsman.runtime.tracing.harness_notes import fold_line, is_note, note_rules
from herdsman.turns.text_calls import calls_as_text, failed_step_line

TASK_WORDS = {
    "task_started": "started",
    "task_completed": "finished",
    "task_failed": "failed",
    "task_timed_out": "timed out",
    "task_cancelled": "was cancelled",
}
MAX_ARG_CHARS = 60
QUIET_TOOLS = {"task", "ask_clarification"}  # sub-agents report through task_* events; questions are sent whole


def _brief(args: Any) -> str:
    """A one-line preview of tool arguments."""
    if not isinstance(args, dict) or not args:
        return ""
    first = next(iter(args.values()))
    text = first if isinstance(first, str) else json.dumps(first, default=str)
    text = " ".join(text.split())
    return text if len(text) <= MAX_ARG_CHARS else text[: MAX_ARG_CHARS - 1] + "…"


def progress_lines(event: str, data: Any, language: str = "en") -> list[str]:
    """Lines worth telling the chat about for one bridge event (often none); the folded checks in
    ``language``, the request's."""
    mode = event.split("|", 1)[0]
    lines: list[str] = []
    if mode == "updates" and isinstance(data, dict) and "|" not in event:
        for _node, update in data.items():
            messages = update.get("messages", []) if isinstance(update, dict) else []
            for message in messages if isinstance(messages, list) else []:
                if isinstance(message, dict) and is_note(message):
                    lines.append(f"🔎 {fold_line([note_rules(message)], language)}")
                if not isinstance(message, dict) or message.get("type") != "ai":
                    continue
                written = calls_as_text(message)
                if written is not None:  # a failed step, not the answer
                    lines.append(failed_step_line(written))
                for call in message.get("tool_calls") or []:
                    if call.get("name") in QUIET_TOOLS:
                        continue
                    brief = _brief(call.get("args"))
                    lines.append(f"🔧 {call.get('name')}" + (f": {brief}" if brief else ""))
    elif mode == "custom" and isinstance(data, dict):
        word = TASK_WORDS.get(str(data.get("type")))
        if word:
            kind = data.get("subagent_type") or "sub-agent"
            what = data.get("description")
            lines.append(f"🤖 {kind} {word}" + (f": {what}" if what and word == "started" else ""))
    return lines


class Throttle:
    """Collects lines; :meth:`take` gives them out at most once per ``interval`` seconds."""

    def __init__(self, interval: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self.clock = clock
        self._pending: list[str] = []
        self._last: float | None = None

    def add(self, lines: list[str]) -> None:
        """Queue lines for the next progress message."""
        self._pending.extend(lines)

    def take(self, *, force: bool = False) -> str | None:
        """The text to send now, or None (nothing pending, or too soon unless ``force``)."""
        if not self._pending:
            return None
        now = self.clock()
        if not force and self._last is not None and now - self._last < self.interval:
            return None
        self._last = now
        text = "\n".join(self._pending)
        self._pending.clear()
        return text
