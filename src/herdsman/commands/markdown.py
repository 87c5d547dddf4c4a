"""The CLI's answers rendered as Markdown on a terminal, block by block as they stream.

A reply arrives token by token. Rendering Markdown needs whole blocks, and redrawing what was
printed needs cursor moves, which the CLI never emits (model text must not be able to move the
cursor either: see :mod:`herdsman.terminal_text`). So text is held until a block ends (a blank
line outside a fenced code block) and each finished block is printed once with rich's Markdown;
what is left is printed when the answer ends. Links are shown as text, not as OSC 8 hyperlinks,
and control sequences are stripped before rendering. Written here because rich renders whole
documents only; the block splitting is all there is to it.
"""

from __future__ import annotations

import re

from rich.console import Console
from rich.markdown import Markdown

from herdsman.terminal_text import strip_controls

_FENCE = re.compile(r"^\s*(```|~~~)", re.MULTILINE)


class MarkdownStream:
    """Collects streamed text and prints each finished Markdown block on ``console``."""

    def __init__(self, console: Console) -> None:
        """``console``: where the blocks are printed."""
        self.console = console
        self.buffer = ""

    def feed(self, text: str) -> None:
        """Add streamed text; print the blocks it finished."""
        self.buffer += text
        cut = self._last_block_end()
        if cut > 0:
            self._render(self.buffer[:cut])
            self.buffer = self.buffer[cut:].lstrip("\n")

    def close(self) -> None:
        """Print what is left (the answer ended)."""
        if self.buffer.strip():
            self._render(self.buffer)
        self.buffer = ""

    def _last_block_end(self) -> int:
        """Where the last finished block ends: after a blank line that is outside code fences."""
        end = 0
        for match in re.finditer(r"\n[ \t]*\n", self.buffer):
            if len(_FENCE.findall(self.buffer[: match.start()])) % 2 == 0:
                end = match.end()
        return end

    def _render(self, block: str) -> None:
        # stripped as a whole block: a sequence split across two streamed pieces is still one
        self.console.print(Markdown(strip_controls(block).strip("\n"), hyperlinks=False))
