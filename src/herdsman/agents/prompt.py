"""The lead agent's system prompt: role, tools, skills, sub-agents, response style, date.

Pure functions of their inputs, so the prompt can be read and tested on its own. ``{date}``
stays a placeholder; :class:`herdsman.middleware.system_prompt.SystemPromptMiddleware` fills it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from herdsman.sandbox.base import OUTPUTS, SKILLS_ROOT, UPLOADS, WORKSPACE


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

FILES = f"""\
<files>
You work in a sandbox with these folders (use these paths; there are no others):
- {WORKSPACE}: your working folder (the shell starts here)
- {UPLOADS}: files the user uploaded
- {OUTPUTS}: put deliverables here; the user receives every file in it
</files>"""

STYLE = """\
<response_style>
- Use a tool only when it helps; when a tool result already holds the answer, answer in plain
  text and do not call the tool again.
- Be concise. Name the files you wrote by their paths.
- If something fails, read the error, fix the cause and try again; say so if you cannot.
</response_style>"""


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
) -> str:
    """The lead's system prompt; sections for skills and sub-agents appear only when there are any."""
    parts = [ROLE, FILES]
    if tools:
        parts.append(_section("tools", "Your tools:", tools))
    if skills:
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
    parts.append(STYLE)
    if extra_instructions.strip():
        parts.append(f"<instructions>\n{extra_instructions.strip()}\n</instructions>")
    return "\n\n".join(parts)


def first_sentence(text: str, limit: int = 160) -> str:
    """The first sentence of a tool description, for the prompt's short tool list."""
    text = " ".join(text.split())
    end = text.find(". ")
    sentence = text if end == -1 else text[: end + 1]
    return sentence if len(sentence) <= limit else sentence[: limit - 1] + "…"
