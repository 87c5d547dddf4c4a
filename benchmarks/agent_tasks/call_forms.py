"""How a run's tool calls came out: the figures that compare constrained decoding with repair.

For one run (its messages): ``calls`` made, ``calls_as_text`` (model replies whose text still
holds something written as a call, ``<tool_call>`` or ``{"name": ...``, that therefore did not
run: a malformed or lost call), and ``acted`` (whether any tool ran at all; a run that answered
without acting on a task that needs its tools is the third failure the grammar targets).
"""

from __future__ import annotations

import re
from typing import Any

_AS_TEXT = re.compile(r'<tool_call>|\{\s*"name"\s*:')


def call_forms(messages: list[Any]) -> dict[str, int]:
    """The run's call figures (see the module docstring)."""
    ai = [m for m in messages if getattr(m, "type", "") == "ai"]
    calls = sum(len(getattr(m, "tool_calls", None) or []) for m in ai)
    as_text = sum(bool(_AS_TEXT.search(m.text or "")) for m in ai)
    return {"calls": calls, "calls_as_text": as_text, "acted": int(calls > 0)}


def totals(records: list[dict[str, Any]]) -> dict[str, int]:
    """Sums over runs: calls, calls written as text, runs that never acted."""
    forms = [r.get("call_forms") or {} for r in records]
    return {
        "runs": len(records),
        "calls": sum(f.get("calls", 0) for f in forms),
        "calls_as_text": sum(f.get("calls_as_text", 0) for f in forms),
        "answered_without_acting": sum(1 - f.get("acted", 1) for f in forms),
    }
