"""Uploads are announced to the model: a file put in uploads before a run (as the web UI does,
sending only the typed text) reaches the model's view of the message with its path, size and
first lines; the stored message stays as typed; a later turn announces only what is new."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import HumanMessage

from herdsman.client import HerdsmanClient
from herdsman.models.scripted import ScriptedChatModel
from tests.support import make_config

CSV = "region,amount\n" + "".join(f"north,{i}\n" for i in range(40))


def human_texts(model: ScriptedChatModel, call: int) -> list[str]:
    return [m.text for m in model.calls[call].messages if isinstance(m, HumanMessage)]


async def test_upload_is_announced_once_with_a_preview(home: Path) -> None:
    config = make_config(home)
    uploads = home / "threads" / "t-up" / "user-data" / "uploads"
    uploads.mkdir(parents=True)
    (uploads / "sales.csv").write_text(CSV)
    (uploads / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 100)
    model = ScriptedChatModel(responses=["first answer", "second answer", "third answer"])
    async with HerdsmanClient(config, model=model) as client:
        [e async for e in client.stream("what is the total amount?", thread_id="t-up")]
        (uploads / "more.txt").write_text("extra\n")
        [e async for e in client.stream("and this one?", thread_id="t-up")]
        [e async for e in client.stream("thanks", thread_id="t-up")]
        state = await client.agent.aget_state({"configurable": {"thread_id": "t-up"}})
    first = human_texts(model, 0)[0]
    assert first.startswith("what is the total amount?\n\n<uploaded_files>")
    assert (
        "- /mnt/user-data/uploads/sales.csv (" in first
        and "41 lines). First lines:\n    region,amount\n    north,0" in first
    )
    assert "- /mnt/user-data/uploads/photo.png (108 B)" in first
    second = human_texts(model, 1)
    assert second[0] == first  # the first message keeps its notice in later calls
    assert "more.txt" in second[1] and "sales.csv" not in second[1]
    third = human_texts(model, 2)
    assert third[2] == "thanks"  # nothing new: no notice
    stored = [m.text for m in state.values["messages"] if isinstance(m, HumanMessage)]
    assert stored == ["what is the total amount?", "and this one?", "thanks"]


async def test_switched_off_no_notice(home: Path) -> None:
    config = make_config(home, context={"announce_uploads": False})
    uploads = home / "threads" / "t-up2" / "user-data" / "uploads"
    uploads.mkdir(parents=True)
    (uploads / "sales.csv").write_text(CSV)
    model = ScriptedChatModel(responses=["ok"])
    async with HerdsmanClient(config, model=model) as client:
        [e async for e in client.stream("hi", thread_id="t-up2")]
    assert human_texts(model, 0) == ["hi"]


async def test_a_run_without_uploads_pays_no_step_and_writes_nothing(home: Path) -> None:
    """The folder is looked at inside the first model call: no graph node of its own (a step and a
    checkpoint every run paid), and a run with nothing to announce writes no update of it; one with
    an upload writes it with the model call's update."""
    config = make_config(home)
    model = ScriptedChatModel(responses=["first answer", "second answer"])
    config_of = {"configurable": {"thread_id": "t-none"}}
    async with HerdsmanClient(config, model=model) as client:
        assert not [node for node in client.agent.nodes if node.startswith("UploadsNotice")]
        # the keys are private (not shown to clients): this test asks for them by name
        keys = [*client.agent.output_channels, "uploads_seen", "upload_notices"]
        updates = [
            u
            async for u in client.agent.astream(
                {"messages": [HumanMessage("hi")]}, config_of, stream_mode="updates", output_keys=keys
            )
        ]
        saved = (await client.agent.checkpointer.aget_tuple(config_of)).checkpoint["channel_values"]
        uploads = home / "threads" / "t-none" / "user-data" / "uploads"
        uploads.mkdir(parents=True, exist_ok=True)
        (uploads / "sales.csv").write_text(CSV)
        later = [
            u
            async for u in client.agent.astream(
                {"messages": [HumanMessage("and now?")]}, config_of, stream_mode="updates", output_keys=keys
            )
        ]
    written = {key for update in updates for node in update.values() if isinstance(node, dict) for key in node}
    assert not written & {"uploads_seen", "upload_notices"}
    assert not saved.get("uploads_seen") and not saved.get("upload_notices")
    announced = [
        node for update in later for name, node in update.items() if isinstance(node, dict) and "upload_notices" in node
    ]
    assert len(announced) == 1 and "sales.csv" in next(iter(announced[0]["upload_notices"].values()))
    assert "sales.csv" in human_texts(model, 1)[1]
