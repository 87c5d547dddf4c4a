"""The harness's notes to the model, told to a person in one line.

When the completion check finds a final reply lacking, it adds a note to the thread (a human
message named ``harness``: "[harness check] Not done yet: ...") and the model runs again. The
note is the harness talking to the model, not the conversation: the CLI and the IM channels never
show it as the user's words but fold it to one line, "checked: 2 findings, sent back to the
agent" (the web UI does the same, see web/src/state/checks.ts). A note's findings are counted
from ``additional_kwargs.herdsman_findings`` (objects with a ``rule``) when every note carries
them; otherwise the notes are counted. The line is in the language of the turn's request
(:mod:`~herdsman.language.user_words`). Works on message objects and on their JSON (dicts).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from herdsman.language.user_words import say
from herdsman.runtime.runs.final_answer import request_language
from herdsman.turns.turn import HARNESS_NAME

FINDINGS_KEY = "herdsman_findings"


def _get(message: Any, key: str) -> Any:
    return message.get(key) if isinstance(message, Mapping) else getattr(message, key, None)


def is_note(message: Any) -> bool:
    """Whether ``message`` (a LangChain message or its JSON) is a note of the harness to the model."""
    return _get(message, "type") == "human" and _get(message, "name") == HARNESS_NAME


def note_rules(message: Any) -> list[str] | None:
    """The rule ids of a note's findings, or None when the note carries none."""
    findings = (_get(message, "additional_kwargs") or {}).get(FINDINGS_KEY)
    if not isinstance(findings, list):
        return None
    return [f["rule"] for f in findings if isinstance(f, Mapping) and isinstance(f.get("rule"), str)]


def found_text(rules: Sequence[list[str] | None], language: str = "en") -> str:
    """How much the notes found: "3 findings" when every note (given by its :func:`note_rules`)
    names its findings, else "2 notes" (in ``language``)."""
    if rules and all(r for r in rules):
        n, unit = sum(len(r or []) for r in rules), "checks.findings"
    else:
        n, unit = len(rules), "checks.notes"
    return say(unit, language, n=n, s="" if n == 1 else "s")


def fold_line(rules: Sequence[list[str] | None], language: str = "en") -> str:
    """One line for the notes of a turn, given by their :func:`note_rules`, in ``language`` (the
    turn's request's): "checked: 2 findings, sent back to the agent"."""
    return say("checks.fold", language, found=found_text(rules, language))


def fold_notes(messages: Sequence[Any], keep: bool = False) -> list[Any]:
    """The conversation as a person reads it: ``messages`` with the notes of each turn (from a
    user's message to the next) taken out and told by one :func:`fold_line` string at its end;
    ``keep``: the notes stay in their place too (a reader who asked to see them)."""
    out: list[Any] = []
    notes: list[list[str] | None] = []
    language = "en"
    for message in messages:
        if is_note(message):
            notes.append(note_rules(message))
            if keep:
                out.append(message)
            continue
        if _get(message, "type") == "human":
            if notes:
                out.append(fold_line(notes, language))
                notes = []
            language = request_language([message])
        out.append(message)
    if notes:
        out.append(fold_line(notes, language))
    return out
