"""Build the lead agent: LangChain v1 ``create_agent`` with Herdsman's tools and middlewares.

The middleware order lives in :func:`build_middleware`, and only there; a test pins it.
:func:`herdsman.middleware.chain.compose` then folds runs of wrapper-only middlewares into one
layer each (same behaviour, less per-step cost).
Outermost first (each only when its setting turns it on):

- summarization (``summarization.enabled``) rewrites old history before each model call;
- the step limit (``lead.max_steps`` or the agent's: the run ends with an answer that says so),
  outside the other model-call wrappers, so its reply is not checked or re-asked as a model's;
- the system prompt; the custom agent the run is on, if any (its instructions and narrowed
  tools, ``middleware/agent_profile.py``); the model the run picked (``configurable.model_name``);
- the line asking for the answer in the request's language (``lead.answer_language``); the
  uploads notice (``context.announce_uploads``); long-term memory (``memory.enabled``);
- the completion check (``lead.verify_rounds``); the value answer (``lead.value_answers``: a
  question's final answer becomes the value a tool printed, inside the check so the check sees
  the value); skill activation (``/name``: instructions,
  narrowed tools); the todo list (``context.todos``); loop detection;
- the ``small`` profile's tool selection, answer nudge and one call at a time (inside loop
  detection, which must see the thread rather than the nudged view);
- the plan/act loop (``lead.plan_act``; auto: the ``small`` profile) inside them, so they see
  the thread without its plan view, and its check of the steps runs before the completion check;
- dangling tool calls patched; unusable replies re-asked; failed model calls retried
  (``lead.model_retries``); usage and cost; at most ``tools.max_parallel_calls`` calls of one
  reply at once; human approval (``tools.require_approval``);
- the tool-call limit (``tools.max_tool_calls_per_run``); read before write; long tool results
  saved to a file and previewed; tool errors turned into results;
- the title, after the agent finishes; the turn queued for the memory model (mode auto).

The run's scope (the sub-agents' concurrency gate, per-run cap and the shared token budget) is no
middleware: it travels in the run's runtime context (``context_schema`` :class:`RunContext`), and
the compiled graph is a :class:`~herdsman.agents.lead_graph.LeadGraph`, which gives an invocation
that brings no scope a fresh one (see :mod:`herdsman.middleware.run_scope`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import structlog
from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    HumanInTheLoopMiddleware,
    TodoListMiddleware,
    ToolCallLimitMiddleware,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from herdsman.agents import trace_hops
from herdsman.agents.lead_graph import LeadGraph
from herdsman.agents.model_failure import ModelFailureRetry
from herdsman.agents.prompt import PromptEntry, build_small_system_prompt, build_system_prompt, first_sentence
from herdsman.agents.state import ThreadState
from herdsman.config.schema import HerdsmanConfig
from herdsman.memory.service import MemoryService
from herdsman.memory.tool import make_memory_tool
from herdsman.middleware.agent_profile import AgentProfileMiddleware
from herdsman.middleware.prompt_parts import preview_note
from herdsman.middleware.answer_nudge import AnswerNudgeMiddleware
from herdsman.middleware.approved_command import ApprovedCommandMiddleware
from herdsman.middleware.chain import compose
from herdsman.middleware.completion_check import CompletionCheckMiddleware, intent_languages
from herdsman.middleware.shown_code import runs_shown_code
from herdsman.middleware.dangling_tool_calls import DanglingToolCallMiddleware
from herdsman.middleware.context.loop_detection import LoopDetectionMiddleware
from herdsman.middleware.context.memory_injection import MemoryInjectionMiddleware
from herdsman.middleware.context.summarization import summarization_middleware
from herdsman.middleware.memory_queue import MemoryQueueMiddleware
from herdsman.middleware.model_output_guard import ModelOutputGuardMiddleware
from herdsman.middleware.model_selection import ModelSelectionMiddleware
from herdsman.middleware.parallel_calls import ParallelCallsMiddleware
from herdsman.middleware.plan_act import PlanActMiddleware
from herdsman.middleware.value_answer import ValueAnswerMiddleware
from herdsman.middleware.read_before_write import ReadBeforeWriteMiddleware
from herdsman.middleware.reply_language import ReplyLanguageMiddleware
from herdsman.middleware.context.uploads_notice import UploadsNoticeMiddleware
from herdsman.middleware.skill_activation import SkillActivationMiddleware
from herdsman.middleware.sequential_calls import SequentialCallsMiddleware
from herdsman.middleware.strict_tools import StrictToolsMiddleware
from herdsman.middleware.system_prompt import SystemPromptMiddleware
from herdsman.middleware.title import TitleMiddleware
from herdsman.middleware.tool_selection import ToolSelectionMiddleware
from herdsman.middleware.tool_errors import tool_error_middleware
from herdsman.middleware.step_limit import StepLimitMiddleware
from herdsman.middleware.context.tool_output_offload import ToolOutputOffloadMiddleware
from herdsman.middleware.usage import UsageMiddleware
from herdsman.models.factory import create_chat_model
from herdsman.models.resolver import ModelResolver
from herdsman.sandbox.base import SandboxProvider
from herdsman.sandbox.provider import build_sandbox_provider
from herdsman.sandbox.tools import make_sandbox_tools
from herdsman.tools.clarification import make_clarification_tool
from herdsman.subagents.executor import SubagentRunner, TranscriptKeeper
from herdsman.middleware.run_scope import RunContext
from herdsman.subagents.tools import make_task_tools
from herdsman.tools import build_tools
from herdsman.skills import SkillCatalog
from herdsman.skills.catalog import agent_skills
from herdsman.skills.command_env import SkillCommandEnv
from herdsman.skills.secrets import SkillSecrets

LEAD_AGENT_NAME = "lead_agent"

log = structlog.get_logger(__name__)


def build_middleware(
    config: HerdsmanConfig,
    system_prompt: str,
    title_model: BaseChatModel | None = None,
    summary_model: BaseChatModel | None = None,
    skills: SkillCatalog | None = None,
    usage: UsageMiddleware | None = None,
    sandbox_provider: SandboxProvider | None = None,
    memory: MemoryService | None = None,
    model_selection: ModelSelectionMiddleware | None = None,
    tool_names: Sequence[str] = (),
    verifier_model: BaseChatModel | None = None,
    profile: str = "standard",
) -> list[AgentMiddleware]:
    """The lead's middlewares, in order (see the module docstring).

    ``summary_model`` is required when summarization is enabled (the lead's model by default).
    ``skills`` holds the skills that ``/name`` can activate. ``usage`` counts tokens and
    cost (a default one, without pricing, when not given). ``sandbox_provider`` is where long
    tool results are saved (without it they are only cut to a preview). ``memory`` is the
    long-term memory injected into the prompt and updated after each turn (when enabled).
    ``model_selection`` lets a run pick the model (``configurable.model_name``).
    ``tool_names`` and ``verifier_model`` serve the completion check (``lead.verify_rounds``).
    ``profile`` ``small`` narrows the tools per request and nudges answers to questions (and,
    with ``lead.plan_act`` auto, keeps the plan of a multi-step request).
    """
    middleware: list[AgentMiddleware] = []
    if config.summarization.enabled:
        if summary_model is None:
            raise ValueError("summarization is enabled: pass the model that writes summaries")
        middleware.append(summarization_middleware(config, summary_model))
    middleware += [
        StepLimitMiddleware(config.lead.max_steps),  # outside every model-call wrapper: see step_limit.py
        SystemPromptMiddleware(system_prompt),
        AgentProfileMiddleware(),
    ]
    if model_selection is not None:
        middleware.append(model_selection)
    if config.lead.answer_language:  # outside the uploads notice: it reads what the user wrote
        middleware.append(ReplyLanguageMiddleware())
    if config.context.announce_uploads and sandbox_provider is not None:
        middleware.append(UploadsNoticeMiddleware(sandbox_provider))
    if memory is not None and config.memory.enabled:
        middleware.append(MemoryInjectionMiddleware(memory))
    known = (skills or SkillCatalog(root=None)) if config.skills.enabled else None
    if config.lead.verify_rounds:
        middleware.append(CompletionCheckMiddleware(
            sandbox_provider, config.lead.verify_rounds, verifier_model, tool_names, known.skills if known else None,
            intent_languages(config.lead.intent_rules, profile == "small"),
            runs_shown_code(config.lead.run_shown_code, profile == "small", config.tools.require_approval),
            config.tools.max_tool_calls_per_run,
            answer_language=config.lead.answer_language,
        ))
    if config.lead.value_answers == "on" or (config.lead.value_answers == "auto" and profile == "small"):
        middleware.append(ValueAnswerMiddleware())
    if known is not None:
        middleware.append(SkillActivationMiddleware(known.skills, known.reasons(), config.skills.auto_select))
    if config.context.todos:
        middleware.append(TodoListMiddleware())
    if config.context.loop_warn_after or config.context.loop_stop_after:
        middleware.append(LoopDetectionMiddleware(config.context.loop_warn_after, config.context.loop_stop_after))
    if profile == "small":  # inside loop detection: it must see the thread, not the nudged view
        middleware += [ToolSelectionMiddleware(), AnswerNudgeMiddleware(), SequentialCallsMiddleware()]
    if config.lead.plan_act == "on" or (config.lead.plan_act == "auto" and profile == "small"):
        middleware.append(PlanActMiddleware(sandbox_provider))  # last rewriter: its after_model runs first
    middleware += [
        DanglingToolCallMiddleware(),
        ModelOutputGuardMiddleware(max_retries=config.lead.unusable_reply_retries),
    ]
    if config.lead.model_retries:
        middleware.append(
            ModelFailureRetry(max_retries=config.lead.model_retries, initial_delay=config.lead.retry_initial_delay)
        )
    middleware.append(usage or UsageMiddleware(config.subagents))
    middleware.append(StrictToolsMiddleware())  # inside the tool narrowing; its null-dropping outside the tool gates
    middleware.append(ParallelCallsMiddleware(config.tools.max_parallel_calls))
    if config.tools.require_approval:
        decisions = {"allowed_decisions": ["approve", "edit", "reject"]}
        middleware.append(HumanInTheLoopMiddleware({name: decisions for name in config.tools.require_approval}))
        if "bash" in config.tools.require_approval:  # after it: its after_model runs first
            middleware.append(ApprovedCommandMiddleware())
    if config.tools.max_tool_calls_per_run:
        middleware.append(ToolCallLimitMiddleware(run_limit=config.tools.max_tool_calls_per_run, exit_behavior="continue"))
    if config.tools.read_before_write and sandbox_provider is not None:
        middleware.append(ReadBeforeWriteMiddleware(sandbox_provider))
    if config.context.offload_tool_output_chars:
        middleware.append(
            ToolOutputOffloadMiddleware(
                sandbox_provider,
                config.context.offload_tool_output_chars,
                head=config.context.preview_head_chars,
                tail=config.context.preview_tail_chars,
            )
        )
    middleware.append(tool_error_middleware())
    if config.title.enabled:
        middleware.append(TitleMiddleware(title_model, max_chars=config.title.max_chars))
    if memory is not None and config.memory.enabled and config.memory.mode in ("auto", "both"):
        middleware.append(MemoryQueueMiddleware(memory))
    return middleware


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
) -> CompiledStateGraph:
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
    secrets = SkillCommandEnv(SkillSecrets.of(config)) if config.skills.enabled else None  # a skill's secrets to its commands
    tools = [t for t in [*make_sandbox_tools(provider, config.sandbox, secrets), *extra_tools] if t.name not in disabled]
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
    graph = create_agent(
        model,
        tools=tools,
        middleware=compose(build_middleware(
            config,
            prompt,
            title_model,
            summary_model,
            skills=catalog,
            sandbox_provider=provider,
            memory=memory,
            usage=UsageMiddleware(config.subagents, "lead", lead_name, resolver.pricing(lead_name), pricing_of=resolver.pricing),
            model_selection=ModelSelectionMiddleware(resolver, lead_name),
            tool_names=[t.name for t in tools],
            verifier_model=resolver.get(config.lead.verifier_model) if config.lead.verifier_model else None,
            profile=profile,
        )),
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
    before write and the completion check, and ``keep_transcript`` to keep what each did."""
    runners = [
        SubagentRunner(config, resolver, tools, lead_name, depth=d, memory=memory, provider=provider,
                       keep_transcript=keep_transcript)
        for d in range(1, config.subagents.max_depth + 1)
    ]
    for parent, child in zip(runners, runners[1:]):
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
