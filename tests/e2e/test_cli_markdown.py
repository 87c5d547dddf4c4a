"""The CLI renders a streamed answer as Markdown on a terminal, block by block, with no control
sequence of the model's reaching the terminal."""

from __future__ import annotations

import re

from rich.console import Console

from herdsman.commands.markdown import MarkdownStream

ANSWER = (
    "# Totals\n\nThe **north** region sold most.\n\n"
    "```python\nx = 1\n\ny = 2\n```\n\n"
    "See [the docs](https://example.org) \x1b]52;c;cm0gLXJmIH4=\x07now."
)


def rendered(pieces: list[str]) -> tuple[Console, list[str]]:
    console = Console(record=True, force_terminal=True, width=70, color_system="truecolor")
    stream = MarkdownStream(console)
    printed = []
    for piece in pieces:
        stream.feed(piece)
        printed.append(console.export_text(clear=False))
    stream.close()
    return console, printed


def test_blocks_print_as_they_finish_and_render_as_markdown() -> None:
    console, printed = rendered([ANSWER[i : i + 4] for i in range(0, len(ANSWER), 4)])
    text = console.export_text(clear=False)
    assert "Totals" in text and "# Totals" not in text  # a heading, not the raw mark
    assert "north region" in text and "**" not in text
    assert "x = 1" in text and "y = 2" in text and "```" not in text
    # the heading was out before the answer ended; the code block (blank line inside) came whole
    first = next(p for p in printed if "Totals" in p)
    assert "north" not in first
    assert not any("x = 1" in p and "y = 2" not in p for p in printed)


def test_no_control_sequence_of_the_model_reaches_the_terminal() -> None:
    console, _ = rendered([ANSWER[i : i + 3] for i in range(0, len(ANSWER), 3)])  # the OSC 52 split in pieces
    styled = console.export_text(styles=True)
    rest = re.sub(r"\x1b\[[0-9;]*m", "", styled)  # rich's own colours are all that may remain
    assert "\x1b" not in rest and "\x07" not in rest
    assert "https://example.org" in rest  # the link shown as text, not as an OSC 8 hyperlink
