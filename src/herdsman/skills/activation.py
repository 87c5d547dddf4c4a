"""``/skill-name`` at the start of a user message (several: ``/slide-deck /diagram ...``, as the
web UI's skill picker sends them), or a known skill asked for in words ("use the data-analysis
skill"): which skills a turn activates.

The active skill of a turn is derived from the turn's user message. It is also remembered in the
thread state (``active_skill``), so it stays active when summarization has folded that message
away, and it ends with the next user message.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from typing import (
    Any,
    NotRequired,  # not typing's: pydantic renders it on Python 3.11 (the state's JSON schema)
)

from langchain_core.messages import AnyMessage, HumanMessage
from typing_extensions import (
    TypedDict,
)

COMMAND_RE = re.compile(r"^\s*/([a-z0-9]+(?:-[a-z0-9]+)*)(?=\s|$)")


class ActiveSkill(TypedDict):
    """The state record of an activation: the skill, the user message that asked for it, the
    other skills the message named after the first (``/a /b ...``), and ``chosen`` when the harness
    picked it (``skills.auto_select: activate``) rather than the user naming it."""

    name: str
    message_id: str | None
    also: NotRequired[list[str]]
    chosen: NotRequired[bool]


def skill_command(text: str) -> str | None:
    """The skill name when ``text`` starts with ``/name`` (followed by a space or the end)."""
    match = COMMAND_RE.match(text)
    return match.group(1) if match else None


def skill_commands(text: str) -> list[str]:
    """Every ``/name`` at the start of ``text``, in order (``/a /b do it``: a, b), without repeats."""
    names: list[str] = []
    rest = text
    while (match := COMMAND_RE.match(rest)) is not None:
        if match.group(1) not in names:
            names.append(match.group(1))
        rest = rest[match.end() :]
    return names


def _record(state: dict[str, Any] | Any, update: ActiveSkill | None | bool) -> ActiveSkill | None:
    """The turn's activation record: the one being written, else the one kept."""
    return update if isinstance(update, dict) else (state.get("active_skill") if isinstance(state, dict) else None)


def also_active(state: dict[str, Any] | Any, update: ActiveSkill | None | bool) -> list[str]:
    """The skills activated beside the first: from the record being written, else the one kept."""
    record = _record(state, update)
    return list(record.get("also") or []) if record else []


def harness_chosen(state: dict[str, Any] | Any, update: ActiveSkill | None | bool = False) -> bool:
    """Whether the turn's skill is one the harness chose from the request's words (``chosen``):
    from the record being written, else the one kept."""
    record = _record(state, update)
    return bool(record and record.get("chosen"))


NOTE_NAME = "harness"
"""The name the harness's notes carry (``turns.turn.HARNESS_NAME``; the skills layer sits
below the turns package, so it is written here too): a completion check's "[harness check]" note
after the user's request is no new request (it cleared the turn's skill)."""


def is_user_message(message: AnyMessage) -> bool:
    """A message the user wrote (not a summary or a harness note, which are HumanMessages too)."""
    if not isinstance(message, HumanMessage):
        return False
    if message.additional_kwargs.get("lc_source") == "summarization" or message.name == NOTE_NAME:
        return False
    return not (isinstance(message.content, str) and message.content.startswith("[harness]"))


def last_user_message(messages: Sequence[AnyMessage]) -> AnyMessage | None:
    """The latest message the user wrote, or None."""
    for message in reversed(messages):
        if is_user_message(message):
            return message
    return None


_NAMED = re.compile(
    r"\b(?:use|using|with|apply|follow)\s+(?:the\s+|your\s+)?[`'\"]?([a-z0-9]+(?:-[a-z0-9]+)*)[`'\"]?\s+skill\b",
    re.IGNORECASE,
)


def named_skill(text: str, known: Collection[str]) -> str | None:
    """A known skill the message asks for in words ("use the data-analysis skill to ...")."""
    for match in _NAMED.finditer(text):
        if match.group(1).lower() in known:
            return match.group(1).lower()
    return None


def active_skill(
    state: dict[str, Any] | Any,
    messages: Sequence[AnyMessage],
    known: Collection[str] = (),
    choose: Callable[[str], str | None] | None = None,
) -> tuple[str | None, ActiveSkill | None | bool]:
    """``(skill name or None, state update)`` for the current turn.

    ``/name`` at the start activates ``name`` (known or not: an unknown one gets a note); so does
    asking for one of the ``known`` skills in words ("use the data-analysis skill"); failing both,
    ``choose`` (given the message's text) may pick one (``skills.auto_select: activate``). The update
    is ``False`` when the recorded activation is already right; otherwise it is the record to
    write (an :class:`ActiveSkill`, or ``None`` to clear a previous turn's skill).
    """
    recorded: ActiveSkill | None = state.get("active_skill") if isinstance(state, dict) else None
    user = last_user_message(messages)
    if user is None:  # the turn's message was summarized away: trust the record
        return (recorded["name"] if recorded else None), False
    if recorded and recorded.get("message_id") == user.id:
        return recorded["name"], False
    commands = skill_commands(user.text)
    name = (commands[0] if commands else None) or named_skill(user.text, known)
    chosen = name is None and choose is not None and (name := choose(user.text)) is not None
    if name is None:
        return None, (None if recorded else False)
    record = ActiveSkill(name=name, message_id=user.id)
    if len(commands) > 1:
        record["also"] = commands[1:]
    if chosen:
        record["chosen"] = True
    return name, record
