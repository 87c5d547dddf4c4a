"""Degenerate repetition in a reply being generated: found while it streams, so it can be cut.

A small model at temperature 0 sometimes falls into a loop: the same line, sentence or paragraph
again and again until ``max_tokens`` (a report with a paragraph twice, hundreds of identical
assertions in a test file). :class:`LoopDetector` watches the reply as it grows and says when its
tail has become such a loop, and where the first copy ends, so the generation can be cut there and
continued with a repeat penalty (see :mod:`herdsman.models.local.chat`).

It works on characters, not words or lines, so it holds for any language and script (Chinese
written without spaces, code, whitespace): the tail of the text is a loop when it is periodic,
the same unit of ``p`` characters copied back to back. The unit is found from the longest suffix
of the text that also occurs earlier (found with ``str.find``, by bisection, in a bounded window;
the longest repeated suffix only grows as fast as the text, so each update costs a few searches).
Where that earlier occurrence overlaps or touches the suffix, the span from it to the end has
period ``p`` (the shift between the two), ``(suffix + p) / p`` copies long. A loop is:

* a long unit (:data:`LONG_UNIT` characters or more, a paragraph): two whole copies, and a third
  begun (:data:`THIRD_BEGUN` characters) the same way;
* a shorter unit (a line, a sentence): three copies at least, when the unit has
  :data:`LINE_UNIT` characters or more (a sentence of Chinese is short in characters);
* a tiny unit (a word, a character, spaces): three copies at least, :data:`MIN_SPAN` characters
  of them in all.

The repeated suffix is also what a streaming caller holds back (:attr:`LoopDetector.held`): it may
be the start of a loop, and text sent cannot be taken back. Normal prose repeats only short bits,
so little is held, and it is released as soon as the text goes on differently.

Nothing in llama.cpp or LangChain finds loops while streaming (llama.cpp has penalties, which
make a loop less likely but also bend normal text), hence this small module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LONG_UNIT = 64
"""A unit this long or longer is a paragraph: two copies and a third begun make a loop."""
THIRD_BEGUN = 16
"""Characters of the third copy of a long unit that must match before it counts as a loop."""
LINE_UNIT = 24
"""A unit this long or longer (a line, a sentence) copied three times back to back is a loop."""
MIN_SPAN = 160
"""Characters a loop of a tiny unit must span (at least three copies)."""
BOUNDARY_REACH = 16
"""How far past the first copy a cut may move to end at a sentence or line end."""
_BOUNDARY = re.compile(r"^[^\n.!?。！？]*?(?:\n|[.!?。！？]+[ \t]*)")
_ENDED = re.compile(r"(?:\n|[.!?。！？][ \t]*)$")
WINDOW = 6000
"""Characters of the text's tail searched for an earlier occurrence."""


@dataclass(frozen=True)
class Loop:
    """A loop at the end of the text: ``unit`` characters copied back to back ``copies`` times,
    starting at ``start``; ``cut``: where the first copy ends (what to keep)."""

    start: int
    unit: int
    copies: float

    @property
    def cut(self) -> int:
        """The index just after the first copy of the unit."""
        return self.start + self.unit

    def cut_in(self, text: str) -> int:
        """Where to cut ``text`` to keep one copy, moved past the end of a sentence or line that
        the copy's phase leaves just after it (a unit found as ". Rain...water" keeps its
        period): :attr:`cut`, or up to :data:`BOUNDARY_REACH` characters later."""
        if _ENDED.search(text[max(0, self.cut - 4):self.cut]):
            return self.cut  # the copy already ends a sentence or a line
        ahead = text[self.cut:self.cut + min(self.unit, BOUNDARY_REACH)]
        match = _BOUNDARY.search(ahead)
        return self.cut + match.end() if match else self.cut


class LoopDetector:
    """Follows one reply as it grows (see the module docstring)."""

    def __init__(self) -> None:
        self._text = ""
        self._repeated = 0  # length of the longest suffix of the text that also occurs earlier

    @property
    def held(self) -> int:
        """Where the repeated suffix of the text begins: what a streaming caller should not send yet."""
        return len(self._text) - self._repeated

    def _occurs_earlier(self, text: str, length: int) -> int:
        """Where the suffix of ``length`` characters last occurs before its own place, or -1."""
        n = len(text)
        return text.rfind(text[n - length:], max(0, n - WINDOW), n - 1)

    def update(self, text: str) -> Loop | None:
        """Take the reply so far (the previous text with more at its end, or a new text) and
        return the loop its tail is, or None."""
        if not text.startswith(self._text):
            self._repeated = 0  # another text (cut back): start over
        grown = len(text) - len(self._text) if text.startswith(self._text) else len(text)
        self._text = text
        # the longest repeated suffix: at most the last one plus what was added, and any shorter
        # suffix of a repeated one is repeated too, so bisect
        low, high = 0, min(self._repeated + grown, len(text) - 1, WINDOW // 2)
        while low < high:
            mid = (low + high + 1) // 2
            if self._occurs_earlier(text, mid) >= 0:
                low = mid
            else:
                high = mid - 1
        self._repeated = low
        if low == 0:
            return None
        at = self._occurs_earlier(text, low)
        unit = len(text) - low - at
        if unit > low:  # the earlier copy is apart from this one: a repeat, not a loop
            return None
        copies = (low + unit) / unit
        three = low >= 2 * unit
        if (unit >= LONG_UNIT and low >= unit + THIRD_BEGUN) or (three and (unit >= LINE_UNIT or low + unit >= MIN_SPAN)):
            return Loop(start=at, unit=unit, copies=copies)
        return None

