"""Sub-agents with scripted models: fan-out, queueing, limits, isolation, DAGs, retries, streaming."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, ToolMessage

from herdsman.client import HerdsmanClient, RunFinished, TaskEvent, ToolResult
from herdsman.models.scripted import ScriptedChatModel
from herdsman.runtime.tracing.transcripts import transcript_loader
from tests.support import make_config

SUB_MODELS = [
    {"name": "lead", "use": "herdsman.models.scripted:ScriptedChatModel"},
    {"name": "worker", "use": "herdsman.models.scripted:ScriptedChatModel"},
    {"name": "backup", "use": "herdsman.models.scripted:ScriptedChatModel"},
]


def lead_model(*steps: Any) -> ScriptedChatModel:
    """The lead plays ``steps`` (each a list of tool calls or a final string), in order."""
    responses = [s if isinstance(s, str) else {"tool_calls": s} for s in steps]
    return ScriptedChatModel(responses=responses)


def task(description: str, prompt: str, subagent_type: str = "general-purpose", id: str | None = None) -> dict:
    call = {"name": "task", "args": {"description": description, "prompt": prompt, "subagent_type": subagent_type}}
    if id:
        call["id"] = id
    return call


def worker(latency: float = 0.0, fail: set[str] | None = None, hang: set[str] | None = None) -> ScriptedChatModel:
    """A sub-agent model: 'write <name>' writes outputs/<name>.txt then reports; others just answer.

    Prompts in ``fail`` make the model raise; prompts in ``hang`` make it take an hour.
    """
    fail = fail or set()
    hang = hang or set()

    def respond(messages: list[Any]) -> Any:
        prompt = next(m for m in messages if isinstance(m, HumanMessage)).text
        first_line = prompt.splitlines()[0]
        if first_line in fail:
            return {"error": f"model broke on {first_line}"}
        if first_line == "big answer":
            return "x" * 8000  # about 2,000 output tokens
        if first_line in hang:
            return {"content": "too late", "delay": 3600}
        done = [m for m in messages if isinstance(m, ToolMessage)]
        if first_line.startswith("write ") and not done:
            name = first_line.split()[1]
            return {
                "tool_calls": [
                    {"name": "write_file", "args": {"path": f"/mnt/user-data/outputs/{name}.txt", "content": name}}
                ]
            }
        return f"report for: {prompt}"

    return ScriptedChatModel(respond=respond, latency=latency)


def config_for(home: Path, **subagents: Any):
    return make_config(home, models=SUB_MODELS, lead={"model_retries": 0}, subagents={"model": "worker", **subagents})


async def run(
    config,
    lead: ScriptedChatModel,
    overrides: dict[str, ScriptedChatModel],
    thread: str = "t",
    message: str = "do the work",
) -> list[Any]:
    async with HerdsmanClient(config, model=lead, model_overrides=overrides) as client:
        return [e async for e in client.stream(message, thread_id=thread)]


def kinds(events: list[Any], kind: str) -> list[dict]:
    return [e.data for e in events if isinstance(e, TaskEvent) and e.kind == kind]


def peak_running(events: list[Any]) -> int:
    running = peak = 0
    for e in events:
        if isinstance(e, TaskEvent) and e.kind == "task_started":
            running += 1
            peak = max(peak, running)
        elif isinstance(e, TaskEvent) and e.kind in (
            "task_completed",
            "task_failed",
            "task_timed_out",
            "task_cancelled",
        ):
            if e.data.get("will_retry"):
                continue
            running -= 1
    return peak


@pytest.mark.parametrize("n", [3, 10])
async def test_fan_out_runs_all_in_parallel(home: Path, n: int) -> None:
    config = config_for(home, max_concurrent=n)
    lead = lead_model([task(f"part {i}", f"write part{i}") for i in range(n)], "all parts done")
    events = await run(config, lead, {"worker": worker(latency=0.05)})
    results = [e for e in events if isinstance(e, ToolResult)]
    assert len(results) == n and not any(r.is_error for r in results)
    assert all("completed" in r.content for r in results)
    assert peak_running(events) == n
    outputs = sorted(Path(home, "threads", "t", "user-data", "outputs").iterdir())
    assert [p.name for p in outputs] == sorted(f"part{i}.txt" for i in range(n))
    # each result names the file its sub-agent wrote
    assert any("/mnt/user-data/outputs/part0.txt" in r.content for r in results)
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.answer == "all parts done"
    # usage rolled up per sub-agent and in total
    task_keys = [k for k in finished.usage if k.startswith("task:")]
    assert len(task_keys) == n
    assert finished.usage["total"]["total_tokens"] == sum(
        v["total_tokens"] for k, v in finished.usage.items() if k != "total"
    )


async def test_queue_under_a_limit_of_three(home: Path) -> None:
    config = config_for(home, max_concurrent=3)
    lead = lead_model([task(f"part {i}", f"part {i}") for i in range(7)], "done")
    events = await run(config, lead, {"worker": worker(latency=0.05)})
    assert peak_running(events) == 3
    assert len(kinds(events, "task_queued")) >= 4  # the rest waited, none dropped
    assert len(kinds(events, "task_completed")) == 7
    results = [e for e in events if isinstance(e, ToolResult)]
    assert sum("waited" in r.content for r in results) >= 4  # and the lead is told


async def test_per_run_concurrency_from_run_config(home: Path) -> None:
    config = config_for(home, max_concurrent=10)
    lead = lead_model([task(f"p{i}", f"p{i}") for i in range(4)], "done")
    from langgraph.checkpoint.memory import InMemorySaver

    from herdsman.agents.lead import create_lead_agent, run_config

    agent = create_lead_agent(
        config, model=lead, checkpointer=InMemorySaver(), model_overrides={"worker": worker(0.05)}
    )
    cfg = run_config(config, "per-run", max_concurrent_subagents=1)
    events = []
    async for _mode, chunk in agent.astream({"messages": [HumanMessage("go")]}, cfg, stream_mode=["custom"]):
        events.append(TaskEvent(chunk["type"], chunk))
    assert peak_running(events) == 1


async def test_timeout_and_failure_do_not_touch_siblings(home: Path) -> None:
    config = make_config(
        home,
        models=SUB_MODELS,
        lead={"model_retries": 0},
        subagents={"model": "worker", "timeout_seconds": 0.5},
    )
    lead = lead_model([task("ok", "fine job"), task("slow", "hang here"), task("bad", "explode")], "summarised")
    events = await run(config, lead, {"worker": worker(fail={"explode"}, hang={"hang here"})})
    by_desc = {e.content.split(":")[0]: e for e in events if isinstance(e, ToolResult)}
    assert "completed" in by_desc["[general-purpose] ok"].content
    assert (
        "timed_out" in by_desc["[general-purpose] slow"].content
        and "timeout_seconds" in by_desc["[general-purpose] slow"].content
    )
    assert (
        "failed" in by_desc["[general-purpose] bad"].content
        and "model broke on explode" in by_desc["[general-purpose] bad"].content
    )
    assert len(kinds(events, "task_timed_out")) == 1 and len(kinds(events, "task_failed")) == 1
    assert events[-1].answer == "summarised"
    # Each keeps a transcript for the trace, however it ended: the prompt and what it did.
    load = transcript_loader(config, "t")
    for data in kinds(events, "task_completed") + kinds(events, "task_timed_out") + kinds(events, "task_failed"):
        steps = load(data["task_id"])
        assert steps and steps[0].kind == "input", data["description"]
    done = load(kinds(events, "task_completed")[0]["task_id"])
    assert [(s.kind, s.text) for s in done] == [("input", "fine job"), ("model", "report for: fine job")]


async def test_bad_requests_get_clear_tool_errors(home: Path) -> None:
    config = config_for(home)
    lead = lead_model([task("x", "do it", subagent_type="wizard"), task("y", "   ")], "ok")
    events = await run(config, lead, {"worker": worker()})
    results = [e for e in events if isinstance(e, ToolResult)]
    assert len(results) == 2 and all(r.is_error for r in results)
    # the two calls run side by side: their results come in the order they finish
    wizard = next(r for r in results if "wizard" in r.content)
    empty = next(r for r in results if r is not wizard)
    assert "unknown subagent_type 'wizard'" in wizard.content and "general-purpose" in wizard.content
    assert "prompt is empty" in empty.content
    assert events[-1].answer == "ok"


async def test_max_subagents_per_run(home: Path) -> None:
    config = config_for(home, max_per_run=2)
    lead = lead_model([task(f"p{i}", f"p{i}") for i in range(3)], "ok")
    events = await run(config, lead, {"worker": worker()})
    results = [e for e in events if isinstance(e, ToolResult)]
    assert sum(r.is_error and "max_per_run" in r.content for r in results) == 1
    assert sum("completed" in r.content for r in results) == 2


async def test_each_invocation_has_its_own_run_scope(home: Path) -> None:
    """The lead graph invoked directly, without a context: each invocation gets a fresh scope
    (the cap of one sub-agent is not spent by the one before on the same thread); a scope passed
    in the context is the one the run uses."""
    from langgraph.checkpoint.memory import InMemorySaver

    from herdsman.agents.lead import create_lead_agent, run_config
    from herdsman.turns.run_scope import open_scope, with_scope

    config = config_for(home, max_per_run=1)
    lead = lead_model([task("a", "first")], "ok", [task("b", "second")], "ok", [task("c", "third")], "ok")
    agent = create_lead_agent(config, model=lead, checkpointer=InMemorySaver(), model_overrides={"worker": worker()})
    cfg = run_config(config, "same-thread")

    def last_result(values: dict) -> ToolMessage:
        return [m for m in values["messages"] if isinstance(m, ToolMessage)][-1]

    for prompt in ("first", "second"):
        values = await agent.ainvoke({"messages": [HumanMessage("go")]}, cfg)
        assert "completed" in last_result(values).content and prompt in last_result(values).content
    spent = open_scope(config.subagents, cfg)
    assert spent.claim_slot()  # the caller's scope has used its one sub-agent
    values = await agent.ainvoke({"messages": [HumanMessage("go")]}, cfg, context=with_scope({"mine": 1}, spent))
    assert last_result(values).status == "error" and "max_per_run" in last_result(values).content


async def test_tools_take_a_run_context_without_pydantic_warnings(home: Path) -> None:
    """A run's context (a client's keys and the run scope) reaches the lead's and a sub-agent's
    tools without pydantic warning that it is not None (a bare ``ToolRuntime`` types it None)."""
    import warnings

    from langgraph.checkpoint.memory import InMemorySaver

    from herdsman.agents.lead import create_lead_agent, run_config

    config = config_for(home)
    write = {"name": "write_file", "args": {"path": "/mnt/user-data/outputs/lead.txt", "content": "x"}}
    lead = lead_model([write], [task("w", "write sub")], "ok")
    agent = create_lead_agent(config, model=lead, checkpointer=InMemorySaver(), model_overrides={"worker": worker()})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        values = await agent.ainvoke({"messages": [HumanMessage("go")]}, run_config(config, "ctx"), context={"mine": 1})
    results = [m for m in values["messages"] if isinstance(m, ToolMessage)]
    assert [m.status for m in results] == ["success", "success"] and "completed" in results[1].content
    assert not [str(w.message) for w in caught if "serialized value may not be as expected" in str(w.message)]


async def test_dag_order_and_result_passing(home: Path) -> None:
    config = config_for(home, max_concurrent=5)
    plan = [
        {"id": "a", "description": "first", "prompt": "alpha"},
        {"id": "b", "description": "second", "prompt": "beta"},
        {"id": "c", "description": "join", "prompt": "combine", "depends_on": ["a", "b"]},
    ]
    lead = lead_model([{"name": "run_plan", "args": {"tasks": plan}}], "plan done")
    sub = worker(latency=0.02)
    events = await run(config, lead, {"worker": sub})
    started = [d["description"] for d in kinds(events, "task_started")]
    completed = [d["description"] for d in kinds(events, "task_completed")]
    assert started.index("join") > max(completed.index("first"), completed.index("second"))
    join_prompt = next(c.messages for c in sub.calls if "combine" in c.messages[1].text)[1].text
    assert "report for: alpha" in join_prompt and "report for: beta" in join_prompt
    result = next(e for e in events if isinstance(e, ToolResult))
    assert not result.is_error and "## c" in result.content


@pytest.mark.parametrize(
    "plan, message",
    [
        (
            [
                {"id": "a", "description": "x", "prompt": "p", "depends_on": ["b"]},
                {"id": "b", "description": "y", "prompt": "p", "depends_on": ["a"]},
            ],
            "cycle",
        ),
        ([{"id": "a", "description": "x", "prompt": "p", "depends_on": ["zzz"]}], "unknown task(s) ['zzz']"),
        ([{"id": "a", "description": "x", "prompt": "p"}, {"id": "a", "description": "y", "prompt": "q"}], "unique"),
    ],
)
async def test_bad_plans_are_refused(home: Path, plan: list, message: str) -> None:
    config = config_for(home)
    lead = lead_model([{"name": "run_plan", "args": {"tasks": plan}}], "ok")
    events = await run(config, lead, {"worker": worker()})
    result = next(e for e in events if isinstance(e, ToolResult))
    assert result.is_error and message in result.content
    assert events[-1].answer == "ok"


async def test_failed_dependency_skips_dependents(home: Path) -> None:
    config = config_for(home)
    plan = [
        {"id": "a", "description": "breaks", "prompt": "explode"},
        {"id": "b", "description": "after", "prompt": "never", "depends_on": ["a"]},
    ]
    lead = lead_model([{"name": "run_plan", "args": {"tasks": plan}}], "ok")
    sub = worker(fail={"explode"})
    events = await run(config, lead, {"worker": sub})
    result = next(e for e in events if isinstance(e, ToolResult))
    assert result.is_error and "skipped" in result.content
    assert not any("never" in c.messages[1].text for c in sub.calls)


async def test_token_budget_shared_by_the_run(home: Path) -> None:
    config = config_for(home, token_budget=2000)
    # the lead's first call stays well under 2,000 tokens; the sub-agent's reply alone is ~2,000
    lead = lead_model([task("big", "big answer")], [task("more", "again")], "never reached")
    events = await run(config, lead, {"worker": worker()})
    results = [e for e in events if isinstance(e, ToolResult)]
    finished = events[-1]
    assert "token budget is spent" in finished.answer and "subagents.token_budget" in finished.answer
    assert len(results) == 1  # the lead stopped instead of delegating again
    assert results[0].is_error and "budget_exceeded" in results[0].content
    assert "token budget is spent" in results[0].content
    assert finished.usage["total"]["total_tokens"] >= 2000


async def test_retry_with_fallback_model(home: Path) -> None:
    config = config_for(home, retries=1, fallback_model="backup")
    lead = lead_model([task("flaky", "explode")], "ok")
    primary = worker(fail={"explode"})
    backup = ScriptedChatModel(responses=["backup did it"])
    events = await run(config, lead, {"worker": primary, "backup": backup})
    result = next(e for e in events if isinstance(e, ToolResult))
    assert "completed" in result.content and "2 attempts" in result.content and "backup did it" in result.content
    retry = kinds(events, "task_failed")
    assert retry and retry[0]["will_retry"] is True and retry[0]["next_model"] == "backup"
    assert [d["model"] for d in kinds(events, "task_started")] == ["worker", "backup"]
    assert len(backup.calls) == 1 and backup.calls[0].messages[-1].text == "explode"  # clean context


async def test_subagent_context_is_isolated_and_has_no_task_tool(home: Path) -> None:
    config = config_for(home)
    lead = lead_model([task("iso", "what do you see?")], "ok")
    sub = worker()
    await run(config, lead, {"worker": sub})
    call = sub.calls[0]
    assert [m.type for m in call.messages] == ["system", "human"]
    assert "do the work" not in json.dumps([m.text for m in call.messages])  # never the lead's conversation
    assert "task" not in call.tools and "run_plan" not in call.tools
    assert {"bash", "read_file", "write_file"} <= set(call.tools)


async def test_bash_type_gets_only_shell_and_file_tools(home: Path) -> None:
    config = config_for(home)
    lead = lead_model([task("sh", "list files", subagent_type="bash")], "ok")
    sub = worker()
    await run(config, lead, {"worker": sub})
    assert set(sub.calls[0].tools) == {"bash", "ls", "read_file", "write_file", "str_replace", "glob", "grep"}


async def test_custom_type_from_config_with_its_own_model(home: Path) -> None:
    config = make_config(
        home,
        models=SUB_MODELS,
        lead={"model_retries": 0},
        subagents={
            "model": "worker",
            "types": [
                {
                    "name": "reader",
                    "description": "Reads files.",
                    "system_prompt": "You only read.",
                    "tools": ["read_file", "ls"],
                    "model": "backup",
                    "max_turns": 3,
                }
            ],
        },
    )
    lead = lead_model([task("r", "read it", subagent_type="reader")], "ok")
    backup = ScriptedChatModel(responses=["read done"])
    events = await run(config, lead, {"worker": worker(), "backup": backup})
    assert set(backup.calls[0].tools) == {"read_file", "ls"}
    assert "You only read." in backup.calls[0].messages[0].text
    assert "completed" in next(e for e in events if isinstance(e, ToolResult)).content


async def test_max_turns(home: Path) -> None:
    config = config_for(home, max_turns=2)
    looping = ScriptedChatModel(
        respond=lambda m: {"tool_calls": [{"name": "ls", "args": {"path": "/mnt/user-data/workspace"}}]}
    )
    lead = lead_model([task("loop", "keep listing")], "ok")
    events = await run(config, lead, {"worker": looping})
    result = next(e for e in events if isinstance(e, ToolResult))
    assert result.is_error and "max_turns" in result.content
    assert len(looping.calls) == 2


async def test_an_answer_that_quotes_a_limit_is_still_an_answer(home: Path) -> None:
    """How a sub-agent ended is known from who wrote its last message (a limit marks its own),
    not from the words: an answer quoting a limit's message is a completed task."""
    config = config_for(home, max_turns=2)
    quoting = ScriptedChatModel(
        responses=[
            "stopped after 2 turns (max_turns) is what the build log says",
            "The run's token budget is spent, the log also says",
        ]
    )
    lead = lead_model([task("a", "read the log"), task("b", "read it again")], "ok")
    events = await run(config, lead, {"worker": quoting})
    results = [e for e in events if isinstance(e, ToolResult)]
    assert len(results) == 2 and not any(r.is_error for r in results)
    assert all("completed" in r.content for r in results)


async def test_nesting_allowed_by_depth(home: Path) -> None:
    config = config_for(home, max_depth=2)
    lead = lead_model([task("outer", "delegate")], "ok")
    sub = worker()
    await run(config, lead, {"worker": sub})
    assert "task" in sub.calls[0].tools


async def test_streams_under_tool_call_namespaces(home: Path) -> None:
    config = config_for(home)
    lead = lead_model([task("one", "a", id="call_one"), task("two", "b", id="call_two")], "ok")
    from langgraph.checkpoint.memory import InMemorySaver

    from herdsman.agents.lead import create_lead_agent, run_config

    agent = create_lead_agent(config, model=lead, checkpointer=InMemorySaver(), model_overrides={"worker": worker()})
    namespaces = set()
    custom = []
    async for ns, mode, chunk in agent.astream(
        {"messages": [HumanMessage("go")]}, run_config(config, "ns"), stream_mode=["messages", "custom"], subgraphs=True
    ):
        if mode == "messages" and ns:
            namespaces.add(ns[0])
        if mode == "custom":
            custom.append(chunk)
    assert namespaces == {"tools:call_one", "tools:call_two"}
    types = {c["type"] for c in custom}
    assert {"task_started", "task_progress", "task_completed"} <= types
    completed = [c for c in custom if c["type"] == "task_completed"]
    assert {c["task_id"] for c in completed} == {"call_one", "call_two"}
    assert all(c["usage"]["total_tokens"] > 0 and c["subagent_type"] == "general-purpose" for c in completed)


async def test_a_long_model_call_reports_its_tokens_as_they_stream(home: Path, monkeypatch) -> None:
    """Between two steps, task_generating events say how much the sub-agent's model call has
    written so far, growing; the step that ends the call carries the real usage."""
    import herdsman.subagents.live as live

    monkeypatch.setattr(live, "INTERVAL", 0.0)  # every streamed chunk reports
    config = config_for(home)
    lead = lead_model([task("essay", "write", id="call_essay")], "ok")
    writer = ScriptedChatModel(responses=["word " * 40], stream_chunk_chars=20)
    from langgraph.checkpoint.memory import InMemorySaver

    from herdsman.agents.lead import create_lead_agent, run_config

    agent = create_lead_agent(config, model=lead, checkpointer=InMemorySaver(), model_overrides={"worker": writer})
    custom = [
        chunk
        async for _, mode, chunk in agent.astream(
            {"messages": [HumanMessage("go")]}, run_config(config, "live"), stream_mode=["custom"], subgraphs=True
        )
    ]
    generating = [c for c in custom if c["type"] == "task_generating"]
    assert [c["tokens"] for c in generating] == [5 * n for n in range(1, 11)]  # 20 characters a chunk
    assert all(c["task_id"] == "call_essay" and c["step"] == 1 for c in generating)
    kinds = [c["type"] for c in custom]
    assert kinds.index("task_started") < kinds.index("task_generating") < kinds.index("task_progress")
    # one model call, one step (the agent's later nodes repeat its message in the state)
    assert [c["step"] for c in custom if c["type"] == "task_progress"] == [1]


async def test_a_call_written_whole_at_the_end_reports_its_drafts(home: Path, monkeypatch) -> None:
    """A sub-agent on a model that sends its calls whole at the end (the embedded model) streams
    nothing while it writes one; its drafts are reported instead, naming the tool being written."""
    import herdsman.subagents.live as live

    monkeypatch.setattr(live, "INTERVAL", 0.0)
    config = config_for(home)
    lead = lead_model([task("notes", "write notes", id="call_notes")], "ok")
    sub = ScriptedChatModel(
        responses=[
            {
                "tool_calls": [
                    {
                        "name": "write_file",
                        "args": {"path": "/mnt/user-data/outputs/notes.md", "content": "some notes, " * 10},
                    }
                ]
            },
            "written",
        ],
        stream_chunk_chars=12,
        stream_call_drafts=True,
    )
    from langgraph.checkpoint.memory import InMemorySaver

    from herdsman.agents.lead import create_lead_agent, run_config

    agent = create_lead_agent(config, model=lead, checkpointer=InMemorySaver(), model_overrides={"worker": sub})
    custom = [
        chunk
        async for _, mode, chunk in agent.astream(
            {"messages": [HumanMessage("go")]}, run_config(config, "drafts"), stream_mode=["custom"], subgraphs=True
        )
    ]
    writing = [c for c in custom if c["type"] == "task_generating" and c.get("writing")]
    assert len(writing) > 3 and {c["writing"] for c in writing} == {"write_file"}
    assert (
        all(b["tokens"] >= a["tokens"] for a, b in zip(writing, writing[1:], strict=False))
        and writing[-1]["tokens"] > writing[0]["tokens"]
    )
    assert all(c["task_id"] == "call_notes" and c["step"] == 1 for c in writing)
    assert not any(c["type"] == "tool_call_draft" for c in custom)  # the drafts themselves stay inside the task
    assert [c["status"] for c in custom if c["type"] == "task_completed"] == ["completed"]


async def test_cancel_one_subagent_leaves_siblings(home: Path) -> None:
    config = config_for(home)
    lead = lead_model([task("stuck", "hang here", id="call_stuck"), task("fine", "quick", id="call_fine")], "ok")
    sub = worker(latency=0.05, hang={"hang here"})

    async with HerdsmanClient(config, model=lead, model_overrides={"worker": sub}) as client:
        assert not client.stop_subagent("t", "call_stuck")  # no run yet

        async def canceller() -> None:
            for _ in range(200):
                await asyncio.sleep(0.02)
                if client.stop_subagent("t", "call_stuck"):
                    return

        cancel = asyncio.create_task(canceller())
        events = [e async for e in client.stream("do the work", thread_id="t")]
        await cancel
        assert not client.stop_subagent("t", "call_stuck")  # the run is over
    results = {e.id: e for e in events if isinstance(e, ToolResult)}
    assert "cancelled" in results["call_stuck"].content
    assert "completed" in results["call_fine"].content
    assert kinds(events, "task_cancelled")
    assert events[-1].answer == "ok"


def test_cli_shows_each_subagent_live(tmp_path: Path) -> None:
    import yaml

    from tests.support import run_cli

    lead_script = tmp_path / "lead.yaml"
    lead_script.write_text(
        yaml.safe_dump(
            [
                {"tool_calls": [task("first part", "alpha"), task("second part", "beta", subagent_type="bash")]},
                "both parts done",
            ]
        )
    )
    worker_script = tmp_path / "worker.yaml"
    worker_script.write_text(yaml.safe_dump(["sub report"]))
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "home": "home",
                "lead": {"model": "lead", "model_retries": 0},
                "models": [
                    {"name": "lead", "use": "herdsman.models.scripted:ScriptedChatModel", "script": str(lead_script)},
                    {
                        "name": "worker",
                        "use": "herdsman.models.scripted:ScriptedChatModel",
                        "script": str(worker_script),
                        "on_exhausted": "repeat_last",
                    },
                ],
                "subagents": {"model": "worker"},
            }
        )
    )
    out = run_cli("run", "split the work", "--config", str(cfg), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "⧗ [general-purpose] first part started" in out.stdout
    assert "⧗ [bash] second part started" in out.stdout
    assert "✓ [general-purpose] first part completed" in out.stdout
    assert "✓ [bash] second part completed" in out.stdout
    assert "both parts done" in out.stdout


async def test_subagents_read_memory_but_cannot_write_it(home: Path) -> None:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.store.memory import InMemoryStore

    from herdsman.agents.lead import create_lead_agent, run_config
    from herdsman.memory.facts import Fact
    from herdsman.memory.service import MemoryService

    config = make_config(
        home,
        models=SUB_MODELS,
        lead={"model_retries": 0},
        subagents={"model": "worker"},
        memory={"enabled": True, "mode": "both", "debounce_seconds": 0},
    )
    # No memory model: the turns queued for learning stay in the queue, where the test reads them.
    service = MemoryService.open(config, store=InMemoryStore())
    service.store.put("default", Fact.new("The user deploys with Ansible every Friday", "behavior"))
    lead = lead_model([task("plan deploy", "plan the deploy")], "ok")
    sub = worker()
    agent = create_lead_agent(
        config, model=lead, checkpointer=InMemorySaver(), memory=service, model_overrides={"worker": sub}
    )
    await agent.ainvoke({"messages": [HumanMessage("deploy please")]}, run_config(config, "mem"))
    assert "memory" in lead.calls[0].tools  # the lead may write memory
    assert "Ansible" in sub.calls[0].messages[0].text  # the sub-agent reads it
    assert "memory" not in sub.calls[0].tools  # but has no way to write it
    # nor a turn queued for the memory model: only the lead's conversation is learned from
    queued = service.queue.claim()
    service.close()
    turns = [(u.thread_id, [{k: v for k, v in m.items() if k != "run_id"} for m in u.messages]) for u in queued]
    assert turns == [("mem", [{"role": "user", "content": "deploy please"}, {"role": "assistant", "content": "ok"}])]


async def test_a_small_subagent_gets_the_harness_for_doing_the_work(home: Path) -> None:
    """Sub-agents on a small model get what the lead gets: the small prompt, a first call forced
    to a tool, read before write, and the completion check with its forced plan (read, then edit)."""
    models = [{**m, "profile": "small"} if m["name"] == "worker" else m for m in SUB_MODELS]
    config = make_config(
        home, models=models, lead={"model_retries": 0, "verify_rounds": 2}, subagents={"model": "worker"}
    )
    notes = home / "threads" / "t-small" / "user-data" / "workspace" / "notes.txt"
    notes.parent.mkdir(parents=True)
    filler = "".join(f"line {i}\n" for i in range(50))  # too long to be shown with the refusal
    notes.write_text("old text\n" + filler)
    lead = lead_model([task("fix", "Change /mnt/user-data/workspace/notes.txt so that it says hi")], "ok")
    path = "/mnt/user-data/workspace/notes.txt"
    sub = ScriptedChatModel(
        responses=[
            {"tool_calls": [{"name": "write_file", "args": {"path": path, "content": "hi\n"}}]},  # not read: refused
            "Done, notes.txt says hi.",
            {"tool_calls": [{"name": "read_file", "args": {"path": path}}]},
            {"tool_calls": [{"name": "str_replace", "args": {"path": path, "old": "old text", "new": "hi"}}]},
            "Changed /mnt/user-data/workspace/notes.txt.",
        ]
    )
    await run(config, lead, {"worker": sub}, thread="t-small")
    assert "How to work:" in sub.calls[0].messages[0].text
    assert sub.calls[0].messages[1].text.startswith("Task: fix\n\nChange ")  # the description the prompt lacked
    assert [c.kwargs.get("tool_choice") for c in sub.calls] == ["any", None, "read_file", "str_replace", None]
    refusal = next(m for m in sub.calls[1].messages if isinstance(m, ToolMessage))
    assert "read" in refusal.text.lower() and refusal.status == "error"
    note = [m.text for m in sub.calls[2].messages if isinstance(m, HumanMessage) and m.name == "harness"]
    assert note and "but it was not changed" in note[0]
    assert notes.read_text() == "hi\n" + filler


async def test_a_small_subagent_is_told_the_deliverable_the_leads_prompt_left_out(home: Path) -> None:
    """The user asks for outputs/team.json; the small lead's task prompt names no path. The small
    sub-agent's opening says where to deliver; a prompt that names it is left as it is."""
    models = [{**m, "profile": "small"} if m["name"] == "worker" else m for m in SUB_MODELS]
    config = make_config(
        home, models=models, lead={"model_retries": 0, "verify_rounds": 0}, subagents={"model": "worker"}
    )
    out = "/mnt/user-data/outputs/team.json"
    lead = lead_model(
        [task("names", "Make a JSON list of the names in team.txt, sorted"), task("again", f"Write {out}")], "ok"
    )
    sub = ScriptedChatModel(responses=["done"], on_exhausted="repeat_last")
    await run(
        config,
        lead,
        {"worker": sub},
        thread="t-deliver",
        message=f"Delegate to a sub-agent: create {out}, a JSON list of the names in team.txt sorted alphabetically.",
    )
    [left_out] = [c.messages[1].text for c in sub.calls if "Make a JSON list" in c.messages[1].text]
    [named] = [c.messages[1].text for c in sub.calls if f"Write {out}" in c.messages[1].text]
    assert left_out.endswith(f"Deliver to: {out} (named in the user's request).")
    assert "Deliver to" not in named


def test_a_prompt_copied_from_the_tools_own_instructions_becomes_the_description() -> None:
    """From the benchmark: a small lead's task prompt was the task tool's own instructions."""
    from herdsman.subagents.tools import own_prompt

    copied = (
        "Write a complete prompt: the goal, the inputs (file paths), constraints, and what to produce "
        "(e.g. a file under /mnt/user-data/outputs). Call task several times in one reply to run independent parts in parallel."
    )
    assert (
        own_prompt("Fix hello.py so that it prints hello world.", copied)
        == "Fix hello.py so that it prints hello world."
    )
    assert own_prompt("Fix hello.py", "Fix /mnt/user-data/workspace/hello.py; write the goal down first.") == (
        "Fix /mnt/user-data/workspace/hello.py; write the goal down first."
    )


def test_the_leads_result_text_holds_no_time_or_token_numbers() -> None:
    """From the benchmark: asked for a word count, the small lead answered with the sub-agent's
    "16,945 tokens". The numbers stay in the artifact; the text has the status, files and answer."""
    from herdsman.subagents.result import TaskResult

    result = TaskResult(
        "t1",
        "general-purpose",
        "Count the words",
        "completed",
        answer="173",
        files_written=["/mnt/user-data/outputs/words.txt"],
        usage={"total_tokens": 16945},
        duration_s=64.9,
        queued_s=2.5,
        attempts=2,
    )
    text = result.to_text()
    assert (
        text.splitlines()[0]
        == "[general-purpose] Count the words: completed after 2 attempts (it waited for a free slot)"
    )
    assert "16" not in text and "64" not in text and text.endswith("Result:\n173")


@pytest.mark.parametrize("retries", [0, 1])
async def test_an_answer_the_completion_check_rejects_is_rolled_back_and_retried(home: Path, retries: int) -> None:
    """The worker writes a scratch file instead of the summary it was asked to save and answers
    'done', even after the check's note: its attempt is rejected, scratch.txt is undone and the
    backup model starts from clean files and saves the summary. Without retries the answer stands,
    with what the check found attached."""
    outputs = Path(home, "threads", "t", "user-data", "outputs")

    def sloppy(messages: list[Any]) -> Any:
        if not any(isinstance(m, ToolMessage) for m in messages):
            return {
                "tool_calls": [
                    {"name": "write_file", "args": {"path": "/mnt/user-data/outputs/scratch.txt", "content": "notes"}}
                ]
            }
        return "done"

    seen_by_retry: list[list[str]] = []

    def careful(messages: list[Any]) -> Any:
        if not any(isinstance(m, ToolMessage) for m in messages):
            seen_by_retry.append(sorted(p.name for p in outputs.iterdir()))
            return {
                "tool_calls": [
                    {
                        "name": "write_file",
                        "args": {"path": "/mnt/user-data/outputs/summary.txt", "content": "the summary"},
                    }
                ]
            }
        return "saved the summary"

    config = make_config(
        home,
        models=SUB_MODELS,
        lead={"model_retries": 0, "verify_rounds": 1},
        subagents={"model": "worker", "retries": retries, "fallback_model": "backup"},
    )
    prompt = "Write a summary and save it to /mnt/user-data/outputs/summary.txt"
    lead = lead_model([task("Summarize", prompt, id="call_sum")], "ok")
    events = await run(
        config, lead, {"worker": ScriptedChatModel(respond=sloppy), "backup": ScriptedChatModel(respond=careful)}
    )
    final = kinds(events, "task_completed")[-1]
    answer = next(e.content for e in events if isinstance(e, ToolResult) and e.name == "task")
    if retries == 0:
        assert answer.endswith("Result:\ndone") and final["attempts"] == 1
        assert any("summary.txt" in p for p in final["unresolved"])
        assert final["unresolved_rules"] == ["path.missing"]  # a path under outputs the request named: any language
        assert (outputs / "scratch.txt").exists()  # nothing to retry, nothing undone
        return
    rejected = next(d for d in kinds(events, "task_failed") if d.get("will_retry"))
    assert rejected["rejected"] is True and "summary.txt" in rejected["error"]
    assert rejected["rolled_back"] == ["/mnt/user-data/outputs/scratch.txt"]
    assert seen_by_retry == [[]]  # the retry began from the files as they were before the task
    assert answer.endswith("Result:\nsaved the summary") and final["attempts"] == 2 and final["unresolved"] == []
    assert (outputs / "summary.txt").read_text() == "the summary" and not (outputs / "scratch.txt").exists()


async def test_a_failed_attempt_is_rolled_back_before_its_retry_and_siblings_keep_theirs(home: Path) -> None:
    """'wreck' writes two files, one of them also written by its sibling, then its model breaks;
    before the retry its own file is gone, the shared one and the sibling's stay."""
    outputs = Path(home, "threads", "t", "user-data", "outputs")

    def flaky(messages: list[Any]) -> Any:
        prompt = next(m for m in messages if isinstance(m, HumanMessage)).text.splitlines()[0]
        done = [m for m in messages if isinstance(m, ToolMessage)]
        if prompt == "wreck" and not done:
            return {
                "tool_calls": [
                    {"name": "write_file", "args": {"path": "/mnt/user-data/outputs/half.txt", "content": "half done"}},
                    {"name": "bash", "args": {"command": "echo wreck >> /mnt/user-data/outputs/shared.txt"}},
                ]
            }
        if prompt == "wreck":
            return {"error": "model broke after writing"}
        if prompt == "sibling" and not done:
            return {
                "tool_calls": [
                    {"name": "write_file", "args": {"path": "/mnt/user-data/outputs/sibling.txt", "content": "mine"}},
                    {"name": "bash", "args": {"command": "echo sibling >> /mnt/user-data/outputs/shared.txt"}},
                ]
            }
        return "sibling done"

    seen_by_retry: list[list[str]] = []

    def backup_reply(messages: list[Any]) -> Any:
        seen_by_retry.append(sorted(p.name for p in outputs.iterdir()))
        return "retried from a clean state"

    config = config_for(home, retries=1, fallback_model="backup", max_concurrent=2)
    config.sandbox.allow_unisolated_bash = True
    lead = lead_model([task("sibling", "sibling", id="call_sib"), task("wreck", "wreck", id="call_wreck")], "ok")
    primary = ScriptedChatModel(respond=flaky, latency=0.2)
    backup = ScriptedChatModel(respond=backup_reply)
    events = await run(config, lead, {"worker": primary, "backup": backup})
    retry = next(d for d in kinds(events, "task_failed") if d.get("will_retry"))
    assert retry["rolled_back"] == ["/mnt/user-data/outputs/half.txt"]
    # both appended to shared.txt with bash: whose change it is cannot be told apart, so it stays
    assert "/mnt/user-data/outputs/shared.txt" in retry["kept_for_siblings"]
    assert seen_by_retry == [["shared.txt", "sibling.txt"]]  # half.txt undone before the retry began
    assert (outputs / "sibling.txt").read_text() == "mine"
    assert "sibling" in (outputs / "shared.txt").read_text()
