"""The README's first screen: what a newcomer reads before anything else."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIRST_SCREEN_LINES = 15


def _first_screen() -> str:
    return "\n".join((REPO / "README.md").read_text().splitlines()[:FIRST_SCREEN_LINES])


def test_the_first_two_commands_are_make_run_and_make_test() -> None:
    block = re.search(r"```bash\n(.*?)```", _first_screen(), re.DOTALL)
    assert block is not None
    commands = [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.strip()]
    assert commands[:2] == ["make run", "make test"]


def test_the_first_screen_says_which_address_to_open_in_a_browser() -> None:
    screen = _first_screen()
    assert "http://127.0.0.1:2026" in screen
    assert re.search(r"open \*{0,2}http://127\.0\.0\.1:2026\*{0,2} in a browser", screen)
    assert "gateway.port" in screen  # and how to change it
