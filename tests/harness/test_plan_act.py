"""The plan/act loop: a multi-step request gets a plan the harness keeps in state; the model sees
one step at a time; each step is checked (its file, its last tool call, else a short verdict)
before the next; a reply that skips a step is sent back once per step; one-step requests are
left alone; the plan streams as state and stays in the checkpoint."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import HumanMessage

from herdsman.agents.lead import run_config
from herdsman.client import HerdsmanClient
from herdsman.middleware.step_limit import stop_message
from herdsman.models.scripted import ScriptedChatModel
from tests.support import make_config

SMALL = {
    "local_model": {"profile": "small"},
    "context": {"hide_unavailable_tools": False},
    "lead": {"plan_act": "auto"},
}
WS = "/mnt/user-data/workspace"
REQUEST = "Read data.csv and add up the amount column. Write the total to total.txt, then write a one-line summary to summary.md."
PLAN = {
    "tool_calls": [
        {
            "name": "make_plan",
            "args": {
                "steps": [
                    {"step": "Read data.csv"},
                    {"step": "Write the total", "path": "total.txt"},
                    {"step": "Write a one-line summary", "path": "summary.md"},
                ]
            },
        }
    ]
}


def call(name: str, **args: object) -> dict:
    return {"tool_calls": [{"name": name, "args": args}]}


def workspace(home: Path, thread: str) -> Path:
    path = home / "threads" / thread / "user-data" / "workspace"
    path.mkdir(parents=True, exist_ok=True)
    (path / "data.csv").write_text("item,amount\na,1\nb,2\nc,3\n")
    return path


def plan_view(model: ScriptedChatModel, index: int) -> str:
    """The plan as the model read it in call ``index`` (its view ends with it)."""
    last = model.calls[index].messages[-1]
    assert isinstance(last, HumanMessage) and last.name == "harness" and last.text.startswith("[plan]")
    return last.text


def notes(messages: list) -> list[HumanMessage]:
    return [m for m in messages if isinstance(m, HumanMessage) and m.name == "harness"]


async def run(home: Path, thread: str, message: str, model: ScriptedChatModel, **sections) -> dict:
    async with HerdsmanClient(
        make_config(home, **{**SMALL, **sections, "lead": {**SMALL["lead"], **sections.get("lead", {})}}), model=model
    ) as client:
        [e async for e in client.stream(message, thread_id=thread)]
        state = await client.agent.aget_state({"configurable": {"thread_id": thread}})
    return state.values


async def test_steps_advance_as_their_files_appear(home: Path) -> None:
    ws = workspace(home, "t-plan1")
    model = ScriptedChatModel(
        responses=[
            PLAN,
            call("read_file", path=f"{WS}/data.csv"),
            call("write_file", path=f"{WS}/total.txt", content="6"),
            call("write_file", path=f"{WS}/summary.md", content="Three items, 6 in all."),
            "The total is 6; both files are written.",
        ]
    )
    config = make_config(home, **SMALL)
    updates, streamed = [], []
    async with HerdsmanClient(config, model=model) as client:
        async for mode, chunk in client.agent.astream(
            {"messages": [HumanMessage(REQUEST)]},
            run_config(config, "t-plan1"),
            stream_mode=["updates", "messages"],
        ):
            if mode == "messages":
                streamed += [c.get("name") for c in getattr(chunk[0], "tool_call_chunks", [])]
            else:
                updates += [u["plan"] for u in chunk.values() if isinstance(u, dict) and u.get("plan")]
        state = (await client.agent.aget_state({"configurable": {"thread_id": "t-plan1"}})).values

    assert (ws / "total.txt").read_text() == "6" and (ws / "summary.md").exists()
    first = model.calls[0]
    assert first.tools == ["make_plan"] and first.kwargs.get("tool_choice") == "make_plan"
    assert REQUEST in first.messages[-1].text
    assert plan_view(model, 1).startswith("[plan] Step 1 of 3: Read data.csv")
    assert plan_view(model, 2).startswith("[plan] Step 2 of 3: Write the total (it must produce total.txt)")
    assert "Done: 1. Read data.csv" in plan_view(model, 2)
    assert plan_view(model, 3).startswith("[plan] Step 3 of 3: Write a one-line summary")
    assert not model.calls[4].messages[-1].text.startswith("[plan]")  # the plan is over: no view
    assert len(model.calls) == 5
    assert [s["status"] for s in state["plan"]["steps"]] == ["done", "done", "done"]
    assert not notes(state["messages"])  # the views are not stored in the thread
    # the plan streams as the state key "plan", not as the model's planning call; a client sees
    # each step done in turn
    assert "read_file" in streamed and "make_plan" not in streamed
    progress = [[s["status"] for s in p["steps"]] for p in updates]
    assert progress[0] == ["current", "pending", "pending"]
    assert ["done", "current", "pending"] in progress and ["done", "done", "current"] in progress
    assert progress[-1] == ["done", "done", "done"]


async def test_a_reply_that_skips_a_step_is_sent_back_and_the_model_continues(home: Path) -> None:
    ws = workspace(home, "t-plan2")
    model = ScriptedChatModel(
        responses=[
            PLAN,
            call("write_file", path=f"{WS}/total.txt", content="6"),
            "The total is 6.",  # stops without the summary
            call("write_file", path=f"{WS}/summary.md", content="Three items, 6 in all."),
            "Done: total.txt and summary.md.",
        ]
    )
    state = await run(home, "t-plan2", REQUEST, model)

    assert (ws / "summary.md").read_text() == "Three items, 6 in all."
    [note] = notes(state["messages"])
    assert "Step 3 of 3 is not done" in note.text and "summary.md does not exist yet" in note.text
    [finding] = note.additional_kwargs["herdsman_findings"]
    assert finding["rule"] == "plan.step_not_done" and finding["step"] == 3 and finding["path"] == "summary.md"
    assert model.calls[3].kwargs.get("tool_choice") == "any"  # after the note on a missing file: a tool call
    assert state["messages"][-1].text == "Done: total.txt and summary.md."
    assert [s["status"] for s in state["plan"]["steps"]] == ["done", "done", "done"]


async def test_a_step_structure_cannot_settle_is_judged_by_the_model(home: Path) -> None:
    """Steps without files: a successful tool call settles one; when the model stops on a step
    with no tool call since it began, a forced verdict says whether it is done."""
    ws = workspace(home, "t-plan3")
    (ws / "notes.txt").write_text("a\nb\nc\n")
    message = "List the files in the workspace. Then count the lines of notes.txt and tell me the count."
    model = ScriptedChatModel(
        responses=[
            {
                "tool_calls": [
                    {
                        "name": "make_plan",
                        "args": {
                            "steps": [
                                {"step": "List the workspace"},
                                {"step": "Count the lines of notes.txt"},
                                {"step": "Tell the count"},
                            ]
                        },
                    }
                ]
            },
            call("ls", path=WS),
            "There are 2 files.",  # stops before counting
            {
                "tool_calls": [
                    {"name": "report_progress", "args": {"first_open_step": 2, "missing": "run wc -l on notes.txt"}}
                ]
            },
            call("bash", command=f"wc -l {WS}/notes.txt"),
            "notes.txt has 3 lines.",
        ]
    )
    state = await run(home, "t-plan3", message, model)

    verdict = model.calls[3]
    assert verdict.tools == ["report_progress"] and "2. Count the lines of notes.txt" in verdict.messages[-1].text
    [note] = notes(state["messages"])
    assert "Step 2 of 3 is not done" in note.text and "run wc -l on notes.txt" in note.text
    assert model.calls[4].kwargs.get("tool_choice") in (None, "auto")  # a judged step may need no tool
    assert len(model.calls) == 6 and state["messages"][-1].text == "notes.txt has 3 lines."
    assert [s["status"] for s in state["plan"]["steps"]] == ["done", "done", "done"]


async def test_a_one_step_request_gets_no_plan_and_no_extra_call(home: Path) -> None:
    workspace(home, "t-plan4")
    model = ScriptedChatModel(responses=[call("bash", command=f"wc -l {WS}/data.csv"), "4 lines."])
    state = await run(home, "t-plan4", "How many lines does data.csv have?", model)
    assert len(model.calls) == 2 and all("make_plan" not in c.tools for c in model.calls)
    assert not (state.get("plan") or {}).get("steps")
    assert not any(m.text.startswith("[plan]") for c in model.calls for m in c.messages)

    # a request whose shape may hold steps is planned; a plan of one step is no plan
    model = ScriptedChatModel(
        responses=[
            {"tool_calls": [{"name": "make_plan", "args": {"steps": [{"step": "Count the lines of data.csv"}]}}]},
            call("bash", command=f"wc -l {WS}/data.csv"),
            "4 lines.",
        ]
    )
    state = await run(home, "t-plan4", "Look at data.csv. How many lines does it have?", model)
    assert len(model.calls) == 3 and state["plan"]["steps"] == []
    assert not any(m.text.startswith("[plan]") for c in model.calls[1:] for m in c.messages)
    assert state["messages"][-1].text == "4"  # the small profile's value answer: the value wc printed
    assert state["messages"][-1].additional_kwargs["herdsman_value"]["answer"] == "4 lines."


async def test_a_plan_never_finished_ends_within_its_bound(home: Path) -> None:
    """A model that keeps answering without doing the steps is told once per step, then its
    answer goes out with the steps left open; a model that never stops is ended by the step limit,
    and the plan keeps what was not done."""
    workspace(home, "t-plan5")
    lazy = ScriptedChatModel(responses=[PLAN], on_exhausted="repeat_last")
    lazy.responses.append("All done.")
    state = await run(home, "t-plan5", REQUEST, lazy)
    assert state["messages"][-1].text == "All done."
    assert len(notes(state["messages"])) <= 3 and len(lazy.calls) <= 1 + 3 + 1
    assert "open" in [s["status"] for s in state["plan"]["steps"]]
    assert "done" not in [s["status"] for s in state["plan"]["steps"]][1:]

    workspace(home, "t-plan6")
    busy = ScriptedChatModel(responses=[PLAN, call("ls", path=WS)], on_exhausted="repeat_last")
    state = await run(home, "t-plan6", REQUEST, busy, lead={"max_steps": 4})
    assert state["messages"][-1].text == stop_message(4)
    assert [s["status"] for s in state["plan"]["steps"]][1:] == ["open", "open"]


async def test_the_plan_stays_in_the_checkpoint(home: Path) -> None:
    """The plan is thread state: a new client on the same SQLite checkpoints reads it back."""
    workspace(home, "t-plan7")
    model = ScriptedChatModel(
        responses=[
            PLAN,
            call("write_file", path=f"{WS}/total.txt", content="6"),
            "The total is 6.",
            "I could not write the summary.",
        ]
    )
    sqlite = {"checkpointer": {"type": "sqlite", "path": str(home / "cp.sqlite")}}
    await run(home, "t-plan7", REQUEST, model, **sqlite)
    async with HerdsmanClient(
        make_config(home, **{**SMALL, **sqlite}), model=ScriptedChatModel(responses=[])
    ) as client:
        state = (await client.agent.aget_state({"configurable": {"thread_id": "t-plan7"}})).values
    plan = state["plan"]
    assert [s["status"] for s in plan["steps"]] == ["done", "done", "open"]
    assert plan["steps"][1]["path"] == "total.txt" and plan["noted"] == [2]


def test_the_shape_of_a_request_decides_whether_it_is_planned() -> None:
    """Sentences (Latin or CJK full stops), list items or two files named: maybe several steps;
    one sentence about at most one file: one step, no planning call."""
    from herdsman.turns.plan_state import may_have_steps

    assert not may_have_steps("How many lines does notes.txt have?")
    assert not may_have_steps("Copy report.md from the workspace to /mnt/user-data/outputs/report.md.")
    assert not may_have_steps("notes.txt 有多少行？")
    assert may_have_steps("Read data.csv and sum the amounts. Save the total to total.txt.")
    assert may_have_steps("读取data.csv，计算金额总和。把结果写入total.txt。")
    assert may_have_steps("Do this:\n- list the folder\n- count the files")


def test_a_step_path_counts_only_when_the_request_names_that_file() -> None:
    from herdsman.turns.plan_state import new_plan

    request = "把结果写入/mnt/user-data/outputs/total.txt，然后总结到summary.md。"
    plan = new_plan(
        "r",
        [
            {"step": "compute", "path": "total.txt"},
            {"step": "summarize", "path": "summary.md"},
            {"step": "extra", "path": "made_up.txt"},
        ],
        request,
        None,
    )
    assert [s["path"] for s in plan["steps"]] == ["/mnt/user-data/outputs/total.txt", "summary.md", None]
    assert [s["status"] for s in plan["steps"]] == ["current", "pending", "pending"]
    assert new_plan("r", [{"step": "only one"}], request, None)["steps"] == []


async def test_a_client_of_the_gateway_sees_the_plan(home: Path) -> None:
    """Through the LangGraph API (the official SDK): the plan streams in the run's values events
    and is in the thread's state."""
    from langgraph_sdk import get_client

    from tests.gateway.gateway_support import running_gateway, user_message

    model = ScriptedChatModel(
        responses=[
            PLAN,
            call("write_file", path=f"{WS}/total.txt", content="6"),
            call("write_file", path=f"{WS}/summary.md", content="Three items, 6 in all."),
            "Done.",
        ]
    )
    with running_gateway(make_config(home, **SMALL), model=model) as served:
        sdk = get_client(url=served.url, api_key=None)
        try:
            thread = await sdk.threads.create()
            workspace(home, thread["thread_id"])
            seen = []
            async for part in sdk.runs.stream(
                thread["thread_id"], "lead_agent", input=user_message(REQUEST), stream_mode="values"
            ):
                if part.event == "values" and (part.data or {}).get("plan"):
                    seen.append([s["status"] for s in part.data["plan"]["steps"]])
            state = await sdk.threads.get_state(thread["thread_id"])
        finally:
            await sdk.aclose()
    assert seen[0] == ["current", "pending", "pending"] and seen[-1] == ["done", "done", "done"]
    assert ["done", "done", "current"] in seen
    assert [s["path"] for s in state["values"]["plan"]["steps"]] == [None, "total.txt", "summary.md"]


async def test_the_plan_is_checked_before_the_completion_check(home: Path) -> None:
    """With the completion check on: an open step is named first; once the plan is over (here:
    left open after its note), the completion check reviews the final reply as before; the step
    whose file it then gets made counts as done."""
    ws = workspace(home, "t-plan8")
    model = ScriptedChatModel(
        responses=[
            PLAN,
            call("write_file", path=f"{WS}/total.txt", content="6"),
            "The total is 6.",
            "The total is 6.",  # again, after the plan's note: the plan is left open
            call("write_file", path=f"{WS}/summary.md", content="Three items, 6 in all."),
            "Done: total.txt and summary.md.",
        ],
        on_exhausted="repeat_last",
    )
    state = await run(home, "t-plan8", REQUEST, model, lead={"verify_rounds": 2})
    said = [m.text for m in notes(state["messages"])]
    assert said[0].startswith("[harness plan] Step 3 of 3 is not done") and said[1].startswith("[harness check]")
    assert not any(s.startswith("[harness plan]") for s in said[1:]) and (ws / "summary.md").exists()
    assert state["messages"][-1].text == "Done: total.txt and summary.md."
    assert [s["status"] for s in state["plan"]["steps"]] == ["done", "done", "done"]


async def test_a_verdict_that_all_is_done_lets_the_reply_go_out(home: Path) -> None:
    """Steps written as bare strings are taken; when the verdict finds every open step done,
    the reply goes out with no note."""
    ws = workspace(home, "t-plan9")
    (ws / "notes.txt").write_text("a\nb\nc\n")
    model = ScriptedChatModel(
        responses=[
            {
                "tool_calls": [
                    {
                        "name": "make_plan",
                        "args": {"steps": ["List the workspace", "Count the lines", "Tell the count"]},
                    }
                ]
            },
            call("ls", path=WS),
            "There are 2 files; notes.txt has 3 lines.",
            {"tool_calls": [{"name": "report_progress", "args": {"first_open_step": 0}}]},
        ]
    )
    state = await run(home, "t-plan9", "List the workspace. Then count the lines of notes.txt.", model)
    assert len(model.calls) == 4 and not notes(state["messages"])
    assert state["messages"][-1].text == "There are 2 files; notes.txt has 3 lines."
    assert [s["status"] for s in state["plan"]["steps"]] == ["done", "done", "done"]
