"""The model picks the skill when the word ranking has candidates but no clear choice.

``skills.auto_select: activate`` activates the best-ranked skill only when it leads the others
clearly (:meth:`herdsman.prompting.skill_ranking.SkillRanker.clear_choice`). Otherwise the
candidates were only offered in the prompt, and a 1.5B model in the middle of a task rarely stops
to read a SKILL.md it was offered: measured on the skill-selection benchmark, the embedded model
activated an offered skill by itself almost never, so a request the ranking could not settle
alone went without its skill.

Here the harness puts the choice to the model as a question of its own, once per turn, on the
turn's first model call: the request, each candidate's name and description (what it does, when
to use it), and "none", in one forced call of ``choose_skill`` whose only argument is an
``enum`` of those names (the embedded model's grammar, or an API model's structured tool choice,
holds the reply to that list; see :mod:`herdsman.turns.forced_call`). Choosing from two or three
described options is a question a small model answers far better than noticing, mid-task, that it
should read a file.
"none" stays a first-class answer, and a failed call chooses nothing.

Hand-written: which skill fits is a question about this harness's own skills; the constrained
call is what makes a 1.5B model's answer usable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage

from herdsman.logs import get_logger
from herdsman.skills.model import Skill
from herdsman.turns.forced_call import choice_tool, forced_arguments

log = get_logger(__name__)

PICK_TOOL = "choose_skill"
NO_SKILL = "none"
REQUEST_CHARS = 1500
DESCRIPTION_CHARS = 400
PROMPT = (
    "You decide whether one of the harness's skills should guide the work on a user's request. "
    "A skill fits when the request asks for what the skill makes or does, whatever the language "
    "of the request. When the request only mentions a topic a skill shares, or asks a general "
    f"question, choose {NO_SKILL}. Call {PICK_TOOL} with the name of the skill that fits, or "
    f"{NO_SKILL}."
)


def pick_tool(names: Sequence[str]) -> dict[str, Any]:
    """The forced tool: its only argument is one of ``names`` or :data:`NO_SKILL`."""
    return choice_tool(PICK_TOOL, "Choose the skill that fits the request, or none.", "skill", [*names, NO_SKILL])


def _summary(skill: Skill) -> str:
    return f"- {skill.name}: {' '.join(skill.description.split())[:DESCRIPTION_CHARS]}"


def pick_brief(request: str, skills: Sequence[Skill]) -> list[AnyMessage]:
    """The short conversation of the pick: the request (its first :data:`REQUEST_CHARS`
    characters) and each candidate's name and description (what it does and when to use it)."""
    options = "\n".join([*(_summary(s) for s in skills), f"- {NO_SKILL}: no skill fits; work without one."])
    return [
        SystemMessage(PROMPT),
        HumanMessage(f"User's request:\n{request[:REQUEST_CHARS]}\n\nSkills:\n{options}"),
    ]


def is_pick_call(messages: Sequence[AnyMessage]) -> bool:
    """Whether ``messages`` are the conversation of a pick (:func:`pick_brief`): a canned model
    (a benchmark's dry mode, a test) tells the harness's question from the user's turn by it."""
    return bool(messages) and messages[0].type == "system" and messages[0].text == PROMPT


def model_pick(model: Any, request: str, skills: Sequence[Skill]) -> Skill | None:
    """The skill of ``skills`` the model chose for ``request``, or None (it chose none, or the
    call failed or gave no name of the list)."""
    if not skills:
        return None
    by_name = {s.name: s for s in skills}
    args = forced_arguments(model, pick_tool(list(by_name)), pick_brief(request, skills))
    chosen = (args or {}).get("skill")
    log.info("skill_pick", offered=list(by_name), chosen=chosen)
    return by_name.get(chosen) if isinstance(chosen, str) else None
