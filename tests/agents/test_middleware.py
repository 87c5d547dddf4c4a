"""Middleware units: order, dangling tool calls, unusable replies, system prompt date, titles."""

from __future__ import annotations

import datetime as dt

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from herdsman.agents.lead import delegation_runner
from herdsman.agents.stack import LEAD_ONLY, build_middleware
from herdsman.config import parse_config
from herdsman.middleware.dangling_tool_calls import INTERRUPTED_RESULT, patch_dangling_tool_calls
from herdsman.middleware.model_selection import ModelSelectionMiddleware
from herdsman.middleware.system_prompt import SystemPromptMiddleware
from herdsman.middleware.title import clean_title, fallback_title
from herdsman.models.resolver import ModelResolver
from herdsman.models.scripted import ScriptedChatModel


def names(mws) -> list[str]:
    return [type(m).__name__ for m in mws]


def test_default_middleware_order() -> None:
    config = parse_config("", env={})
    provider = object()  # stands in for the sandbox provider the file middlewares keep
    assert names(build_middleware(config, "prompt", sandbox_provider=provider)) == [
        "StepLimitMiddleware",
        "SystemPromptMiddleware",
        "AgentProfileMiddleware",
        "ReplyLanguageMiddleware",
        "UploadsNoticeMiddleware",
        "CompletionCheckMiddleware",
        "SkillActivationMiddleware",
        "LoopDetectionMiddleware",
        "DanglingToolCallMiddleware",
        "ModelOutputGuardMiddleware",
        "ModelFailureRetry",
        "UsageMiddleware",
        "StrictToolsMiddleware",
        "ParallelCallsMiddleware",
        "ReadBeforeWriteMiddleware",
        "ToolOutputOffloadMiddleware",
        "ToolErrorMiddleware",
        "TitleMiddleware",
    ]


def test_optional_middlewares_take_their_places() -> None:
    config = parse_config(
        "summarization: {enabled: true, trigger_messages: 10}\n"
        "tools: {max_tool_calls_per_run: 5}\n"
        "title: {enabled: false}\nlead: {model_retries: 0}\nsubagents: {enabled: false}\n"
        "context: {todos: true}\n",
        env={},
    )
    selection = ModelSelectionMiddleware(ModelResolver(config), "default")
    mws = build_middleware(config, "p", summary_model=ScriptedChatModel(responses=[]), model_selection=selection)
    assert names(mws) == [
        "SummarizationMiddleware",
        "StepLimitMiddleware",
        "SystemPromptMiddleware",
        "AgentProfileMiddleware",
        "ModelSelectionMiddleware",
        "ReplyLanguageMiddleware",
        "CompletionCheckMiddleware",
        "SkillActivationMiddleware",
        "TodoListMiddleware",
        "LoopDetectionMiddleware",
        "DanglingToolCallMiddleware",
        "ModelOutputGuardMiddleware",
        "UsageMiddleware",
        "StrictToolsMiddleware",
        "ParallelCallsMiddleware",
        "ToolCallLimitMiddleware",
        "ToolOutputOffloadMiddleware",
        "ToolErrorMiddleware",
    ]


@pytest.mark.parametrize("small", [False, True])
def test_subagent_middleware_order(small: bool) -> None:
    """A sub-agent's middlewares: the lead's for doing the work, none for the conversation."""
    config = parse_config("", env={})
    runner = delegation_runner(config, ModelResolver(config), [], "embedded", provider=object())
    spec = runner.types["general-purpose"]
    profile = ["ToolSelectionMiddleware", "AnswerNudgeMiddleware", "SequentialCallsMiddleware"] if small else []
    assert names(runner.middleware_for(spec, [], small)) == [
        "StepLimitMiddleware",
        "SystemPromptMiddleware",
        "CompletionCheckMiddleware",
        *profile,
        "DanglingToolCallMiddleware",
        "ModelOutputGuardMiddleware",
        "UsageMiddleware",
        "StrictToolsMiddleware",
        "ParallelCallsMiddleware",
        "ReadBeforeWriteMiddleware",
        "ToolErrorMiddleware",
    ]


EVERYTHING_ON = (
    "summarization: {enabled: true, trigger_messages: 10}\n"
    "memory: {enabled: true, mode: auto}\n"
    "tools: {max_tool_calls_per_run: 5, require_approval: [bash]}\n"
    "lead: {plan_act: on, value_answers: on, fresh_answers: on, program_answers: on, file_rewrites: on, task_programs: on, "
    "answer_translations: on}\n"
    "context: {todos: true}\n"
)


@pytest.mark.parametrize("profile", ["standard", "small"])
def test_a_subagents_stack_is_the_leads_without_the_lead_only_parts(tmp_path, profile: str) -> None:
    """With every optional middleware switched on, the stack a sub-agent is built with (through
    its runner, as the lead builds it) is the lead's minus LEAD_ONLY, in the same order; and each
    LEAD_ONLY entry is a middleware the lead really has."""
    from herdsman.memory.service import MemoryService

    config = parse_config(f"home: {tmp_path}\n" + EVERYTHING_ON, env={})
    resolver = ModelResolver(config)
    memory = MemoryService.open(config, ScriptedChatModel(responses=[]))
    provider = object()
    try:
        lead = names(
            build_middleware(
                config,
                "p",
                summary_model=ScriptedChatModel(responses=[]),
                sandbox_provider=provider,
                memory=memory,
                model_selection=ModelSelectionMiddleware(resolver, "default"),
                profile=profile,
            )
        )
        runner = delegation_runner(config, resolver, [], "embedded", memory=memory, provider=provider)
        sub = names(runner.middleware_for(runner.types["general-purpose"], [], profile == "small"))
    finally:
        memory.close()
    assert set(LEAD_ONLY) <= set(lead), (
        f"LEAD_ONLY names middlewares the lead does not have: {set(LEAD_ONLY) - set(lead)}"
    )
    assert sub == [name for name in lead if name not in LEAD_ONLY]
    assert "MemoryInjectionMiddleware" in sub and "ReadBeforeWriteMiddleware" in sub  # it reads memory and files


def test_a_subagents_step_limit_is_its_max_turns() -> None:
    """A sub-agent stops after its type's max_turns (not lead.max_steps), and a run's own
    configurable.max_steps (the lead's) does not reach it."""
    config = parse_config("lead: {max_steps: 40}\nsubagents: {max_turns: 7}\n", env={})
    runner = delegation_runner(config, ModelResolver(config), [], "embedded")
    limit = runner.middleware_for(runner.types["general-purpose"], [], False)[0]
    lead_limit = build_middleware(config, "p")[0]
    assert (limit.max_steps, limit.run_key) == (7, None)
    assert lead_limit.max_steps == 40 and lead_limit.run_key is not None


def test_patch_dangling_tool_calls() -> None:
    call = {"name": "bash", "args": {"command": "sleep 100"}, "id": "c1", "type": "tool_call"}
    done = {"name": "ls", "args": {}, "id": "c0", "type": "tool_call"}
    history = [
        HumanMessage("hi"),
        AIMessage("", tool_calls=[done]),
        ToolMessage("ok", tool_call_id="c0"),
        AIMessage("", tool_calls=[call]),
        HumanMessage("are you there?"),
    ]
    patched = patch_dangling_tool_calls(history)
    assert len(patched) == 6
    assert isinstance(patched[4], ToolMessage) and patched[4].tool_call_id == "c1"
    assert patched[4].content == INTERRUPTED_RESULT and patched[4].status == "error"
    complete = history[:3]
    assert patch_dangling_tool_calls(complete) is complete


def test_system_prompt_date_refreshes() -> None:
    day = [dt.date(2026, 1, 5)]
    mw = SystemPromptMiddleware("Today is {date}.", today=lambda: day[0])
    assert mw.render().content == "Today is Monday, 2026-01-05."
    day[0] = dt.date(2026, 1, 6)
    assert mw.render().content == "Today is Tuesday, 2026-01-06."


def test_fallback_title() -> None:
    assert fallback_title("\n  Fix the failing build please\nmore") == "Fix the failing build please"
    long = fallback_title("word " * 40, 30)
    assert len(long) <= 30 and long.endswith("…")
    assert fallback_title("   ") == "Untitled"
    assert fallback_title("/data-analysis chart the sales") == "/data-analysis chart the sales"  # the skill stays
    assert fallback_title("## Notes") == "Notes"
    assert clean_title('"Title: Build a website."\nextra', 60) == "Build a website"


def test_memory_middlewares_take_their_places(tmp_path) -> None:
    from herdsman.memory.service import MemoryService

    config = parse_config(
        f"home: {tmp_path}\nmemory: {{enabled: true}}\nsubagents: {{enabled: false}}\nlead: {{model_retries: 0}}\n"
        "context: {offload_tool_output_chars: null, loop_warn_after: null, loop_stop_after: null}\n",
        env={},
    )
    memory = MemoryService.open(config, ScriptedChatModel(responses=[]))
    try:
        assert names(build_middleware(config, "p", memory=memory)) == [
            "StepLimitMiddleware",
            "SystemPromptMiddleware",
            "AgentProfileMiddleware",
            "ReplyLanguageMiddleware",
            "MemoryInjectionMiddleware",
            "CompletionCheckMiddleware",
            "SkillActivationMiddleware",
            "DanglingToolCallMiddleware",
            "ModelOutputGuardMiddleware",
            "UsageMiddleware",
            "StrictToolsMiddleware",
            "ParallelCallsMiddleware",
            "ToolErrorMiddleware",
            "TitleMiddleware",
            "MemoryQueueMiddleware",
        ]
    finally:
        memory.close()


def test_small_profile_middlewares_sit_inside_loop_detection() -> None:
    """The small profile's request rewriters (tool selection, answer nudge, one write per step)
    come after loop detection, which must see the thread rather than the nudged view."""
    config = parse_config("lead: {plan_act: auto}\n", env={})
    found = names(build_middleware(config, "prompt", profile="small"))
    at = found.index("LoopDetectionMiddleware")
    assert found[at + 1 : at + 5] == [
        "ToolSelectionMiddleware",
        "AnswerNudgeMiddleware",
        "SequentialCallsMiddleware",
        "PlanActMiddleware",
    ]
    assert "ToolSelectionMiddleware" not in names(build_middleware(config, "prompt"))


def test_the_plan_act_loop_follows_its_switch() -> None:
    """lead.plan_act auto: on for the small profile only; on and off override the profile. It
    comes after the completion check, so its check of the steps runs first."""

    def has_it(plan_act: str, profile: str) -> bool:
        config = parse_config(f"lead: {{plan_act: {plan_act}}}\n", env={})
        found = names(build_middleware(config, "prompt", profile=profile))
        if "PlanActMiddleware" in found:
            assert found.index("PlanActMiddleware") > found.index("CompletionCheckMiddleware")
        return "PlanActMiddleware" in found

    assert has_it("auto", "small") and not has_it("auto", "standard")
    assert has_it("on", "standard") and not has_it("off", "small")
    assert "PlanActMiddleware" not in names(
        build_middleware(parse_config("", env={}), "prompt", profile="small")
    )  # off by default


async def test_the_step_limit_ends_a_run_with_an_answer_that_says_why(tmp_path) -> None:
    """A model that never stops calling tools is stopped after lead.max_steps model calls, with
    an answer naming the setting, not a recursion error; the thread takes the next message."""
    from herdsman.client import HerdsmanClient
    from herdsman.middleware.step_limit import stop_message

    config = parse_config(
        f"home: {tmp_path}\nlead: {{max_steps: 3, verify_rounds: 0}}\nsandbox: {{allow_unisolated_bash: true}}\n",
        env={},
    )
    calls = []

    def forever(messages):
        calls.append(len(messages))
        return {"tool_calls": [{"name": "ls", "args": {"path": "/mnt/user-data/workspace"}}]}

    async with HerdsmanClient(config, model=ScriptedChatModel(respond=forever)) as client:
        finished = await client.run("list the workspace until told to stop", thread_id="t")
        assert len(calls) == 3
        assert finished.answer == stop_message(3)
        again = await client.run("go on", thread_id="t")  # a new run gets a fresh count
        assert again.answer == stop_message(3) and len(calls) == 6


async def test_a_run_may_carry_its_own_step_limit() -> None:
    """A custom agent's max_steps reaches the run as configurable.max_steps and replaces the default."""
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    from herdsman.middleware.step_limit import StepLimitMiddleware, stop_message

    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    model = ScriptedChatModel(respond=lambda messages: {"tool_calls": [{"name": "ping", "args": {}}]})
    agent = create_agent(model, tools=[ping], middleware=[StepLimitMiddleware(5)])
    out = await agent.ainvoke({"messages": [HumanMessage("ping until stopped")]}, {"configurable": {"max_steps": 2}})
    assert len(model.calls) == 2 and out["messages"][-1].text == stop_message(2)
    out = await agent.ainvoke({"messages": [HumanMessage("again")]}, {"configurable": {"max_steps": "lots"}})
    assert len(model.calls) == 2 + 5 and out["messages"][-1].text == stop_message(5)  # a bad value: the default


async def test_the_step_limit_counts_a_step_asked_again_once_and_adds_no_graph_step() -> None:
    """A model call that failed and was retried, or whose empty reply was asked again, inside one
    step is one step of the limit; the limit is no node of the
    graph, so a run of two model calls and a tool call saves a checkpoint for the model, the tools
    and the model, not for hooks around each."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import ModelRetryMiddleware
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from herdsman.middleware.model_output_guard import ModelOutputGuardMiddleware
    from herdsman.middleware.step_limit import StepLimitMiddleware
    from herdsman.turns.turn import stop_reason

    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    model = ScriptedChatModel(
        responses=[{"error": "overloaded"}, "", {"tool_calls": [{"name": "ping", "args": {}}]}, "", "done"]
    )
    saver = InMemorySaver()
    agent = create_agent(
        model,
        tools=[ping],
        checkpointer=saver,
        middleware=[
            StepLimitMiddleware(2),
            ModelOutputGuardMiddleware(max_retries=1),
            ModelRetryMiddleware(max_retries=1, initial_delay=0),
        ],
    )
    cfg = {"configurable": {"thread_id": "t"}}
    out = await agent.ainvoke({"messages": [HumanMessage("ping once")]}, cfg)
    assert len(model.calls) == 5 and out["messages"][-1].text == "done" and stop_reason(out["messages"][-1]) is None
    steps = [t async for t in saver.alist(cfg)]
    assert not any("StepLimitMiddleware" in node for t in steps for node in t.checkpoint["versions_seen"])
    assert len(steps) == 5  # input, start, model, tools, model
