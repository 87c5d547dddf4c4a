"""A call written whole at the end (the embedded model), through the embedded client and the CLI:
drafts of it arrive first, then the call; the terminal says once which call is being written."""

from __future__ import annotations

import io

from rich.console import Console

from herdsman import cli
from herdsman.client import CallDraft, HerdsmanClient, ToolCall
from herdsman.models.scripted import ScriptedChatModel

NOTES = "a line of notes, written slowly\n" * 6


def _model() -> ScriptedChatModel:
    return ScriptedChatModel(
        responses=[
            {
                "tool_calls": [
                    {"name": "write_file", "args": {"path": "/mnt/user-data/outputs/notes.md", "content": NOTES}}
                ]
            },
            "Wrote outputs/notes.md.",
        ],
        stream_chunk_chars=10,
        stream_call_drafts=True,
    )


async def test_drafts_come_before_the_call_and_the_cli_says_it_once(config, monkeypatch) -> None:
    async with HerdsmanClient(config, model=_model()) as client:
        events = [e async for e in client.stream("take notes", thread_id="t-drafts")]
    drafts = [e for e in events if isinstance(e, CallDraft)]
    call = next(i for i, e in enumerate(events) if isinstance(e, ToolCall))
    assert len(drafts) > 5 and all(events.index(d) < call for d in drafts)
    assert drafts[-1].name == "write_file" and drafts[-1].chars > drafts[0].chars
    assert '"content": "a line of notes' in drafts[-1].text

    out = io.StringIO()
    monkeypatch.setattr(cli, "console", Console(file=out, width=200, color_system=None))
    printer = cli._Printer(markdown=False)
    for event in events:
        printer(event)
    shown = out.getvalue()
    assert shown.count("writing a call to write_file") == 1
    assert shown.index("writing a call to write_file") < shown.index("▶ write_file")
