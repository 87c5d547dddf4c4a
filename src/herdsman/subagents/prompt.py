"""The system prompt of a sub-agent: its type's instructions, the sandbox folders, its tools."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.tools import BaseTool

from herdsman.middleware.prompt_parts import FILES, STYLE, first_sentence
from herdsman.subagents.types import SubagentType

REPORT = """\
<report>
You were given one part of a larger task by a lead agent. The lead sees only your final message:
make it a complete report of what you did, the results, and the paths of files you wrote.
You cannot ask the lead questions; make reasonable assumptions and say which.
Today is {date}.
</report>"""


def subagent_system_prompt(spec: SubagentType, tools: Sequence[BaseTool]) -> str:
    """The prompt for a sub-agent of type ``spec`` with ``tools``."""
    tool_lines = "\n".join(f"- {t.name}: {first_sentence(t.description or '')}" for t in tools)
    parts = [f"<role>\n{spec.system_prompt.strip()}\n</role>", FILES]
    if tools:
        parts.append(f"<tools>\n{tool_lines}\n</tools>")
    parts += [STYLE, REPORT]
    return "\n\n".join(parts)
