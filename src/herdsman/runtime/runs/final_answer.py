"""The answer of a run as a person reads it, from the thread's messages.

The last AI message is the answer, unless it is a tool call the model wrote as text (marked by
the model guard, see :mod:`herdsman.turns.text_calls`) or a copy of a note of the harness
(:mod:`herdsman.middleware.completion.note_echo`): that was a failed step, not words for the user, so the
answer says that the run ended on it instead of showing the raw call or the note, in the
language of the user's request (:mod:`~herdsman.language.user_words`). Works on message
objects and on their JSON (dicts).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from herdsman.language.detect import language_of
from herdsman.language.user_words import say
from herdsman.middleware.completion.note_echo import echoed
from herdsman.turns.text_calls import calls_as_text, failed_step_line
from herdsman.turns.turn import HARNESS_NAME


def _text(message: Any) -> str:
    content = message.get("content") if isinstance(message, Mapping) else getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return "".join(
        p if isinstance(p, str) else str(p.get("text", "")) for p in content or [] if isinstance(p, (str, dict))
    )


def _get(message: Any, key: str) -> Any:
    return message.get(key) if isinstance(message, Mapping) else getattr(message, key, None)


def request_language(messages: Sequence[Any]) -> str:
    """The language of the user's last message (not a note of the harness) among ``messages``; ``en`` without one."""
    for message in reversed(messages):
        if _get(message, "type") == "human" and _get(message, "name") != HARNESS_NAME:
            language = language_of(_text(message)[:4000])
            return "en" if language == "und" else language
    return "en"


def final_answer(messages: Sequence[Any], skip_blank: bool = False) -> str:
    """The text of the run's answer: the last AI message's, or, when that message is a tool call
    written as text, a sentence saying the run ended on that failed step; ``skip_blank``: pass
    over AI messages without text (calls only)."""
    for message in reversed(messages):
        if _get(message, "type") != "ai":
            continue
        written = calls_as_text(message)
        if written is not None:
            return say(
                "answer.text_call",
                request_language(messages),
                step=failed_step_line(written).removeprefix("✗ "),
                tools=", ".join(n for n in written if n != "?") or "?",
            )
        if echoed(message):
            return say("answer.echo", request_language(messages))
        text = _text(message)
        if text.strip() or not skip_blank:
            return text
    return ""
