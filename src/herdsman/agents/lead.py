"""Build the lead agent: LangChain v1 ``create_agent`` with Herdsman's tools and middlewares.

The middlewares, and their order, come from :func:`herdsman.agents.stack.build_middleware`, the
one function that builds the lead's stack and its sub-agents' (see that module for the order).

The run's scope (the sub-agents' concurrency gate, per-run cap and the shared token budget) is no
middleware: it travels in the run's runtime context (``context_schema`` :class:`RunContext`), and
the compiled graph is a :class:`~herdsman.agents.lead_graph.LeadGraph`, which gives an invocation
that brings no scope a fresh one (see :mod:`herdsman.turns.run_scope`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from herdsman.agents import trace_hops
from herdsman.agents.lead_graph import LeadGraph
from herdsman.agents.prompt import PromptEntry, build_small_system_prompt, build_system_prompt
from herdsman.agents.stack import build_middleware
from herdsman.agents.state import ThreadState
from herdsman.config.schema import HerdsmanConfig
from herdsman.logs import get_logger
from herdsman.memory.service import MemoryService
from herdsman.memory.tool import make_memory_tool
from herdsman.middleware.chain import compose
from herdsman.middleware.model_selection import ModelSelectionMiddleware
from herdsman.middleware.usage import UsageMiddleware
from herdsman.models.factory import create_chat_model
from herdsman.models.resolver import ModelResolver
from herdsman.prompting.parts import first_sentence, preview_note
from herdsman.sandbox.base import SandboxProvider
from herdsman.sandbox.provider import build_sandbox_provider
from herdsman.sandbox.tools import make_sandbox_tools
from herdsman.skills import SkillCatalog
from herdsman.skills.catalog import agent_skills
from herdsman.skills.command_env import SkillCommandEnv
from herdsman.skills.secrets import SkillSecrets
from herdsman.subagents.executor import SubagentRunner, TranscriptKeeper
from herdsman.subagents.tools import make_task_tools
from herdsman.tools import build_tools
from herdsman.tools.clarification import make_clarification_tool
from herdsman.turns.run_scope import RunContext

LEAD_AGENT_NAME = "lead_agent"

log = get_logger(__name__)


def skill_entries(catalog: SkillCatalog) -> list[PromptEntry]:
    """The prompt's skill index: name, description and SKILL.md path under /mnt/skills."""
    return [PromptEntry(s.name, s.description, s.virtual_path) for s in catalog.sorted()]


def tool_entries(tools: Sequence[BaseTool]) -> list[PromptEntry]:
    """Short prompt entries for the tools (the full schema goes to the model separately)."""
    return [PromptEntry(t.name, first_sentence(t.description or "")) for t in tools]


def create_lead_agent(
    config: HerdsmanConfig,
    *,
    model: BaseChatModel | None = None,
    model_name: str | None = None,
    checkpointer: Checkpointer | None = None,
    sandbox_provider: SandboxProvider | None = None,
    extra_tools: Sequence[BaseTool] = (),
    store: Any = None,
    model_overrides: Mapping[str, BaseChatModel] | None = None,
    memory: MemoryService | None = None,
    resolver: ModelResolver | None = None,
    keep_transcript: TranscriptKeeper | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The compiled lead agent graph.

    ``model`` overrides the configured one (tests pass a scripted model); ``model_name``
    picks another configured model; ``model_overrides`` maps configured model names to
    instances (for sub-agent models in tests). The sandbox provider is built from config when
    not given; so is long-term memory (``memory``) when ``memory.enabled``. ``resolver`` (from
    :func:`lead_resolver`) shares built models with a caller that opened ``memory`` itself.
    """
    trace_hops.install()  # LangSmith's per-hook thread round trips, only while tracing
    lead_name, own_resolver = lead_resolver(config, model, model_name, model_overrides)
    resolver = resolver or own_resolver
    model = resolver.get(lead_name)
    provider = sandbox_provider or build_sandbox_provider(config)
    disabled = set(config.tools.disabled)
    secrets = (
        SkillCommandEnv(SkillSecrets.of(config)) if config.skills.enabled else None
    )  # a skill's secrets to its commands
    tools = [
        t for t in [*make_sandbox_tools(provider, config.sandbox, secrets), *extra_tools] if t.name not in disabled
    ]
    tools += build_tools(config, provider, lead_name, taken=[t.name for t in tools])  # web, images, MCP
    if memory is None and config.memory.enabled:
        memory = open_memory(config, resolver, lead_name, store)
    subagent_entries: list[PromptEntry] = []
    if config.subagents.enabled:
        # Sub-agents get the tools built so far: never the memory tool (they read memory, never write it).
        runner = delegation_runner(config, resolver, tools, lead_name, memory, provider, keep_transcript)
        tools += [t for t in make_task_tools(runner) if t.name not in disabled]
        subagent_entries = [PromptEntry(t.name, t.description) for t in runner.types.values()]
    if memory is not None and "memory" not in disabled:  # read-only in mode auto: the memory model writes
        tools.append(make_memory_tool(memory, writable=config.memory.mode in ("tool", "both")))
    if "ask_clarification" not in disabled:
        tools.append(make_clarification_tool())  # lead only: sub-agents cannot ask the user
    catalog = agent_skills(config)  # config.yaml + switches + the local user's secrets
    profile = config.model_profile(lead_name)
    preview = ""
    if getattr(provider, "serves_background", False) and any(t.name == "bash" for t in tools):
        preview = preview_note(config.sandbox.preview.ports)
    if profile == "small":
        prompt = build_small_system_prompt(
            skill_entries(catalog), subagent_entries, config.lead.extra_instructions, preview=preview
        )
    else:
        prompt = build_system_prompt(
            tool_entries(tools),
            skills=skill_entries(catalog),
            subagents=subagent_entries,
            extra_instructions=config.lead.extra_instructions,
            preview=preview,
        )
    title_model = create_chat_model(config, config.title.model) if config.title.model else None
    summary_model = None
    if config.summarization.enabled:
        summary_model = create_chat_model(config, config.summarization.model) if config.summarization.model else model
    graph = create_agent(  # type: ignore[misc]  # middlewares typed for any context: it cannot tie them to RunContext
        model,
        tools=tools,
        middleware=compose(
            build_middleware(
                config,
                prompt,
                title_model,
                summary_model,
                skills=catalog,
                sandbox_provider=provider,
                memory=memory,
                usage=UsageMiddleware(
                    config.subagents, "lead", lead_name, resolver.pricing(lead_name), pricing_of=resolver.pricing
                ),
                model_selection=ModelSelectionMiddleware(resolver, lead_name),
                tool_names=[t.name for t in tools],
                verifier_model=resolver.get(config.lead.verifier_model) if config.lead.verifier_model else None,
                profile=profile,
            )
        ),
        state_schema=ThreadState,
        context_schema=RunContext,
        checkpointer=checkpointer,
        store=store,
        name=LEAD_AGENT_NAME,
    )
    return LeadGraph.of(graph, config.subagents)


def lead_resolver(
    config: HerdsmanConfig,
    model: BaseChatModel | None = None,
    model_name: str | None = None,
    model_overrides: Mapping[str, BaseChatModel] | None = None,
) -> tuple[str, ModelResolver]:
    """The lead's model name, and the resolver an agent builds its models with (``model``, when
    given, stands in for the lead's; ``model_overrides`` for others by name)."""
    lead_name = model_name or config.lead_model_name()
    overrides = dict(model_overrides or {})
    if model is not None:
        overrides[lead_name] = model
    return lead_name, ModelResolver(config, overrides)


def open_memory(config: HerdsmanConfig, resolver: ModelResolver, lead_name: str, store: Any) -> MemoryService | None:
    """The lead's long-term memory (``store`` when given, else the configured one); None when it
    cannot be opened (logged: the agent runs without memory rather than not at all)."""
    memory_model = resolver.get(config.memory.model or lead_name) if config.memory.mode != "tool" else None
    try:
        return MemoryService.open(config, memory_model, store=store)
    except Exception as exc:  # noqa: BLE001 - a store that is down must not stop the agent
        log.warning("memory_unavailable", error=str(exc))
        return None


def delegation_runner(
    config: HerdsmanConfig,
    resolver: ModelResolver,
    tools: Sequence[BaseTool],
    lead_name: str,
    memory: MemoryService | None = None,
    provider: SandboxProvider | None = None,
    keep_transcript: TranscriptKeeper | None = None,
) -> SubagentRunner:
    """The lead's sub-agent runner; sub-agents get delegation tools of their own only while
    their depth is below ``subagents.max_depth``, the thread's files (``provider``) for read
    before write and the completion check, and ``keep_transcript`` to keep what each did. Their
    middlewares are the lead's for role ``subagent`` (:func:`~herdsman.agents.stack.build_middleware`)."""
    stack = partial(build_middleware, config, role="subagent", sandbox_provider=provider, memory=memory)
    runners = [
        SubagentRunner(
            config, resolver, tools, lead_name, stack, depth=d, provider=provider, keep_transcript=keep_transcript
        )
        for d in range(1, config.subagents.max_depth + 1)
    ]
    for parent, child in zip(runners, runners[1:], strict=False):
        parent.extra_tools = make_task_tools(child)
    return runners[0]


def run_config(config: HerdsmanConfig, thread_id: str, **configurable: Any) -> dict[str, Any]:
    """The LangGraph run config for one run of the lead on ``thread_id``."""
    return {
        "configurable": {"thread_id": thread_id, **configurable},
        "recursion_limit": recursion_limit(config.lead.max_steps),
    }


def recursion_limit(max_steps: int) -> int:
    """LangGraph's recursion limit for a run of at most ``max_steps`` model calls: a safety net
    only, StepLimitMiddleware ends the run first with an answer that says why (a model call takes
    several graph steps: its middleware hooks, the model, then the tools)."""
    return max_steps * 10 + 50
