"""state_view: a checkpoint LangGraph cannot build shows as saved with an error, and values
that cannot be encoded are replaced, never failing the response."""

from __future__ import annotations

import orjson
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import CheckpointTuple

from herdsman_gateway.state_view import read_history, read_state, safe_json


def _saved(cid: str, text: str) -> CheckpointTuple:
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": cid}}
    checkpoint = {
        "ts": "2026-01-01T00:00:00+00:00",
        "channel_values": {"messages": [HumanMessage(text)], "__start__": 5},
    }
    return CheckpointTuple(config, checkpoint, {"step": 1}, None)  # type: ignore[arg-type]


class _Saver:
    def __init__(self, saved: list[CheckpointTuple]) -> None:
        self.saved = saved

    async def aget_tuple(self, config):
        cid = config["configurable"].get("checkpoint_id")
        return next((s for s in self.saved if cid in (None, s.config["configurable"]["checkpoint_id"])), None)

    async def alist(self, config, *, filter=None, before=None, limit=None):
        for saved in self.saved[:limit]:
            yield saved


class _BrokenGraph:
    """A graph whose newest checkpoint cannot be built (as with writes add_messages refuses)."""

    def __init__(self) -> None:
        self.checkpointer = _Saver([_saved("2", "bad"), _saved("1", "good")])

    async def aget_state(self, config, subgraphs=False):
        if config["configurable"].get("checkpoint_id") in (None, "2"):
            raise NotImplementedError("Unsupported message type: <class 'int'>")
        from langgraph.types import StateSnapshot

        return StateSnapshot({"messages": [HumanMessage("good")]}, (), config, {"step": 1}, "ts", None, (), ())

    async def aget_state_history(self, config, **kwargs):
        raise NotImplementedError("Unsupported message type: <class 'int'>")
        yield  # pragma: no cover


async def test_an_unreadable_state_shows_as_saved_with_an_error() -> None:
    snapshot, state = await read_state(_BrokenGraph(), {"configurable": {"thread_id": "t"}})
    assert snapshot is None and "cannot be read" in state["error"]
    assert state["values"]["messages"][0]["content"] == "bad" and "__start__" not in state["values"]
    assert state["checkpoint"]["checkpoint_id"] == "2"


async def test_history_with_one_unreadable_checkpoint_shows_the_others_as_usual() -> None:
    states = await read_history(
        _BrokenGraph(), {"configurable": {"thread_id": "t"}}, filter=None, before=None, limit=10
    )
    assert [s["checkpoint"]["checkpoint_id"] for s in states] == ["2", "1"]
    assert states[0]["error"] and "error" not in states[1]


def test_values_that_cannot_be_encoded_are_replaced() -> None:
    deep: dict = {}
    inner = deep
    for _ in range(400):
        inner["n"] = {}
        inner = inner["n"]
    value = {"text": "bad \ud800 text", "big": 2**80, "msg": HumanMessage("\udcff"), "deep": deep}
    shown = safe_json(value)
    orjson.dumps(shown)  # encodes
    assert shown["text"] == "bad ? text" and shown["big"] == str(2**80) and shown["msg"]["content"] == "?"
