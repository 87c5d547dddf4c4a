"""A fresh answer: when the model repeats, word for word, an answer the completion check sent back
for its wording alone, the harness asks it once more with only the request, the tool results and
the check's findings, and that answer replaces the repeated one (which is kept). A note about
something else (a file to make) is left alone."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from herdsman.client import HerdsmanClient
from herdsman.middleware.fresh_answer import FRESH_KEY, MAX_TOKENS, same_answer
from herdsman.models.scripted import ScriptedChatModel
from tests.support import make_config

WS = "/mnt/user-data/workspace"


def call(name: str, **args: object) -> dict:
    return {"tool_calls": [{"name": name, "args": args}]}


async def run(
    home: Path, thread: str, message: str, model: ScriptedChatModel, fresh: str = "auto", **lead: str
) -> list:
    ws = home / "threads" / thread / "user-data" / "workspace"
    (ws / "docs" / "old").mkdir(parents=True, exist_ok=True)
    (ws / "docs" / "old" / "notes.md").write_text("# notes\n")
    (ws / "docs" / "readme.txt").write_text("hello\n")
    config = make_config(
        home,
        local_model={"profile": "small"},
        context={"hide_unavailable_tools": False},
        lead={"fresh_answers": fresh, "value_answers": "off", "verify_rounds": 2, **lead},
    )
    async with HerdsmanClient(config, model=model) as client:
        [e async for e in client.stream(message, thread_id=thread)]
        state = await client.agent.aget_state({"configurable": {"thread_id": thread}})
    return state.values["messages"]


QUESTION = f"Is there a file named notes.md anywhere below {WS}/docs? Answer yes or no."


async def test_a_repeated_sent_back_answer_is_asked_again_without_the_conversation(home: Path) -> None:
    model = ScriptedChatModel(responses=[call("ls", path=f"{WS}/docs"), "No", "No.", "Yes"])
    messages = await run(home, "t-f1", QUESTION, model)
    answer = messages[-1]
    assert isinstance(answer, AIMessage) and answer.text == "Yes"
    assert answer.additional_kwargs[FRESH_KEY] == "No."  # the repeated answer is kept
    fresh = model.calls[-1]
    assert fresh.tools == [] and [type(m) for m in fresh.messages] == [SystemMessage, HumanMessage]
    assert fresh.kwargs["max_tokens"] == MAX_TOKENS  # an answer, not an essay
    brief = fresh.messages[-1].text
    assert QUESTION in brief and f"{WS}/docs/old/notes.md" in brief  # the request and the listing
    assert "Your answer says no" in brief  # the check's finding
    assert len(model.calls) == 4


async def test_a_chinese_request_answered_twice_in_english_gets_its_answer_in_chinese(home: Path) -> None:
    model = ScriptedChatModel(
        responses=[
            call("read_file", path=f"{WS}/docs/readme.txt"),
            "The file holds one line, the word hello.",
            "The file holds one line, the word hello.",
            "文件内容是 hello。",
        ]
    )
    messages = await run(home, "t-f2", f"请告诉我文件 {WS}/docs/readme.txt 里面写了什么内容？", model)
    assert messages[-1].text == "文件内容是 hello。"
    assert "in the language of the question" in model.calls[-1].messages[0].text


async def test_an_answer_repeated_after_looking_again_is_asked_again_too(home: Path) -> None:
    model = ScriptedChatModel(
        responses=[
            call("ls", path=f"{WS}/docs"),
            "No",
            call("ls", path=f"{WS}/docs/old"),
            "No",
            "Yes, docs/old/notes.md",
        ]
    )
    messages = await run(home, "t-f3", QUESTION, model)
    assert messages[-1].text == "Yes, docs/old/notes.md" and messages[-1].additional_kwargs[FRESH_KEY] == "No"
    assert f"[ls result]\n{WS}/docs/old/notes.md" in model.calls[-1].messages[-1].text  # the newer listing too


async def test_a_note_that_asks_for_a_file_is_not_about_the_answer(home: Path) -> None:
    needs_a_file = ScriptedChatModel(responses=["Done.", "Done.", "Done."])
    await run(home, "t-f4", "Write the word hi into /mnt/user-data/outputs/hi.txt", needs_a_file)
    assert all(c.tools for c in needs_a_file.calls)  # every call was the agent's own


async def test_off_leaves_the_repeated_answer(home: Path) -> None:
    model = ScriptedChatModel(responses=[call("ls", path=f"{WS}/docs"), "No", "No."])
    assert (await run(home, "t-f5", QUESTION, model, fresh="off"))[-1].text == "No."
    assert len(model.calls) == 3


def test_the_same_answer_is_the_same_words() -> None:
    assert same_answer("No", "no.") and same_answer("文件 是 hello", "文件 是 hello。")
    assert not same_answer("No", "No, it is not there") and not same_answer("...", "...")


async def test_a_pick_repeated_under_the_harness_query_that_printed_another_is_asked_again(home: Path) -> None:
    """Asked which item has the least stock, the model read the table and answered by eye; the
    check's own query printed another item, and the model repeated its first pick: a fresh
    context answers from the query's output."""
    ws = home / "threads" / "t-f6" / "user-data" / "workspace"
    ws.mkdir(parents=True)
    (ws / "stock.csv").write_text("item,qty\ntea,79\nrice,40\noil,1\nflour,12\n")
    model = ScriptedChatModel(responses=[call("read_file", path=f"{WS}/stock.csv"), "tea", "tea", "oil"])
    question = f"Which item in {WS}/stock.csv has the least qty? Just the name."
    messages = await run(home, "t-f6", question, model, intent_rules="on", run_shown_code="on")
    assert messages[-1].text == "oil" and messages[-1].additional_kwargs[FRESH_KEY] == "tea"
    brief = model.calls[-1].messages[-1].text
    assert "oil\n(qty = 1, the least of 4 rows)" in brief  # the harness's query, the fresh answer's ground
