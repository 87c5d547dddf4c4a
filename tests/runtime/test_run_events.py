"""What the run manager reads from a run's stream: how sub-agents ended, counted once each."""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage

from herdsman.runtime.runs.run_events import EventTranslator, subagent_outcome
from herdsman.runtime.streaming.serde import dumps


def test_a_sub_agent_retried_after_a_failure_is_counted_once_as_completed() -> None:
    events = [
        {"type": "task_started", "task_id": "a", "attempt": 1},
        {"type": "task_failed", "task_id": "a", "attempt": 1, "error": "boom", "will_retry": True},
        {"type": "task_started", "task_id": "a", "attempt": 2},
        {"type": "task_completed", "task_id": "a", "status": "completed"},
        {"type": "task_started", "task_id": "b", "attempt": 1},
        {"type": "task_failed", "task_id": "b", "status": "failed", "error": "boom"},
        "not a task event",
    ]
    assert [o for e in events if (o := subagent_outcome(e))] == ["completed", "failed"]


def test_events_are_the_json_the_stream_sends_and_big_integers_stay_exact() -> None:
    """A chunk is encoded once for the stream: the text parses back to the message as LangChain
    dumps it, and an integer beyond 64 bits (a tool call's argument) is not rounded to a float."""
    call = {"name": "count", "args": {"n": 2**70}, "id": "call-1", "type": "tool_call"}
    message = AIMessage(content="", id="ai-1", tool_calls=[call])
    translator = EventTranslator(["values", "messages-tuple", "messages"])

    events = translator.translate((), "values", {"messages": [message]})
    events += translator.translate((), "messages", (message, {"langgraph_node": "model"}))
    texts = {name: dumps(data) for name, data in events}

    assert set(texts) == {"values", "messages", "messages/metadata", "messages/complete"}
    assert json.loads(texts["values"])["messages"] == [message.model_dump()]
    assert json.loads(texts["messages"]) == [message.model_dump(), {"langgraph_node": "model"}]
    assert json.loads(texts["messages/metadata"]) == {"ai-1": {"metadata": {"langgraph_node": "model"}}}
    assert json.loads(texts["messages/complete"])[0]["tool_calls"][0]["args"] == {"n": 2**70}
    assert '"n":1180591620717411303424' in texts["values"]
