"""A reply that repeats a note of the harness instead of answering.

The harness talks to the model in notes (the completion check's "[harness check] Not done yet:
...", the guard's "[harness] Your reply was empty ...", the answer nudge): human messages the user
never wrote. A small model sometimes copies such a note back as its reply, and a copied note must
never stand as the final answer (it did once: "The request is about 'NOTE', but none of your tool
calls looked for it ..." was a run's answer). :func:`echoes_note` tells such a reply, character by
character (no words are parsed, so it holds for any language, Chinese without spaces too): most of
the reply is long runs copied from one note, not counting what the request or a tool result also
says, or what the model said before (a note quotes the request's term, a value to copy, the path
a reply named). The notice the bash tool gives for a job it started in the background is the
harness's words too (:func:`harness_notice`): on dev the model repeated it ("The server is running
in the background (job 1) ...") as its whole answer to a request to start a server *and fetch a
value through it*. The model guard asks again and marks a
reply that still echoes (:data:`NOTE_ECHO_KEY`); the completion check sends it back, and when its
rounds run out puts an honest "could not" in its place (see :mod:`~herdsman.middleware.completion.could_not`).

difflib's matching blocks are the standard library's; nothing else here needs a library.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from difflib import SequenceMatcher
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage

from herdsman.turns.turn import is_harness

NOTE_ECHO_KEY = "herdsman_echoes_note"
"""In an AI message's ``additional_kwargs``: True when the reply repeats a note of the harness."""

MIN_RUN = 16
"""Characters a copied run must have to count (shorter ones are common phrases)."""
SHARE = 0.5
"""How much of the reply (its characters, spaces folded) copied runs must make for an echo."""

_PREFIX = re.compile(r"^\s*\[harness[^\]]*\]\s*")


def _fold(text: str) -> str:
    return " ".join(text.split())


def note_texts(messages: Iterable[Any]) -> list[str]:
    """The texts of the harness's notes among ``messages``: human messages named ``harness``, or
    whose text starts with ``[harness`` (the notes added to a single model request)."""
    return [m.text for m in messages if isinstance(m, HumanMessage) and (is_harness(m) or _PREFIX.match(m.text))]


def harness_notice(message: Any) -> bool:
    """Whether a tool result is a notice of the harness rather than a command's output: a job
    started in the background and still running (the bash tool's words for the model, "Started in
    the background (job 1)... Later bash commands reach it at ..."), marked by its artifact."""
    artifact = getattr(message, "artifact", None)
    return (
        isinstance(message, ToolMessage)
        and isinstance(artifact, dict)
        and artifact.get("background") is not None
        and "exit_code" not in artifact
    )


def echoes_note(reply: str, notes: Sequence[str], known: Sequence[str] = ()) -> bool:
    """Whether ``reply`` is mostly copied from one of ``notes``: runs of :data:`MIN_RUN` characters
    or more, not found in ``known`` (the request, the tool results, the model's earlier replies),
    make :data:`SHARE` of it."""
    text = _fold(reply)
    if len(text) < MIN_RUN or not notes:
        return False
    seen = "\n".join(_fold(k) for k in known)
    for note in notes:
        body = _fold(_PREFIX.sub("", note))
        if not any(body[i : i + MIN_RUN] in text for i in range(0, max(1, len(body) - MIN_RUN + 1), 4)):
            continue  # no run of the note in the reply (a cheap look first: difflib is pure Python)
        blocks = SequenceMatcher(None, text, body, autojunk=False).get_matching_blocks()
        copied = sum(b.size for b in blocks if b.size >= MIN_RUN and text[b.a : b.a + b.size] not in seen)
        if copied >= SHARE * len(text):
            return True
    return False


def echoed(message: Any) -> bool:
    """Whether a message (an AI message or its JSON) is marked as a copy of a note (:data:`NOTE_ECHO_KEY`)."""
    get = message.get if isinstance(message, Mapping) else lambda k: getattr(message, k, None)
    return get("type") == "ai" and bool((get("additional_kwargs") or {}).get(NOTE_ECHO_KEY))


ECHO_STEP_LINE = "✗ reply repeated a note of the harness, not shown"
"""What a person is shown in place of such a reply."""
