"""The middlewares' bookkeeping keys are private (LangChain's ``PrivateStateAttr``): checkpointed
and used by the thread's next run, never shown to clients in the thread's state, a run's
``values`` or ``updates``, or ``invoke``'s result."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import HumanMessage

from herdsman.agents.lead import run_config
from herdsman.client import HerdsmanClient
from herdsman.models.scripted import ScriptedChatModel
from tests.support import make_config

PRIVATE = {"files_read", "preexisting", "preexisting_stat", "uploads_seen", "upload_notices"}
NOTES = "/mnt/user-data/workspace/notes.txt"


def call(name: str, n: int, **args: object) -> dict:
    return {"tool_calls": [{"name": name, "args": args, "id": f"call-{n}"}]}


def shown_keys(chunks: list) -> set[str]:
    """Every key of the ``values`` and ``updates`` chunks a client would receive."""
    keys: set[str] = set()
    for mode, chunk in chunks:
        if mode == "values":
            keys |= set(chunk)
        elif mode == "updates":
            keys |= {k for update in chunk.values() if isinstance(update, dict) for k in update}
    return keys


async def test_bookkeeping_keys_are_kept_for_the_next_run_and_never_shown(home: Path) -> None:
    user_data = home / "threads" / "t-priv" / "user-data"
    (user_data / "workspace").mkdir(parents=True)
    (user_data / "workspace" / "notes.txt").write_text("old\n")
    (user_data / "uploads").mkdir()
    (user_data / "uploads" / "sales.csv").write_text("region,amount\nnorth,1\n")
    model = ScriptedChatModel(
        responses=[
            call("read_file", 1, path=NOTES),
            "It says old.",
            call("write_file", 2, path=NOTES, content="new\n"),
            f"Changed {NOTES}.",
        ],
        on_exhausted="repeat_last",
    )
    config = make_config(home, lead={"verify_rounds": 1})
    cfg = run_config(config, "t-priv")
    async with HerdsmanClient(config, model=model) as client:
        first = [
            c
            async for c in client.agent.astream(
                {"messages": [HumanMessage(f"What does {NOTES} say?")]}, cfg, stream_mode=["values", "updates"]
            )
        ]
        # the second run writes without reading: only the first run's files_read, from the checkpoint, allows it
        result = await client.agent.ainvoke({"messages": [HumanMessage(f"Change {NOTES} to say new")]}, cfg)
        state = await client.agent.aget_state(cfg)
        history = [s.values async for s in client.agent.aget_state_history(cfg)]
        saved = (await client.agent.checkpointer.aget_tuple(cfg)).checkpoint["channel_values"]
    assert (user_data / "workspace" / "notes.txt").read_text() == "new\n"
    assert set(saved) >= {"files_read", "preexisting", "upload_notices", "uploads_seen"}
    assert NOTES in saved["files_read"] and NOTES in saved["preexisting"]
    assert "messages" in state.values and "usage" in state.values
    for shown in (shown_keys(first), set(result), set(state.values), *map(set, history)):
        assert not shown & PRIVATE, shown & PRIVATE
