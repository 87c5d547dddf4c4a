"""The lead's delegation tools: ``task`` (one sub-agent) and ``run_plan`` (a DAG of tasks).

Several ``task`` calls in one model reply run in parallel (LangGraph runs a reply's tool calls
together), bounded by the run's concurrency gate. Each returns the sub-agent's structured
result: readable text for the model, the full record as the message's artifact, and its usage
added to the thread state.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langgraph.types import Command

from herdsman.middleware.completion.rules import request_paths
from herdsman.sandbox.base import OUTPUTS
from herdsman.subagents.dag import PlanError, PlanTask, prompt_with_dependencies, validate_plan
from herdsman.subagents.executor import SubagentRunner, TaskRequest
from herdsman.subagents.result import TaskResult
from herdsman.tool_schemas import structured_tool
from herdsman.turns.run_scope import RunContext, run_scope, with_scope
from herdsman.turns.turn import this_run

TASK_DESCRIPTION = """Delegate one part of the work to a sub-agent that starts with a fresh, empty context.

The sub-agent sees ONLY the prompt you write (not this conversation), works in the same sandbox
files, and returns a final report. Write a complete prompt: the goal, the inputs (file paths),
constraints, and what to produce (e.g. a file under /mnt/user-data/outputs). Call task several
times in one reply to run independent parts in parallel.

Args:
    description: 3-8 words for the user, e.g. "Summarize the sales CSV".
    prompt: everything the sub-agent needs to do its part.
    subagent_type: which kind of sub-agent (see the list in your instructions).
"""

PLAN_DESCRIPTION = """Run a plan of sub-agent tasks where some depend on others (a DAG).

Independent tasks run in parallel; a task starts when the tasks in its depends_on have finished,
and its prompt is given their results. Use it when later parts need earlier results, e.g. three
research tasks, then one writing task that depends on all three.
"""


def _usage_update(results: list[TaskResult]) -> dict[str, Any]:
    return {
        f"task:{r.task_id}": {
            **r.usage,
            "subagent_type": r.subagent_type,
            "description": r.description,
            "status": r.status,
        }
        for r in results
        if r.usage
    }


def _command(
    results: list[TaskResult], text: str, tool_call_id: str, name: str, ok: bool | None = None
) -> Command[Any]:
    # a sub-agent the user stopped is their choice, not a failure to fix (the completion check
    # and the tool card would otherwise call it one)
    ok = all(r.ok or r.status == "cancelled" for r in results) if ok is None else ok
    message = ToolMessage(
        content=text,
        tool_call_id=tool_call_id,
        name=name,
        status="success" if ok else "error",
        artifact={"results": [r.to_dict() for r in results]},
    )
    update: dict[str, Any] = {"messages": [message]}
    usage = _usage_update(results)
    if usage:
        update["usage"] = usage
    return Command(update=update)


def _safe_id(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "-", text)[:64]


async def run_plan_tasks(
    runner: SubagentRunner,
    tasks: list[PlanTask],
    tool_call_id: str,
    parent_config: dict[str, Any],
    writer: Any,
    context: Any = None,
) -> list[TaskResult]:
    """Run ``tasks`` in dependency order, in parallel where possible; a failed dependency skips its dependents.
    All run under the run scope of ``context`` (the lead's runtime context; one for the plan without it)."""
    validate_plan(tasks)
    context = with_scope(context, run_scope(runner.settings, context, parent_config))
    done: dict[str, asyncio.Event] = {t.id: asyncio.Event() for t in tasks}
    results: dict[str, TaskResult] = {}

    async def run_one(t: PlanTask) -> None:
        try:
            for dep in t.depends_on:
                await done[dep].wait()
            failed = [d for d in t.depends_on if not results[d].ok]
            task_id = f"{tool_call_id}-{_safe_id(t.id)}"
            if failed:
                results[t.id] = TaskResult(
                    task_id,
                    t.subagent_type,
                    t.description,
                    "skipped",
                    error=f"not run: the task(s) it depends on did not complete: {failed}",
                )
                return
            answers = {d: results[d].answer for d in t.depends_on}
            request = TaskRequest(task_id, t.description, prompt_with_dependencies(t, answers), t.subagent_type)
            results[t.id] = await runner.run(request, parent_config, writer, context)
        finally:
            done[t.id].set()

    await asyncio.gather(*(run_one(t) for t in tasks))
    return [results[t.id] for t in tasks]


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def own_prompt(description: str, prompt: str) -> str:
    """The prompt a sub-agent gets: the lead's, or the description when the lead copied this
    tool's own instructions as the prompt (from the benchmark: a small model's prompt was "Write a
    complete prompt: the goal, the inputs (file paths), ..."; the task was only in the
    description)."""
    copied = _words(prompt)
    return description if len(copied) >= 20 and copied in _words(TASK_DESCRIPTION) else prompt


def deliverables(prompt: str, state: Any) -> tuple[str, ...]:
    """The output paths the user's request names, when the lead's prompt names none of them
    (only paths under ``/mnt/user-data/outputs``: what is to be delivered; any language)."""
    messages = state.get("messages") if isinstance(state, dict) else None
    request, _ = this_run(messages or [])
    if request is None:
        return ()
    wanted = tuple(p for p in dict.fromkeys(request_paths(request.text)) if p.startswith(OUTPUTS + "/"))
    return () if any(p in prompt for p in wanted) else wanted


def make_task_tools(runner: SubagentRunner) -> list[BaseTool]:
    """The ``task`` and ``run_plan`` tools bound to ``runner``."""
    types_list = ", ".join(sorted(runner.types))

    async def task(
        description: str,
        prompt: str,
        runtime: ToolRuntime[RunContext, dict[str, Any]],
        subagent_type: str = "general-purpose",
    ) -> Command[Any]:
        prompt = own_prompt(description, prompt)
        request = TaskRequest(
            runtime.tool_call_id or "task",
            description,
            prompt,
            subagent_type,
            deliverables(prompt + " " + description, runtime.state),
        )
        result = await runner.run(request, dict(runtime.config), runtime.stream_writer, runtime.context)
        return _command([result], result.to_text(), request.task_id, "task")

    async def run_plan(tasks: list[PlanTask], runtime: ToolRuntime[RunContext, dict[str, Any]]) -> Command[Any]:
        call_id = runtime.tool_call_id or "plan"
        try:
            results = await run_plan_tasks(
                runner, list(tasks), call_id, dict(runtime.config), runtime.stream_writer, runtime.context
            )
        except PlanError as exc:
            return _command([], f"Error: the plan was refused: {exc}", call_id, "run_plan", ok=False)
        text = "\n\n".join(f"## {t.id}\n{r.to_text()}" for t, r in zip(tasks, results, strict=False))
        return _command(results, text, call_id, "run_plan")

    # the schemas are built once per process (herdsman.tool_schemas): these closures' annotations
    # name module-level types only
    available = f"\nAvailable subagent_type values: {types_list}."
    return [
        structured_tool(name="task", description=TASK_DESCRIPTION + available, coroutine=task),
        structured_tool(name="run_plan", description=PLAN_DESCRIPTION + available, coroutine=run_plan),
    ]
