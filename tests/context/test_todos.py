"""Plan mode: with context.todos the lead gets write_todos and the list is kept in the thread state."""

from __future__ import annotations

from pathlib import Path

from herdsman.client import HerdsmanClient
from herdsman.models.scripted import ScriptedChatModel
from tests.support import make_config

TODOS = [
    {"content": "Read the data", "status": "completed"},
    {"content": "Plot it", "status": "in_progress"},
    {"content": "Write the report", "status": "pending"},
]


async def test_todo_list_is_in_the_state(home: Path) -> None:
    config = make_config(home, context={"todos": True})
    model = ScriptedChatModel(
        responses=[{"tool_calls": [{"name": "write_todos", "args": {"todos": TODOS}}]}, "planned"]
    )
    async with HerdsmanClient(config, model=model) as client:
        result = await client.run("plan a report", thread_id="t-todo")
        state = await client.agent.aget_state({"configurable": {"thread_id": "t-todo"}})
    assert result.answer == "planned"
    assert "write_todos" in model.calls[0].tools
    assert "write_todos" in model.calls[0].messages[0].text  # its instructions are in the prompt
    assert state.values["todos"] == TODOS


async def test_no_todo_tool_by_default(config) -> None:
    model = ScriptedChatModel(responses=["hi"])
    async with HerdsmanClient(config, model=model) as client:
        await client.run("hello", thread_id="t-no-todo")
    assert "write_todos" not in model.calls[0].tools


def test_cli_shows_the_plan_as_a_checklist() -> None:
    from rich.console import Console

    from herdsman.cli import todo_list_text

    out = Console(record=True, width=80)
    out.print(todo_list_text(TODOS))
    text = out.export_text()
    assert "✔ Read the data" in text and "▶ Plot it" in text and "○ Write the report" in text
