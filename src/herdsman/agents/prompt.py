"""The lead agent's system prompt: role, tools, skills, sub-agents, response style, date.

Pure functions of their inputs, so the prompt can be read and tested on its own. ``{date}``
stays a placeholder; :class:`herdsman.middleware.system_prompt.SystemPromptMiddleware` fills it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from herdsman.prompting.parts import FILES, SMALL_EXAMPLES, SMALL_ROLE, SMALL_RULES, STYLE, first_sentence
from herdsman.sandbox.base import SKILLS_ROOT


@dataclass(frozen=True)
class PromptEntry:
    """A named thing the prompt lists: a tool, a skill or a sub-agent type."""

    name: str
    description: str
    path: str | None = None


ROLE = """\
<role>
You are Herdsman, an agent that gets long, multi-step work done. You plan, act with your tools
in a sandbox, check your results, and finish with a clear answer. Today is {date}.
</role>"""


def _section(tag: str, intro: str, entries: Sequence[PromptEntry]) -> str:
    lines = [f"<{tag}>", intro]
    for e in entries:
        where = f" ({e.path})" if e.path else ""
        lines.append(f"- {e.name}{where}: {e.description.strip()}")
    lines.append(f"</{tag}>")
    return "\n".join(lines)


def build_system_prompt(
    tools: Sequence[PromptEntry],
    skills: Sequence[PromptEntry] = (),
    subagents: Sequence[PromptEntry] = (),
    extra_instructions: str = "",
    preview: str = "",
) -> str:
    """The lead's system prompt; sections for skills and sub-agents appear only when there are any;
    ``preview`` says how the user sees what the agent serves (:func:`herdsman.prompting.parts.preview_note`)."""
    parts = [ROLE, FILES]
    if tools:
        parts.append(_section("tools", "Your tools:", tools))
    if len(skills) > SKILLS_DESCRIBED:  # a growing library: names only (see SKILLS_DESCRIBED)
        parts.append(f"<skills>\n{skill_names(skills)}\n</skills>")
    elif skills:
        parts.append(
            _section(
                "skills",
                f"Skills are instructions for special tasks, under {SKILLS_ROOT}. When one fits the "
                "task, read its SKILL.md with read_file first and follow it.",
                skills,
            )
        )
    if subagents:
        parts.append(
            _section(
                "subagents",
                "You can delegate parts of the work to sub-agents with the task tool. Each starts "
                "with a fresh context: give it everything it needs in the prompt.",
                subagents,
            )
        )
    if preview:
        parts.append(preview)
    parts.append(STYLE)
    if extra_instructions.strip():
        parts.append(f"<instructions>\n{extra_instructions.strip()}\n</instructions>")
    return "\n\n".join(parts)


SKILLS_DESCRIBED = 8
"""Up to this many skills, the prompt describes each; past it, it names them by folder, so the
prompt stays within a small model's context however many skills are installed (23 described
skills took 6,700 characters, and the embedded model's 4,096-token window overflowed with the
standard profile). The model reads a SKILL.md before using it anyway; the user's ``/name`` and the
picker name skills directly, and ``skills.auto_select`` adds the descriptions of the skills that
fit the request."""


def skill_names(skills: Sequence[PromptEntry]) -> str:
    """The skills by folder, names only, with how to use one."""
    folders: dict[str, list[str]] = {}
    for s in skills:
        folder = s.path.rsplit("/", 2)[0] if s.path and s.path.count("/") >= 2 else SKILLS_ROOT
        folders.setdefault(folder, []).append(s.name)
    lines = "\n".join(f"- in {folder}/: {', '.join(names)}" for folder, names in folders.items())
    return (
        "Skills (instructions for special tasks): when one fits the task, read <folder>/<name>/SKILL.md "
        f"first, then follow it.\n{lines}"
    )


def small_skill_list(skills: Sequence[PromptEntry]) -> str:
    """The ``small`` profile's list of skills: each with its first sentence, or past
    :data:`SKILLS_DESCRIBED` their names only."""
    if len(skills) > SKILLS_DESCRIBED:
        return skill_names(skills)
    lines = "\n".join(
        f"- {s.name}: read {s.path} first, then follow it. {first_sentence(s.description, 100)}" for s in skills
    )
    return f"Skills (instructions for special tasks):\n{lines}"


def build_small_system_prompt(
    skills: Sequence[PromptEntry] = (),
    subagents: Sequence[PromptEntry] = (),
    extra_instructions: str = "",
    preview: str = "",
) -> str:
    """The ``small`` profile's prompt: folders, seven rules and four worked examples of tool use.

    A model of a few billion parameters follows examples better than descriptions, and reads
    the tools' own schemas anyway (they come with the request), so the tool list is left out.
    Skills are listed by name and path; sub-agent types only when delegation is possible.
    """
    parts = [SMALL_ROLE, SMALL_RULES, SMALL_EXAMPLES]
    if skills:
        parts.append(small_skill_list(skills))
    if subagents:
        lines = "\n".join(f"- {s.name}: {first_sentence(s.description, 100)}" for s in subagents)
        parts.append(
            "When the user asks for sub-agents or parallel work, use the task tool with one of these types "
            f"and give it everything it needs in its prompt:\n{lines}"
        )
    if preview:
        parts.append(preview)
    if extra_instructions.strip():
        parts.append(extra_instructions.strip())
    return "\n\n".join(parts)
