"""Activate a skill for one turn with ``/skill-name`` (or by asking for it in words: "use the
data-analysis skill"), and enforce its ``allowed-tools``.

When the turn's user message starts with ``/name`` and ``name`` is a usable skill, its SKILL.md
is added to the system message of every model call in that turn. When the skill lists
``allowed-tools``, only those tools are offered to the model, and a call to any other tool is
answered with an error result instead of being run. An unknown ``/name`` gets a note so the
model can tell the user which skills exist. A message that starts with several (``/a /b ...``)
gets each one's SKILL.md, and the tools any of them allows (all tools when one does not restrict them).

When the message names no skill, ``auto_select`` (``skills.auto_select``) decides what happens:
``suggest`` adds a ``<skill_candidates>`` section naming the skills that fit the request best
(:mod:`herdsman.prompting.skill_ranking`), so the model reads one of those SKILL.md files instead
of choosing from the whole list; ``activate`` also activates the best one, as ``/name`` would,
when it leads the others clearly, and when none does, puts the candidates to the model in one
short forced call on the turn's first model call (``skills.ask_model``; :mod:`herdsman.turns.skill_pick`);
``off`` leaves the choice to the model and the prompt's list.

Costs one backwards scan to the last user message per model call, and a dict lookup per tool
call; the activation is recorded in the state (``active_skill``) only when it changes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, NotRequired

from langchain.agents.middleware import (
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from herdsman.middleware.context.uploads_notice import without_uploads_notice
from herdsman.middleware.reply_language import without_answer_line
from herdsman.middleware.tool_gate import ToolGateMiddleware
from herdsman.prompting.parts import first_sentence
from herdsman.prompting.skill_ranking import SkillRanker, candidates_note
from herdsman.skills.activation import ActiveSkill, active_skill, also_active, harness_chosen, last_user_message
from herdsman.skills.model import Skill
from herdsman.skills.own import OwnSkills
from herdsman.turns.skill_pick import model_pick
from herdsman.turns.turn import run_user, this_run, tool_name


class SkillState(AgentState):
    """Adds ``active_skill``: the skill activated by the current turn's user message."""

    active_skill: NotRequired[ActiveSkill | None]


def skill_block(skill: Skill, chosen: bool = False) -> str:
    """The system-prompt section for an active skill: where it lives, its tools, its SKILL.md.

    ``chosen``: the harness picked it from the request's words (``skills.auto_select``), so it is
    advice the model may leave when it does not fit, and it takes no tools away (its
    ``allowed-tools`` bind when the user names the skill)."""
    if chosen:
        why = (
            f"The harness chose the skill {skill.name!r} for this request from its words. If it fits "
            "what the user asked, follow its instructions below; if it does not, ignore it and do what "
            "the user asked."
        )
    else:
        why = f"The user activated the skill {skill.name!r} for this turn. Follow its instructions below."
    lines = [
        f'<active_skill name="{skill.name}" path="{skill.virtual_dir}">',
        f"{why} Its files are in {skill.virtual_dir} (read-only): run its scripts from there and write "
        "results to the workspace or outputs.",
    ]
    if skill.allowed_tools is not None and not chosen:
        tools = ", ".join(skill.allowed_tools) or "none"
        lines.append(f"While it is active you may use only these tools: {tools}.")
    lines += ["", skill.body.strip(), "</active_skill>"]
    return "\n".join(lines)


def unknown_skill_note(name: str, known: list[str], reason: str | None = None) -> str:
    """The note for ``/name`` when no usable skill has that name (``reason``: why, if it exists)."""
    choices = ", ".join(f"/{n}" for n in known) or "none are installed"
    why = f"; the skill exists but {reason}" if reason else ""
    return (
        f"<skill_not_found>The user's message starts with /{name}, but there is no enabled skill "
        f"named {name!r}{why} (available: {choices}). Tell the user, then help with the rest of "
        "the message.</skill_not_found>"
    )


def refusal(skill: Skill, tool: str, call_id: str, allowed_tools: set[str] | None = None) -> ToolMessage:
    """The error result for a call of a tool the active skill does not allow (``allowed_tools``:
    what the active skills allow together, when several are active)."""
    allowed = ", ".join(sorted(allowed_tools) if allowed_tools is not None else skill.allowed_tools or ()) or "none"
    return ToolMessage(
        content=(
            f"Error: the tool {tool!r} is not allowed while the skill {skill.name!r} is active "
            f"(allowed-tools: {allowed}). Use one of those tools instead."
        ),
        tool_call_id=call_id,
        name=tool,
        status="error",
    )


@dataclass(frozen=True)
class SkillView:
    """The skills one run sees: usable ones by name, why others are not, their ranker (when
    ``auto_select`` is on) and the prompt's note on the user's own skills (when they have any)."""

    skills: dict[str, Skill]
    unavailable: dict[str, str]
    ranker: SkillRanker | None = None
    note: str | None = None


def own_skills_note(skills: list[Skill]) -> str:
    """The system-prompt section naming the user's own skills (the prompt's list has the shared ones)."""
    lines = ["<your_skills>", "Skills this user made; to use one, read its SKILL.md first, then follow it:"]
    lines += [
        f"- {s.name}: read {s.virtual_path}. {first_sentence(s.description, 100)}"
        for s in sorted(skills, key=lambda s: s.name)
    ]
    return "\n".join([*lines, "</your_skills>"])


def _user_words(text: str) -> str:
    """What the user wrote of a message as the model sees it: without the line asking for an answer
    in its language and the notice of uploaded files (their words are no topic of the request)."""
    return without_answer_line(without_uploads_notice(text))


class SkillActivationMiddleware(ToolGateMiddleware):
    """Inject the active skill and restrict tools to its ``allowed-tools`` (see module docstring)."""

    state_schema = SkillState

    def __init__(
        self,
        skills: Mapping[str, Skill],
        unavailable: Mapping[str, str] | None = None,
        auto_select: Literal["off", "suggest", "activate"] = "off",
        own: OwnSkills | None = None,
        ask_model: bool = True,
    ) -> None:
        """``skills``: the usable skills by name; ``unavailable``: why other known skills are not
        (a SkillCatalog's ``skills`` and ``reasons()``); ``auto_select``: see the module docstring;
        ``own``: the run's user's own skills, offered beside (and over) the shared ones;
        ``ask_model``: with ``activate``, let the model choose among candidates none of which
        leads clearly (``skills.ask_model``)."""
        super().__init__()
        self.shared = SkillView(
            dict(skills),
            dict(unavailable or {}),
            SkillRanker(dict(skills)) if auto_select != "off" and skills else None,
        )
        self.auto_select = auto_select
        self.ask_model = ask_model and auto_select == "activate"
        self.own = own
        self._views: dict[str, tuple[dict[str, Skill], SkillView]] = {}
        self._blocks: dict[tuple[str, bool], str] = {}

    @property
    def skills(self) -> dict[str, Skill]:
        """The shared skills by name."""
        return self.shared.skills

    def view(self) -> SkillView:
        """The skills of this run: the shared ones, and over them the run's user's own."""
        if self.own is None:
            return self.shared
        user = run_user()
        own, reasons = self.own.of(user)
        if not own and not reasons:
            return self.shared
        kept = self._views.get(user)
        if kept is not None and kept[0] is own:
            return kept[1]
        merged = {**self.shared.skills, **own}
        view = SkillView(
            merged,
            {**self.shared.unavailable, **reasons},
            SkillRanker(merged) if self.auto_select != "off" else None,
            own_skills_note(list(own.values())) if own else None,
        )
        self._views[user] = (own, view)
        return view

    def _choose(self, view: SkillView, request: ModelRequest) -> Callable[[str], str | None]:
        def choose(text: str) -> str | None:
            ranked = view.ranker if self.auto_select == "activate" else None
            if ranked is None:
                return None
            words = _user_words(text)
            clear = ranked.clear_choice(words)
            if clear is None and self._asks(request):
                clear = model_pick(request.model, words, [c.skill for c in ranked.candidates(words)])
            return clear.name if clear else None

        return choose

    def _asks(self, request: ModelRequest) -> bool:
        """Whether this model call may put the skill to the model: on the turn's first call only
        (after it, the turn goes on with what that call decided)."""
        if not self.ask_model:
            return False
        _, run = this_run(request.messages)
        return not any(isinstance(m, AIMessage) for m in run)

    @staticmethod
    def _suggestion(view: SkillView, request: ModelRequest) -> str | None:
        user = last_user_message(request.messages) if view.ranker else None
        text = _user_words(user.text) if user is not None else ""
        candidates = view.ranker.candidates(text) if view.ranker and text else []
        return candidates_note(candidates) if candidates else None

    def _block(self, skill: Skill, chosen: bool = False) -> str:
        if skill.owner is not None:  # one user's, changed by them at any time: not kept
            return skill_block(skill, chosen)
        key = (skill.name, chosen)
        block = self._blocks.get(key)
        if block is None:
            block = self._blocks[key] = skill_block(skill, chosen)
        return block

    def _allowed(self, skills: list[Skill]) -> set[str] | None:
        """The tools the active ``skills`` allow together; None when one of them allows every tool."""
        if any(skill.allowed_tools is None for skill in skills):
            return None
        return {tool for skill in skills for tool in skill.allowed_tools or ()}

    def _prepare(self, request: ModelRequest) -> tuple[ModelRequest, Any]:
        view = self.view()
        name, update = active_skill(request.state, request.messages, view.skills, self._choose(view, request))
        skill = view.skills.get(name) if name is not None else None
        tools = request.tools
        if name is None:
            note = self._suggestion(view, request)
            if note is None and view.note is None:
                return request, update
            extra = "\n\n".join(n for n in (view.note, note) if n)
        elif skill is None:
            extra, update = unknown_skill_note(name, sorted(view.skills), view.unavailable.get(name)), False
        else:
            active = [skill]
            notes = []
            for other in also_active(request.state, update):
                if other in view.skills:
                    active.append(view.skills[other])
                else:
                    notes.append(unknown_skill_note(other, sorted(view.skills), view.unavailable.get(other)))
            chosen = harness_chosen(request.state, update)
            extra = "\n\n".join([*(self._block(s, chosen) for s in active), *notes])
            allowed = None if chosen else self._allowed(active)
            if allowed is not None:
                tools = [t for t in request.tools if tool_name(t) in allowed]
        base = request.system_message.text if request.system_message is not None else ""
        system = SystemMessage(content=f"{base}\n\n{extra}" if base else extra)
        return request.override(system_message=system, tools=tools), update

    @staticmethod
    def _finish(response: ModelResponse, update: Any) -> Any:
        if update is False:
            return response
        return ExtendedModelResponse(model_response=response, command=Command(update={"active_skill": update}))

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        """Call the model with the active skill's instructions and tools."""
        prepared, update = self._prepare(request)
        return self._finish(handler(prepared), update)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        """Async twin of :meth:`wrap_model_call` (a turn's first call in a worker thread: it may
        make the model's pick)."""
        if self._asks(request):
            prepared, update = await asyncio.to_thread(self._prepare, request)
        else:
            prepared, update = self._prepare(request)
        return self._finish(await handler(prepared), update)

    def _blocked(self, request: ToolCallRequest) -> ToolMessage | None:
        # The model call before this tool call recorded the turn's skill (or cleared it).
        state = request.state if isinstance(request.state, dict) else {}
        recorded = state.get("active_skill")
        if harness_chosen(state):  # the harness's pick advises; it takes no tool away
            return None
        skills = self.view().skills if recorded else {}
        skill = skills.get(recorded["name"]) if recorded else None
        if skill is None:
            return None
        active = [skill, *(skills[n] for n in also_active(state, False) if n in skills)]
        allowed = self._allowed(active)
        tool = request.tool_call.get("name", "")
        if allowed is None or tool in allowed:
            return None
        return refusal(skill, tool, request.tool_call.get("id") or "", allowed)

    def refuse(self, request: ToolCallRequest) -> ToolMessage | None:
        """Refuse a tool the active skill does not allow."""
        return self._blocked(request)
