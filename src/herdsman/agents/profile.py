"""A custom agent's settings: the keys an assistant sets for the lead, and their checks.

An assistant (a custom agent) is the lead agent with settings of its own. They live in the
assistant's ``context``, which LangGraph's server mirrors into ``config.configurable``; a run on
the assistant gets them in ``configurable`` (the run's own values win), where the lead reads them:

- ``instructions``: text added to the lead's system prompt, as the agent's own role ("soul");
- ``model_name``: one of config's models (what ``ModelSelectionMiddleware`` already reads);
- ``skills``: the skills the prompt offers (an allow-list of skill names);
- ``tools``: the tools the model is offered and may call (an allow-list of tool names);
- ``subagent_types``: the sub-agent types the lead may delegate to (``[]``: no delegation);
- ``max_steps``: model calls per run before the run stops (``lead.max_steps`` otherwise).

Other keys are kept as they are (LangGraph lets an assistant hold any configuration).
:func:`check_profile` refuses a bad value of a known key, naming the key and the valid values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from herdsman.config.schema import HerdsmanConfig
from herdsman.middleware.agent_profile import INSTRUCTIONS, MAX_STEPS, SKILLS, SUBAGENT_TYPES, TOOLS
from herdsman.middleware.model_selection import CONFIG_KEY as MODEL
from herdsman.middleware.model_selection import model_names
from herdsman.skills.catalog import agent_skills
from herdsman.subagents.types import subagent_types

MAX_INSTRUCTIONS_CHARS = 20_000
MAX_STEPS_LIMIT = 10_000
PROFILE_KEYS = (INSTRUCTIONS, MODEL, SKILLS, TOOLS, SUBAGENT_TYPES, MAX_STEPS)


class ProfileError(ValueError):
    """A custom agent's setting is not valid: ``field`` (dotted) and why."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field


@dataclass(frozen=True)
class KnownNames:
    """What the settings may name: configured models, usable skills, the lead's tools and sub-agent types."""

    models: Sequence[str]
    skills: Sequence[str]
    tools: Sequence[str]
    subagent_types: Sequence[str]


def graph_tools(graph: Any) -> Mapping[str, Any]:
    """The tools of the lead agent ``graph`` by name (its ``tools`` node); empty when it has none."""
    tools = getattr(getattr(graph, "nodes", {}).get("tools"), "bound", None)
    return getattr(tools, "tools_by_name", None) or {}


def known_names(config: HerdsmanConfig, graph: Any) -> KnownNames:
    """The names valid for ``config`` and the lead agent ``graph`` (its ``tools`` node)."""
    skills = agent_skills(config) if config.skills.enabled else None
    return KnownNames(
        models=model_names(config),
        skills=sorted(skills.skills) if skills else [],
        tools=sorted(graph_tools(graph)),
        subagent_types=sorted(subagent_types(config)) if config.subagents.enabled else [],
    )


def local_known_names(config: HerdsmanConfig) -> KnownNames:
    """The names valid for ``config`` outside a gateway (the CLI): the lead is built once with a
    stand-in model, so no model is loaded, to learn its tools (MCP servers' included)."""
    from herdsman.agents.lead import create_lead_agent
    from herdsman.models.scripted import ScriptedChatModel

    return known_names(config, create_lead_agent(config, model=ScriptedChatModel(responses=[])))


def _names(field: str, value: Any, valid: Sequence[str], what: str) -> None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ProfileError(field, f"must be a list of {what} names, like {list(valid[:3])}")
    unknown = [v for v in value if v not in valid]
    if unknown:
        raise ProfileError(field, f"unknown {what} {unknown}; choose from: {', '.join(valid) or '(none configured)'}")


def check_profile(settings: Mapping[str, Any] | None, known: KnownNames, where: str = "context") -> None:
    """Raise :class:`ProfileError` for a known key of ``settings`` with a bad value."""
    settings = settings or {}
    if not isinstance(settings, Mapping):
        raise ProfileError(where, "must be a JSON object")
    text = settings.get(INSTRUCTIONS)
    if text is not None and (not isinstance(text, str) or len(text) > MAX_INSTRUCTIONS_CHARS):
        raise ProfileError(f"{where}.{INSTRUCTIONS}", f"must be text of at most {MAX_INSTRUCTIONS_CHARS} characters")
    model = settings.get(MODEL)
    if model is not None and model not in known.models:
        raise ProfileError(
            f"{where}.{MODEL}", f"model {model!r} is not configured; choose from: {', '.join(known.models)}"
        )
    for key, valid, what in (
        (SKILLS, known.skills, "skill"),
        (TOOLS, known.tools, "tool"),
        (SUBAGENT_TYPES, known.subagent_types, "sub-agent type"),
    ):
        if settings.get(key) is not None:
            _names(f"{where}.{key}", settings[key], valid, what)
    steps = settings.get(MAX_STEPS)
    if steps is not None and (
        isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_STEPS_LIMIT
    ):
        raise ProfileError(f"{where}.{MAX_STEPS}", f"must be a whole number from 1 to {MAX_STEPS_LIMIT}")
