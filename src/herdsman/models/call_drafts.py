"""Tool calls shown while they are written: the raw text of the call a model is writing, sent on
the run's custom stream (LangGraph's ``get_stream_writer``) as it grows, at most every
``interval`` seconds.

Why a separate event and not ``tool_call_chunks``: a model that writes its calls as text (the
embedded model's ``<tool_call>`` JSON) has them parsed, repaired and given an id only once the
text ends, so pieces of the raw text need not add up to the call that runs. A draft is only
shown, never merged into a message: each event carries the whole call so far, and a client
replaces it with the real call when that arrives (the message's ``tool_calls``).

The event (``custom`` stream mode; under ``tools:<id>`` namespaces for sub-agents)::

    {"type": "tool_call_draft", "index": 0, "name": "bash", "text": "{\"name\": \"bash\", ...", "chars": 812}

``index`` counts the calls of this reply (0 for the first), ``name`` is the tool's name once
written (else null), ``text`` the call's text so far (its last :data:`MAX_TEXT` characters, the
``<tool_call>`` tags left out) and ``chars`` its full length.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

from herdsman.logs import get_logger

log = get_logger(__name__)

DRAFT_EVENT = "tool_call_draft"
DEFAULT_INTERVAL = 0.5
"""Seconds between two drafts of one reply: enough to see a call grow, few events per call."""
MAX_TEXT = 2000
"""Characters of a draft's text sent (the end of the call: what is being written now)."""

_OPEN = "<tool_call>"
_CLOSE = "</tool_call>"
_NAME = re.compile(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"')


def stream_writer() -> Callable[[Any], None] | None:
    """The current LangGraph run's custom stream writer, or None outside a run."""
    try:
        from langgraph.config import get_stream_writer

        return get_stream_writer()
    except (RuntimeError, KeyError, ImportError):  # not inside a graph run
        return None


def _name(text: str) -> str | None:
    """The tool's name in a call's text, once written whole (None before, or if it does not decode)."""
    found = _NAME.search(text)
    if found is None:
        return None
    try:
        return str(json.loads(f'"{found.group(1)}"'))
    except ValueError:  # a broken escape: the name as written
        return found.group(1)


def draft_event(held: str) -> dict[str, Any] | None:
    """The draft event of ``held``, the text of a reply that may be tool calls (from the first
    call on), or None when it holds no call being written (no JSON object started, or the last
    call already closed)."""
    index = held.count(_OPEN)
    current = held[held.rfind(_OPEN) + len(_OPEN) :] if index else held
    if _CLOSE in current or "{" not in current:
        return None
    text = current.strip()
    return {
        "type": DRAFT_EVENT,
        "index": max(index - 1, 0),
        "name": _name(text),
        "text": text[-MAX_TEXT:],
        "chars": len(text),
    }


class CallDrafts:
    """Sends the drafts of one reply: call :meth:`see` with the held-back text as it grows."""

    def __init__(
        self,
        writer: Callable[[Any], None] | None = None,
        interval: float = DEFAULT_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``writer`` defaults to the current run's custom stream (no drafts outside a run)."""
        self._writer = writer if writer is not None else stream_writer()
        self._interval = interval
        self._clock = clock
        self._last: float | None = None
        self._sent = ""

    @property
    def active(self) -> bool:
        """Whether drafts go anywhere (a run with a custom stream writer)."""
        return self._writer is not None

    def due(self) -> bool:
        """Whether a draft may be sent now (``interval`` passed since the last one)."""
        return self._writer is not None and (self._last is None or self._clock() - self._last >= self._interval)

    def see(self, held: str | Callable[[], str]) -> None:
        """Send the draft of ``held`` (or of what the callable returns, computed only when a
        draft is due) if one is due and it changed since the last one sent."""
        if not self.due():
            return
        try:
            event = draft_event(held() if callable(held) else held)
            if event is None or event["text"] == self._sent:
                return
            self._last = self._clock()
            self._sent = event["text"]
            self._writer(event)  # type: ignore[misc]  # the writer is a plain callable kept as an attribute; mypy takes it for a method
        except Exception:  # noqa: BLE001 - a draft is a courtesy: never fail the generation for it
            log.warning("call_drafts_stopped", exc_info=True)
            self._writer = None
