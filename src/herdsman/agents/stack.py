"""The middleware stacks of the lead and of its sub-agents, built by one function so they cannot drift.

:func:`build_middleware` is the only place the order lives; a test pins it, and another that a
sub-agent's stack is the lead's without the parts in :data:`LEAD_ONLY`, in the same order.
:func:`herdsman.middleware.chain.compose` then folds runs of wrapper-only middlewares into one
layer each (same behaviour, less per-step cost). Outermost first (each only when its setting
turns it on; *lead only* marks what a sub-agent does not get):

- summarization (``summarization.enabled``) rewrites old history before each model call (*lead only*);
- the step limit (``lead.max_steps`` or the agent's: the run ends with an answer that says so; a
  sub-agent's is its type's ``max_turns``), outside the other model-call wrappers, so its reply is
  not checked or re-asked as a model's;
- the system prompt; the custom agent the run is on, if any (its instructions and narrowed
  tools, ``middleware/agent_profile.py``); the model the run picked (``configurable.model_name``)
  (both *lead only*);
- the line asking for the answer in the request's language (``lead.answer_language``); the
  uploads notice (``context.announce_uploads``) (both *lead only*); long-term memory (``memory.enabled``);
- the completion check (``lead.verify_rounds``; the lead's also has the verifier model, the
  skills' outputs, the tool-call limit and the answer language); the value answer
  (``lead.value_answers``: a question's final answer becomes the value a tool printed, inside the
  check so the check sees the value); the fresh answer (``lead.fresh_answers``: an answer the
  check sent back, repeated word for word, is asked again without the conversation, inside the
  value answer); the program answer (``lead.program_answers``: after a note that the answer's
  number is not backed, a program asked for without the conversation is run in the model's name);
  the file rewrite (``lead.file_rewrites``: after a note that a file the request names is not
  right yet, its whole new text asked for without the conversation is written in the model's name);
  the task program (``lead.task_programs``: after a note that a deliverable is missing, a program
  that does the request, asked for without the conversation, is run in the model's name); the
  answer translation (``lead.answer_translations``: after a note that only the answer's language
  is wrong, the answer is translated without the conversation);
  skill activation (``/name``: instructions, narrowed tools);
  the todo list (``context.todos``); loop detection (these four *lead only*);
- the ``small`` profile's tool selection, answer nudge and one call at a time (inside loop
  detection, which must see the thread rather than the nudged view);
- the plan/act loop (``lead.plan_act``; auto: the ``small`` profile) inside them, so they see
  the thread without its plan view, and its check of the steps runs before the completion check
  (*lead only*);
- dangling tool calls patched; unusable replies re-asked; failed model calls retried
  (``lead.model_retries``, *lead only*: a failed sub-agent is retried whole, ``subagents.retries``);
  usage and cost; at most ``tools.max_parallel_calls`` calls of one reply at once; human approval
  (``tools.require_approval``, *lead only*: a sub-agent has no one to ask, and is not given those tools);
- the tool-call limit (``tools.max_tool_calls_per_run``, *lead only*); read before write; long
  tool results saved to a file and previewed (*lead only*); tool errors turned into results;
- the title, after the agent finishes; the turn queued for the memory model (mode auto) (both *lead only*).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain.agents.middleware import (
    AgentMiddleware,
    HumanInTheLoopMiddleware,
    InterruptOnConfig,
    TodoListMiddleware,
    ToolCallLimitMiddleware,
)
from langchain_core.language_models import BaseChatModel

from herdsman.agents.model_failure import ModelFailureRetry
from herdsman.config.schema import HerdsmanConfig, switched_on
from herdsman.memory.service import MemoryService
from herdsman.middleware.agent_profile import AgentProfileMiddleware
from herdsman.middleware.answer_nudge import AnswerNudgeMiddleware
from herdsman.middleware.answer_translation import AnswerTranslationMiddleware
from herdsman.middleware.approved_command import ApprovedCommandMiddleware
from herdsman.middleware.completion.check import CompletionCheckMiddleware, intent_languages
from herdsman.middleware.completion.shown_code import runs_shown_code
from herdsman.middleware.context.loop_detection import LoopDetectionMiddleware
from herdsman.middleware.context.memory_injection import MemoryInjectionMiddleware
from herdsman.middleware.context.summarization import summarization_middleware
from herdsman.middleware.context.tool_output_offload import ToolOutputOffloadMiddleware
from herdsman.middleware.context.uploads_notice import UploadsNoticeMiddleware
from herdsman.middleware.dangling_tool_calls import DanglingToolCallMiddleware
from herdsman.middleware.file_rewrite import FileRewriteMiddleware
from herdsman.middleware.fresh_answer import FreshAnswerMiddleware
from herdsman.middleware.memory_queue import MemoryQueueMiddleware
from herdsman.middleware.model_output_guard import ModelOutputGuardMiddleware
from herdsman.middleware.model_selection import ModelSelectionMiddleware
from herdsman.middleware.parallel_calls import ParallelCallsMiddleware
from herdsman.middleware.plan_act import PlanActMiddleware
from herdsman.middleware.program_answer import ProgramAnswerMiddleware
from herdsman.middleware.read_before_write import ReadBeforeWriteMiddleware
from herdsman.middleware.reply_language import ReplyLanguageMiddleware
from herdsman.middleware.sequential_calls import SequentialCallsMiddleware
from herdsman.middleware.skill_activation import SkillActivationMiddleware
from herdsman.middleware.step_limit import StepLimitMiddleware
from herdsman.middleware.strict_tools import StrictToolsMiddleware
from herdsman.middleware.system_prompt import SystemPromptMiddleware
from herdsman.middleware.task_program import TaskProgramMiddleware
from herdsman.middleware.title import TitleMiddleware
from herdsman.middleware.tool_errors import tool_error_middleware
from herdsman.middleware.tool_selection import ToolSelectionMiddleware
from herdsman.middleware.usage import UsageMiddleware
from herdsman.middleware.value_answer import ValueAnswerMiddleware
from herdsman.sandbox.base import SandboxProvider
from herdsman.skills import SkillCatalog, resolve_skills_root
from herdsman.skills.own import OwnSkills
from herdsman.skills.secrets import SkillSecrets
from herdsman.skills.switches import disabled_skills

Role = Literal["lead", "subagent"]

LEAD_ONLY: dict[str, str] = {
    "SummarizationMiddleware": "a sub-agent's context is one task, never a long conversation",
    "AgentProfileMiddleware": "a custom agent shapes the lead; of its sub-agents it picks the types (subagent_types)",
    "ModelSelectionMiddleware": "a sub-agent's model is its type's (or subagents.model)",
    "ReplyLanguageMiddleware": "a sub-agent answers the lead, not the user",
    "UploadsNoticeMiddleware": "the lead's prompt names the files the sub-agent needs",
    "ValueAnswerMiddleware": "the user's question is the lead's",
    "FreshAnswerMiddleware": "the user's question is the lead's",
    "ProgramAnswerMiddleware": "the user's question is the lead's",
    "FileRewriteMiddleware": "the user's request is the lead's",
    "TaskProgramMiddleware": "the user's request is the lead's",
    "AnswerTranslationMiddleware": "a sub-agent answers the lead, not the user",
    "SkillActivationMiddleware": "/name is typed by the user, to the lead",
    "TodoListMiddleware": "the plan of the request is the lead's",
    "LoopDetectionMiddleware": "a sub-agent is bounded by its max_turns and timeout",
    "PlanActMiddleware": "the plan of the request is the lead's",
    "ModelFailureRetry": "a failed sub-agent is retried whole (subagents.retries)",
    "HumanInTheLoopMiddleware": "a sub-agent has no one to ask (it is not given those tools)",
    "ApprovedCommandMiddleware": "it goes with human approval",
    "ToolCallLimitMiddleware": "the run's limit counts the lead's calls; a sub-agent has max_turns",
    "ToolOutputOffloadMiddleware": "a sub-agent's context lasts one task; the lead sees only its answer",
    "TitleMiddleware": "the thread's title comes from the conversation with the user",
    "MemoryQueueMiddleware": "sub-agents read long-term memory, never write it",
}
"""The lead's middlewares (by class name) that a sub-agent does not get, and why."""


def max_turns_message(turns: int) -> str:
    """A sub-agent's last message when it used its ``max_turns`` model calls."""
    return f"stopped after {turns} turns (max_turns)"


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
    *,
    role: Role = "lead",
    max_steps: int | None = None,
) -> list[AgentMiddleware]:
    """The middlewares of the lead (``role`` ``lead``) or of a sub-agent (``subagent``: the same
    list without :data:`LEAD_ONLY`), in order (see the module docstring).

    ``summary_model`` is required when summarization is enabled (the lead's model by default).
    ``skills`` holds the skills that ``/name`` can activate. ``usage`` counts tokens and
    cost (a default one, without pricing, when not given). ``sandbox_provider`` holds the thread's
    files (read before write, the completion check; long tool results are saved there, else only
    cut to a preview). ``memory`` is the long-term memory injected into the prompt and, for the
    lead, updated after each turn (when enabled). ``model_selection`` lets a run pick the model
    (``configurable.model_name``). ``tool_names`` and ``verifier_model`` serve the completion check
    (``lead.verify_rounds``). ``profile`` ``small`` narrows the tools per request and nudges
    answers to questions (and, with ``lead.plan_act`` auto, keeps the plan of a multi-step
    request). ``max_steps``: model calls allowed (default ``lead.max_steps``; a sub-agent's
    ``max_turns``). The lead-only arguments (``title_model``, ``summary_model``, ``skills``,
    ``model_selection``, ``verifier_model``) are not used for a sub-agent.
    """
    lead = role == "lead"
    small = profile == "small"
    middleware: list[AgentMiddleware[Any, Any, Any]] = []
    if lead and config.summarization.enabled:
        if summary_model is None:
            raise ValueError("summarization is enabled: pass the model that writes summaries")
        middleware.append(summarization_middleware(config, summary_model))
    if lead:  # outside every model-call wrapper: see step_limit.py
        middleware.append(StepLimitMiddleware(max_steps or config.lead.max_steps))
    else:  # no per-run limit: a sub-agent's config is its lead's
        middleware.append(
            StepLimitMiddleware(max_steps or config.subagents.max_turns, message=max_turns_message, run_key=None)
        )
    middleware.append(SystemPromptMiddleware(system_prompt))
    if lead:
        middleware.append(AgentProfileMiddleware())
    if lead and model_selection is not None:
        middleware.append(model_selection)
    if lead and config.lead.answer_language:  # outside the uploads notice: it reads what the user wrote
        middleware.append(ReplyLanguageMiddleware())
    if lead and config.context.announce_uploads and sandbox_provider is not None:
        middleware.append(UploadsNoticeMiddleware(sandbox_provider))
    if memory is not None and config.memory.enabled:
        middleware.append(MemoryInjectionMiddleware(memory))
    known = (skills or SkillCatalog(root=None)) if lead and config.skills.enabled else None
    if config.lead.verify_rounds:
        middleware.append(
            CompletionCheckMiddleware(
                sandbox_provider,
                config.lead.verify_rounds,
                verifier_model if lead else None,
                tool_names,
                known.skills if known else None,
                intent_languages(config.lead.intent_rules, small),
                runs_shown_code(config.lead.run_shown_code, small, config.tools.require_approval),
                config.tools.max_tool_calls_per_run if lead else None,
                answer_language=lead and config.lead.answer_language,
            )
        )
    if lead and switched_on(config.lead.value_answers, small):
        middleware.append(ValueAnswerMiddleware())
    if lead and switched_on(config.lead.fresh_answers, small):
        middleware.append(FreshAnswerMiddleware())  # inside the value answer: a fresh answer may become a value
    if lead and switched_on(config.lead.program_answers, small):
        middleware.append(ProgramAnswerMiddleware(sandbox_provider))
    if lead and switched_on(config.lead.file_rewrites, small):
        middleware.append(FileRewriteMiddleware(sandbox_provider))
    if lead and switched_on(config.lead.task_programs, small):
        middleware.append(TaskProgramMiddleware(sandbox_provider))
    if lead and config.lead.answer_language and switched_on(config.lead.answer_translations, small):
        middleware.append(AnswerTranslationMiddleware(sandbox_provider))
    if known is not None:
        own = OwnSkills(resolve_skills_root(config), disabled_skills(config), SkillSecrets.of(config).load)
        ask = switched_on(config.skills.ask_model, small)
        middleware.append(SkillActivationMiddleware(known.skills, known.reasons(), config.skills.auto_select, own, ask))
    if lead and config.context.todos:
        middleware.append(TodoListMiddleware())
    if lead and (config.context.loop_warn_after or config.context.loop_stop_after):
        middleware.append(LoopDetectionMiddleware(config.context.loop_warn_after, config.context.loop_stop_after))
    if small:  # inside loop detection: it must see the thread, not the nudged view
        middleware += [ToolSelectionMiddleware(), AnswerNudgeMiddleware(), SequentialCallsMiddleware()]
    if lead and switched_on(config.lead.plan_act, small):
        middleware.append(PlanActMiddleware(sandbox_provider))  # last rewriter: its after_model runs first
    middleware += [
        DanglingToolCallMiddleware(),
        ModelOutputGuardMiddleware(max_retries=config.lead.unusable_reply_retries),
    ]
    if lead and config.lead.model_retries:
        middleware.append(
            ModelFailureRetry(max_retries=config.lead.model_retries, initial_delay=config.lead.retry_initial_delay)
        )
    middleware.append(usage or UsageMiddleware(config.subagents, "lead" if lead else "self"))
    middleware.append(StrictToolsMiddleware())  # inside the tool narrowing; its null-dropping outside the tool gates
    middleware.append(ParallelCallsMiddleware(config.tools.max_parallel_calls))
    if lead and config.tools.require_approval:
        decisions: InterruptOnConfig = {"allowed_decisions": ["approve", "edit", "reject"]}
        middleware.append(HumanInTheLoopMiddleware({name: decisions for name in config.tools.require_approval}))
        if "bash" in config.tools.require_approval:  # after it: its after_model runs first
            middleware.append(ApprovedCommandMiddleware())
    if lead and config.tools.max_tool_calls_per_run:
        middleware.append(
            ToolCallLimitMiddleware(run_limit=config.tools.max_tool_calls_per_run, exit_behavior="continue")
        )
    if config.tools.read_before_write and sandbox_provider is not None:
        middleware.append(ReadBeforeWriteMiddleware(sandbox_provider))
    if lead and config.context.offload_tool_output_chars:
        middleware.append(
            ToolOutputOffloadMiddleware(
                sandbox_provider,
                config.context.offload_tool_output_chars,
                head=config.context.preview_head_chars,
                tail=config.context.preview_tail_chars,
            )
        )
    middleware.append(tool_error_middleware())
    if lead and config.title.enabled:
        middleware.append(TitleMiddleware(title_model, max_chars=config.title.max_chars))
    if lead and memory is not None and config.memory.enabled and config.memory.mode in ("auto", "both"):
        middleware.append(MemoryQueueMiddleware(memory))
    return middleware
