"""The system prompt of a sub-agent: its type's instructions, the sandbox folders, its tools."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.tools import BaseTool

from herdsman.prompting.parts import FILES, SMALL_EXAMPLES, SMALL_FOLDERS, SMALL_RULES, STYLE, first_sentence
from herdsman.subagents.types import SubagentType

REPORT = """\
<report>
You were given one part of a larger task by a lead agent. The lead sees only your final message:
make it a complete report of what you did, the results, and the paths of files you wrote.
You cannot ask the lead questions; make reasonable assumptions and say which.
Today is {date}.
</report>"""


SMALL_REPORT = """\
A lead agent gave you this part of a larger task and sees only your final message: say what you
did, the results (exact numbers, names) and the paths of files you wrote."""


def subagent_system_prompt(spec: SubagentType, tools: Sequence[BaseTool], small: bool = False) -> str:
    """The prompt for a sub-agent of type ``spec`` with ``tools``; ``small``: the ``small``
    model profile's short rules and worked examples instead of the tool list and style."""
    if small:
        role = f"{spec.system_prompt.strip()} Today is {{date}}.\n{SMALL_FOLDERS}"
        return "\n\n".join([role, SMALL_RULES, SMALL_EXAMPLES, SMALL_REPORT])
    tool_lines = "\n".join(f"- {t.name}: {first_sentence(t.description or '')}" for t in tools)
    parts = [f"<role>\n{spec.system_prompt.strip()}\n</role>", FILES]
    if tools:
        parts.append(f"<tools>\n{tool_lines}\n</tools>")
    parts += [STYLE, REPORT]
    return "\n\n".join(parts)
