"""A tool call being written, through the official langgraph-sdk client: a model that sends its
calls whole at the end (the embedded model) sends drafts of the call on the ``custom`` stream
meanwhile, and ``messages-tuple`` and ``values`` still carry the call that ran."""

from __future__ import annotations

import json

import pytest

from tests.gateway.gateway_support import HeldModel, reply, user_message


@pytest.fixture
def model() -> HeldModel:
    """The scripted agent, writing its calls as the embedded model does: drafts, then the call whole."""
    return HeldModel(respond=reply, stream_chunk_chars=4, stream_call_drafts=True)


async def test_drafts_of_the_call_arrive_on_the_custom_stream_then_the_call(client) -> None:
    thread = await client.threads.create()
    parts = [
        p
        async for p in client.runs.stream(
            thread["thread_id"], "lead_agent", input=user_message("write haiku.txt an old silent pond"),
            stream_mode=["values", "messages-tuple", "custom"],
        )
    ]
    events = [p.event for p in parts]
    drafts = [p.data for p in parts if p.event == "custom" and p.data.get("type") == "tool_call_draft"]
    texts = [d["text"] for d in drafts]
    assert len(texts) > 5 and all(b.startswith(a) and a != b for a, b in zip(texts, texts[1:]))
    assert drafts[-1]["name"] == "write_file" and '"content": "an old silent po' in texts[-1]
    # the drafts come before the call, which arrives whole in messages-tuple and in the state
    last_draft = max(i for i, p in enumerate(parts) if p.event == "custom")
    calls = [i for i, p in enumerate(parts) if p.event == "messages" and p.data[0].get("tool_call_chunks")]
    assert calls and calls[0] > last_draft
    chunk = parts[calls[0]].data[0]["tool_call_chunks"][0]
    assert json.loads(chunk["args"]) == {"path": "/mnt/user-data/outputs/haiku.txt", "content": "an old silent pond"}
    final = [p.data for p in parts if p.event == "values"][-1]
    assert [c["name"] for m in final["messages"] for c in m.get("tool_calls") or []] == ["write_file"]
    assert events.count("error") == 0 and final["messages"][-1]["content"].startswith("done: ")


async def test_without_the_custom_mode_no_draft_is_sent(client) -> None:
    thread = await client.threads.create()
    parts = [
        p
        async for p in client.runs.stream(
            thread["thread_id"], "lead_agent", input=user_message("write a.txt hello"), stream_mode=["values"],
        )
    ]
    assert {p.event for p in parts} == {"metadata", "values"}
