"""The commands a note proposes make sense: never text printed into a binary file."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from herdsman.client import HerdsmanClient
from herdsman.middleware.completion.command_sense import binary_file, senseless
from herdsman.middleware.completion.findings import COMMAND, Finding
from herdsman.middleware.completion.findings_text import render
from herdsman.models.scripted import ScriptedChatModel
from tests.support import make_config

CHECKED = {"lead": {"model_retries": 0, "verify_rounds": 1, "intent_rules": "on"}}


@pytest.mark.parametrize(
    ("name", "binary"),
    [
        ("totals.png", True),
        ("report.PDF", True),
        ("out.zip", True),
        ("data.tar.gz", True),
        ("deck.pptx", True),
        ("a.svg", False),
        ("totals.csv", False),
        ("t.json", False),
        ("notes.md", False),
        ("app.ts", False),
        ("run.log", False),
    ],
)
def test_a_binary_deliverable_is_told_by_its_type(name: str, binary: bool) -> None:
    assert binary_file(name) is binary


def test_a_command_printing_into_a_binary_file_makes_no_sense() -> None:
    assert (
        senseless("python3 - > /mnt/user-data/outputs/totals.png <<'EOF'\nprint(1)\nEOF")
        == "/mnt/user-data/outputs/totals.png"
    )
    assert senseless("python3 plot.py | tee chart.jpg") == "chart.jpg"
    assert senseless("python3 - > /mnt/user-data/outputs/totals.csv <<'EOF'\nprint(1)\nEOF") is None
    assert senseless("python3 plot.py 2>&1 >/dev/null") is None


def test_no_rule_line_proposes_printing_into_a_binary_file() -> None:
    """Whatever rule made it, a line with such a command is not sent as is."""
    finding = Finding(
        "output.grep_not_saved",
        {"path": "/mnt/user-data/outputs/a.png", "command": "grep x data.txt > /mnt/user-data/outputs/a.png"},
        ("bash",),
        COMMAND,
    )
    line = render(finding)
    assert "> /mnt/user-data/outputs/a.png" not in line and "binary" in line and "save it" in line


async def test_a_chart_printed_instead_of_saved_gets_a_hint_that_saves_the_png(home: Path) -> None:
    """The seen case: the script printed, the PNG is missing; the note must not say
    ``python3 - > outputs/totals.png`` (text into a PNG) but to make the code save the file."""
    script = "totals = {'north': 10, 'south': 5}\nprint(totals)\n"
    model = ScriptedChatModel(
        responses=[
            {"tool_calls": [{"name": "bash", "args": {"command": f"python3 - <<'EOF'\n{script}EOF"}, "id": "c1"}]},
            "The chart is ready.",
            "I could not save it.",
        ]
    )
    config = make_config(home, **CHECKED)
    async with HerdsmanClient(config, model=model) as client:
        [
            e
            async for e in client.stream(
                "Make a bar chart of the totals as a PNG in outputs/totals.png", thread_id="t-png"
            )
        ]
    notes = [m.text for m in model.calls[2].messages if isinstance(m, HumanMessage) and m.name == "harness"]
    assert notes, "the check sent the model back"
    assert "> /mnt/user-data/outputs/totals.png" not in notes[0] and "> outputs/totals.png" not in notes[0]
    assert "plt.savefig('/mnt/user-data/outputs/totals.png')" in notes[0]
