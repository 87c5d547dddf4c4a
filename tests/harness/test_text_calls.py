"""A tool call the model wrote as text is a failed step, never the agent's answer: the model
guard marks it, the run's events and its final answer say so, and the raw call is not streamed
as words."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage

from herdsman.client import HerdsmanClient, RunFinished, TextCall, TextDelta
from herdsman.models.scripted import ScriptedChatModel
from herdsman.runtime.runs.final_answer import final_answer
from herdsman.turns.text_calls import CALL_AS_TEXT_KEY, call_start, calls_as_text, written_calls
from tests.support import make_config

RAW = '<tool_call>\n{"name": "lighthouse_explainer", "arguments": {"words": 300}}\n</tool_call>'


def test_calls_written_as_text_are_found_in_any_form_and_named() -> None:
    tools = ["bash", "read_file"]
    assert written_calls(RAW, tools) == ["lighthouse_explainer"]
    assert written_calls('Sure: {"name": "bash", "arguments": {"command": "ls"}}', tools) == ["bash"]
    assert written_calls('<read_file path="/mnt/user-data/workspace/a.txt">', tools) == ["read_file"]
    assert written_calls("<tool_call>\n{broken", tools) == ["?"]
    assert written_calls("光以每秒三十万公里传播。灯塔用透镜把光聚成一束。", tools) == []
    assert written_calls('The totals are {"north": 2.5, "name": "x"}.', tools) == []
    assert call_start("Here it is.\n" + RAW) == len("Here it is.\n") and call_start("plain") is None


def test_the_final_answer_of_a_run_that_ended_on_a_call_written_as_text_says_so() -> None:
    marked = AIMessage(RAW, additional_kwargs={CALL_AS_TEXT_KEY: ["lighthouse_explainer"]})
    answer = final_answer([marked])
    assert "<tool_call>" not in answer and "lighthouse_explainer" in answer and "not run" in answer
    assert (
        final_answer([AIMessage("A lighthouse turns a lamp's light into a beam.")])
        == "A lighthouse turns a lamp's light into a beam."
    )
    as_json = {"type": "ai", "content": RAW, "additional_kwargs": {CALL_AS_TEXT_KEY: ["x"]}}
    assert "<tool_call>" not in final_answer([as_json])


async def test_a_run_whose_reply_is_a_call_written_as_text_shows_a_failed_step_not_the_call(home: Path) -> None:
    """The model answers a question with a call of a tool that does not exist (a skill's name),
    written as text; with no completion check, the run ends there: its events name the failed
    step, no word of the raw call streams as the answer, and the final answer says it was not run."""
    config = make_config(home)
    model = ScriptedChatModel(responses=[f"Let me use the skill.\n{RAW}"])
    async with HerdsmanClient(config, model=model) as client:
        events = [
            e async for e in client.stream("Explain in about 300 words how a lighthouse works.", thread_id="t-raw")
        ]
        messages = await client.messages("t-raw")
    streamed = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert (
        "Let me use the skill." in streamed and "<tool_call>" not in streamed and "lighthouse_explainer" not in streamed
    )
    steps = [e for e in events if isinstance(e, TextCall)]
    assert [s.names for s in steps] == [["lighthouse_explainer"]]
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert "<tool_call>" not in finished.answer and "not run" in finished.answer
    assert calls_as_text(messages[-1]) == ["lighthouse_explainer"]  # the thread keeps the mark for renderers


async def test_a_plain_answer_is_not_marked(home: Path) -> None:
    config = make_config(home)
    model = ScriptedChatModel(responses=["A lighthouse focuses a lamp through a Fresnel lens."])
    async with HerdsmanClient(config, model=model) as client:
        finished = await client.run("How does a lighthouse work?", thread_id="t-plain")
        messages = await client.messages("t-plain")
    assert finished.answer == "A lighthouse focuses a lamp through a Fresnel lens."
    assert calls_as_text(messages[-1]) is None
