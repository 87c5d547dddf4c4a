"""Sub-agent types: the built-in ``general-purpose`` and ``bash``, plus custom ones from config.

A type says what a sub-agent is for (the description the lead sees), how it is prompted, which
tools it gets (an allowlist; never the delegation or clarification tools unless nesting is
allowed), which model it uses, and its turn and time limits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.tools import BaseTool

from herdsman.config.schema import HerdsmanConfig

DELEGATION_TOOLS = frozenset({"task", "run_plan"})
# Sub-agents never ask the user, and read long-term memory without writing it.
LEAD_ONLY_TOOLS = frozenset({"ask_clarification", "memory"})
SHELL_AND_FILE_TOOLS = ("bash", "ls", "read_file", "write_file", "str_replace", "glob", "grep")


@dataclass(frozen=True)
class SubagentType:
    """One kind of sub-agent."""

    name: str
    description: str
    system_prompt: str
    tools: tuple[str, ...] | None = None  # None: every tool but the excluded ones
    model: str | None = None
    max_turns: int | None = None
    timeout_seconds: float | None = None
    skills: tuple[str, ...] = ()


GENERAL_PURPOSE = SubagentType(
    name="general-purpose",
    description=(
        "A capable agent for research, analysis, writing and multi-step work; has every tool "
        "of the lead except delegation."
    ),
    system_prompt="You are a sub-agent working on one part of a larger task. Do that part well.",
)

BASH = SubagentType(
    name="bash",
    description="Runs shell commands and edits files: builds, tests, scripts, data wrangling.",
    system_prompt=(
        "You are a sub-agent that works in a shell. Run commands, inspect their output, and fix "
        "problems until the part you were given is done."
    ),
    tools=SHELL_AND_FILE_TOOLS,
)

BUILTIN_TYPES = (GENERAL_PURPOSE, BASH)


def subagent_types(config: HerdsmanConfig) -> dict[str, SubagentType]:
    """Every available type by name; a custom type with a built-in's name replaces it."""
    types = {t.name: t for t in BUILTIN_TYPES}
    for custom in config.subagents.types:
        types[custom.name] = SubagentType(
            name=custom.name,
            description=custom.description,
            system_prompt=custom.system_prompt or GENERAL_PURPOSE.system_prompt,
            tools=tuple(custom.tools) if custom.tools is not None else None,
            model=custom.model,
            max_turns=custom.max_turns,
            timeout_seconds=custom.timeout_seconds,
            skills=tuple(custom.skills),
        )
    return types


def select_tools(spec: SubagentType, tools: Sequence[BaseTool], allow_delegation: bool) -> list[BaseTool]:
    """The tools a sub-agent of ``spec`` gets from ``tools``."""
    excluded = set(LEAD_ONLY_TOOLS) | (set() if allow_delegation else set(DELEGATION_TOOLS))
    chosen = [t for t in tools if t.name not in excluded]
    if spec.tools is not None:
        allowed = set(spec.tools) | (set(DELEGATION_TOOLS) if allow_delegation else set())
        chosen = [t for t in chosen if t.name in allowed]
    return chosen
