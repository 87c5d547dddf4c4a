"""Tool calls a model wrote as text: found in a reply, marked on the message, read by renderers.

A small model sometimes writes a call in its reply's text instead of making it: a
``<tool_call>{...}</tool_call>`` block its chat template teaches, bare JSON such as
``{"name": "bash", "arguments": {...}}``, an XML-ish ``<read_file path=...>``, or a call of a tool
that does not exist (a skill's name). Nothing ran; the text is not an answer. The model guard
(:mod:`~herdsman.middleware.model_output_guard`) marks such a reply with :data:`CALL_AS_TEXT_KEY`
in its ``additional_kwargs`` (the names it tried to call), so whoever shows the conversation (the
CLI, the web UI, the IM channels, the final answer of a run) shows a failed step, never the raw
call as the agent's message. The completion check sends the model back (rule ``call.as_text``).

Structural, any language: the markers are the call syntax, not words. Works on message objects
and on their JSON (dicts).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

CALL_AS_TEXT_KEY = "herdsman_call_as_text"
"""In an AI message's ``additional_kwargs``: the tool names it wrote as text (``"?"`` when none
could be read); absent for a reply that holds no such call."""

_CALL_NAME = re.compile(r'\{\s*"name"\s*:\s*"([\w.-]+)"\s*,\s*"(?:arguments|parameters|args)"')
_CALL_START = re.compile(r'<tool_call>|\{\s*"name"\s*:\s*"[\w.-]+"\s*,\s*"(?:arguments|parameters|args)"')


def text_tool_call(reply: str, tool_names: Sequence[str]) -> bool:
    """Whether the reply holds a call of one of ``tool_names`` (or a ``<tool_call>`` block) written as text."""
    if "<tool_call>" in reply:
        return True
    return any(
        re.search(rf'"name"\s*:\s*"{re.escape(n)}"', reply) or re.search(rf"<{re.escape(n)}\s+\w+=", reply)
        for n in tool_names
    )


def unknown_tools(reply: str, tool_names: Sequence[str]) -> list[str]:
    """Names of tools that do not exist which the reply tries to call as JSON (a model calls a
    ``copy`` or ``python`` tool it imagines, or a skill by its name)."""
    return sorted(
        {n for n in _CALL_NAME.findall(reply) if n not in tool_names and n.rsplit(".", 1)[-1] not in tool_names}
    )


def written_calls(reply: str, tool_names: Sequence[str]) -> list[str]:
    """The names of the calls ``reply`` writes as text (bound tools or not; ``"?"`` for a
    ``<tool_call>`` block whose name cannot be read); empty when it writes none."""
    if not text_tool_call(reply, tool_names) and not _CALL_NAME.search(reply):
        return []
    named = list(dict.fromkeys(_CALL_NAME.findall(reply)))
    named += [n for n in tool_names if n not in named and re.search(rf"<{re.escape(n)}\s+\w+=", reply)]
    return named or ["?"]


def call_start(text: str) -> int | None:
    """Where the first call written as text begins in ``text`` (the opening ``<tool_call>`` or
    ``{"name": ..., "arguments"``), or None: what streams before it is prose."""
    match = _CALL_START.search(text)
    return match.start() if match else None


def _get(message: Any, key: str) -> Any:
    return message.get(key) if isinstance(message, Mapping) else getattr(message, key, None)


def calls_as_text(message: Any) -> list[str] | None:
    """The names a message (an AI message or its JSON) marks as written as text, or None when it
    is not marked."""
    if _get(message, "type") != "ai":
        return None
    names = (_get(message, "additional_kwargs") or {}).get(CALL_AS_TEXT_KEY)
    return [str(n) for n in names] if isinstance(names, list) else None


def failed_step_line(names: Sequence[str]) -> str:
    """One line that tells a person the reply was a call written as text, not an answer."""
    shown = ", ".join(n for n in names if n != "?") or "a tool"
    return f"✗ {shown}: tool call written as text, not run"
