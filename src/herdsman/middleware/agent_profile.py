"""Make the lead act as the custom agent a run is on: its instructions, tools, skills, sub-agents.

The lead is built once; a custom agent (an assistant) is a set of ``configurable`` keys on each
of its runs (see :mod:`herdsman.agents.profile`). This middleware reads them on every model call:

- ``instructions`` are added to the system prompt in an ``<agent_instructions>`` section;
- ``tools`` narrows the tools the model is offered, and a call to any other tool is refused;
- ``skills`` and ``subagent_types`` narrow the prompt's skill and sub-agent lists; an empty
  ``subagent_types`` takes the delegation tools away (the sub-agent runner refuses other types).

A run without these keys is the plain lead: nothing changes. The prompt's ``<tools>``,
``<skills>`` and ``<subagents>`` sections are narrowed by entry (one ``- name`` line each, see
:func:`herdsman.agents.prompt.build_system_prompt`); the small profile's prompt has no such
sections, so there only the tools are narrowed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import SystemMessage, ToolMessage
from langgraph.config import get_config
from langgraph.prebuilt.tool_node import ToolCallRequest

from herdsman.middleware.rewrite import RequestRewriteMiddleware
from herdsman.middleware.tool_gate import ToolGateMiddleware
from herdsman.turns.turn import tool_name

INSTRUCTIONS = "instructions"
SKILLS = "skills"
TOOLS = "tools"
SUBAGENT_TYPES = "subagent_types"
MAX_STEPS = "max_steps"
DELEGATION = frozenset({"task", "run_plan"})
_SECTION = r"<{tag}>\n(.*?)\n</{tag}>"


def run_settings() -> dict[str, Any]:
    """The current run's ``configurable`` (empty outside a run)."""
    try:
        return dict(get_config().get("configurable") or {})
    except RuntimeError:
        return {}


def allowed(settings: dict[str, Any], key: str) -> set[str] | None:
    """The allow-list under ``key`` (None: no list, everything is allowed)."""
    value = settings.get(key)
    return {str(v) for v in value} if isinstance(value, list) else None


def tool_allowed(settings: dict[str, Any], name: str) -> bool:
    """Whether a run with these settings may use the tool ``name``: it is in ``tools`` (when
    given), and it is not a delegation tool when ``subagent_types`` is empty."""
    tools = allowed(settings, TOOLS)
    if tools is not None and name not in tools:
        return False
    return not (name in DELEGATION and allowed(settings, SUBAGENT_TYPES) == set())


def narrow_section(prompt: str, tag: str, keep: Callable[[str], bool]) -> str:
    """``prompt`` with the ``<tag>`` section's entries whose name ``keep`` refuses left out (the section too
    when none is left)."""
    match = re.search(_SECTION.format(tag=tag), prompt, re.DOTALL)
    if match is None:
        return prompt
    intro, entries = [], []
    for line in match.group(1).split("\n"):
        if line.startswith("- "):
            entries.append([line])
        elif entries:
            entries[-1].append(line)
        else:
            intro.append(line)
    kept = [e for e in entries if keep(re.split(r"[ :(]", e[0][2:], maxsplit=1)[0])]
    if not kept:
        return (prompt[: match.start()].rstrip("\n") + "\n\n" + prompt[match.end() :].lstrip("\n")).strip("\n")
    body = "\n".join([*intro, *("\n".join(e) for e in kept)])
    return prompt[: match.start()] + f"<{tag}>\n{body}\n</{tag}>" + prompt[match.end() :]


def agent_prompt(prompt: str, settings: dict[str, Any]) -> str:
    """The system prompt for a run with these settings."""
    prompt = narrow_section(prompt, "tools", lambda name: tool_allowed(settings, name))
    for tag, key in (("skills", SKILLS), ("subagents", SUBAGENT_TYPES)):
        names = allowed(settings, key)
        if names is not None:
            prompt = narrow_section(prompt, tag, names.__contains__)
    text = settings.get(INSTRUCTIONS)
    if isinstance(text, str) and text.strip():
        prompt = f"{prompt}\n\n<agent_instructions>\n{text.strip()}\n</agent_instructions>"
    return prompt


def refusal(name: str, call_id: str) -> ToolMessage:
    """The result of a call to a tool the agent may not use."""
    return ToolMessage(
        content=f"Error: this agent may not use the tool {name!r}; use one of its tools instead.",
        tool_call_id=call_id,
        name=name,
        status="error",
    )


class AgentProfileMiddleware(RequestRewriteMiddleware, ToolGateMiddleware):
    """Apply a custom agent's instructions and allow-lists to each model call and tool call."""

    def rewrite(self, request: ModelRequest) -> ModelRequest:
        """The request as the run's custom agent sends it (unchanged for the plain lead)."""
        settings = run_settings()
        if not any(k in settings for k in (INSTRUCTIONS, SKILLS, TOOLS, SUBAGENT_TYPES)):
            return request
        changes: dict[str, Any] = {}
        base = request.system_message.text if request.system_message is not None else ""
        prompt = agent_prompt(base, settings)
        if prompt != base:
            changes["system_message"] = SystemMessage(content=prompt)
        tools = [t for t in request.tools if tool_allowed(settings, tool_name(t))]
        if len(tools) < len(request.tools):
            changes["tools"] = tools
        return request.override(**changes) if changes else request

    def refuse(self, request: ToolCallRequest) -> ToolMessage | None:
        """A refusal for a tool the agent may not use."""
        name = request.tool_call.get("name", "")
        if tool_allowed(run_settings(), name):
            return None
        return refusal(name, request.tool_call.get("id") or "")
