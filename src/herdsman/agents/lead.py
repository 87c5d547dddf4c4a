"""Build the lead agent: LangChain v1 ``create_agent`` with Herdsman's tools and middlewares.

The middleware order lives in :func:`build_middleware`, and only there; a test pins it.
Outermost first: the system prompt is set, then dangling tool calls are patched, then unusable
replies are re-asked, then failed model calls are retried (innermost, closest to the model).
Summarization (when enabled) rewrites old history before each model call; a tool-call limit
(when set) ends a run that calls too many tools. Tool errors are turned into results; the title
is set after the agent finishes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ModelRetryMiddleware,
    SummarizationMiddleware,
    ToolCallLimitMiddleware,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from herdsman.agents.prompt import PromptEntry, build_system_prompt, first_sentence
from herdsman.agents.state import ThreadState
from herdsman.config.schema import HerdsmanConfig
from herdsman.middleware.dangling_tool_calls import DanglingToolCallMiddleware
from herdsman.middleware.model_output_guard import ModelOutputGuardMiddleware
from herdsman.middleware.system_prompt import SystemPromptMiddleware
from herdsman.middleware.title import TitleMiddleware
from herdsman.middleware.tool_errors import tool_error_middleware
from herdsman.models.factory import create_chat_model
from herdsman.sandbox.base import SandboxProvider
from herdsman.sandbox.provider import build_sandbox_provider
from herdsman.sandbox.tools import make_sandbox_tools

LEAD_AGENT_NAME = "lead_agent"


def model_error_message(exc: Exception) -> str:
    """What the user sees when the model cannot be called even after retries."""
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return (
        f"Error: the model call failed ({type(exc).__name__}: {detail}). Check the model's "
        "base_url, api_key and network, then send the message again; the thread is kept."
    )


def summarization_middleware(config: HerdsmanConfig, model: BaseChatModel) -> SummarizationMiddleware:
    """LangChain's SummarizationMiddleware with the triggers from ``summarization:``."""
    s = config.summarization
    triggers: list = []
    if s.trigger_tokens:
        triggers.append(("tokens", s.trigger_tokens))
    if s.trigger_messages:
        triggers.append(("messages", s.trigger_messages))
    if s.trigger_fraction:
        triggers.append(("fraction", s.trigger_fraction))
    return SummarizationMiddleware(
        model, trigger=triggers or [("tokens", 60_000)], keep=("messages", s.keep_messages)
    )


def build_middleware(
    config: HerdsmanConfig,
    system_prompt: str,
    title_model: BaseChatModel | None = None,
    summary_model: BaseChatModel | None = None,
) -> list[AgentMiddleware]:
    """The lead's middlewares, in order (see the module docstring).

    ``summary_model`` is required when summarization is enabled (the lead's model by default).
    """
    middleware: list[AgentMiddleware] = []
    if config.summarization.enabled:
        if summary_model is None:
            raise ValueError("summarization is enabled: pass the model that writes summaries")
        middleware.append(summarization_middleware(config, summary_model))
    middleware += [
        SystemPromptMiddleware(system_prompt),
        DanglingToolCallMiddleware(),
        ModelOutputGuardMiddleware(max_retries=config.lead.unusable_reply_retries),
    ]
    if config.lead.model_retries:
        middleware.append(
            ModelRetryMiddleware(
                max_retries=config.lead.model_retries,
                initial_delay=config.lead.retry_initial_delay,
                on_failure=model_error_message,
            )
        )
    if config.tools.max_tool_calls_per_run:
        middleware.append(ToolCallLimitMiddleware(run_limit=config.tools.max_tool_calls_per_run, exit_behavior="continue"))
    middleware.append(tool_error_middleware())
    if config.title.enabled:
        middleware.append(TitleMiddleware(title_model, max_chars=config.title.max_chars))
    return middleware


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
) -> CompiledStateGraph:
    """The compiled lead agent graph.

    ``model`` overrides the configured one (tests pass a scripted model); ``model_name``
    picks another configured model. The sandbox provider is built from config when not given.
    """
    model = model or create_chat_model(config, model_name)
    provider = sandbox_provider or build_sandbox_provider(config)
    disabled = set(config.tools.disabled)
    tools = [t for t in [*make_sandbox_tools(provider, config.sandbox), *extra_tools] if t.name not in disabled]
    prompt = build_system_prompt(tool_entries(tools), extra_instructions=config.lead.extra_instructions)
    title_model = create_chat_model(config, config.title.model) if config.title.model else None
    summary_model = None
    if config.summarization.enabled:
        summary_model = create_chat_model(config, config.summarization.model) if config.summarization.model else model
    return create_agent(
        model,
        tools=tools,
        middleware=build_middleware(config, prompt, title_model, summary_model),
        state_schema=ThreadState,
        checkpointer=checkpointer,
        store=store,
        name=LEAD_AGENT_NAME,
    )


def run_config(config: HerdsmanConfig, thread_id: str, **configurable: Any) -> dict[str, Any]:
    """The LangGraph run config for one run of the lead on ``thread_id``."""
    return {
        "configurable": {"thread_id": thread_id, **configurable},
        "recursion_limit": config.lead.max_steps * 2 + 10,
    }
