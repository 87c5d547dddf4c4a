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
    assert "- /mnt/user-data/uploads/sales.csv (" in first and "41 lines). First lines:\n    region,amount\n    north,0" in first
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
