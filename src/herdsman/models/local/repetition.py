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

A loop is rarely exact for long: the same paragraph comes back with a few words changed. So each
paragraph (text between blank lines) of :data:`NEAR_UNIT` characters or more, once finished, is
compared with the :data:`NEAR_LOOKBACK` paragraphs before it by
:func:`~herdsman.models.near_repeat.similar` (difflib's ratio, bounded); one alike to
:data:`NEAR_RATIO` is a near-repeat, cut where it begins. A paragraph whose first
:data:`NEAR_PREFIX` characters are already alike to an earlier one's is held back until it ends,
so a near-copy is never sent. Paragraphs inside a code fence (two similar tests are fine code) or
holding a marker of the model's tool calls are not compared; the last paragraph is compared when
the reply ends (:meth:`LoopDetector.finish`).

Nothing in llama.cpp or LangChain finds loops while streaming (llama.cpp has penalties, which
make a loop less likely but also bend normal text), hence this small module.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from herdsman.models.near_repeat import similar

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
NEAR_UNIT = 80
"""A paragraph this long or longer is compared with the ones before it."""
NEAR_RATIO = 0.85
"""difflib's ratio from which two paragraphs are one written twice."""
NEAR_LOOKBACK = 6
"""Earlier paragraphs each finished paragraph is compared with."""
NEAR_PREFIX = 40
"""Characters of a paragraph being written that are compared with earlier paragraphs' first ones."""
_PARAGRAPH_END = re.compile(r"\n[ \t]*\n")
_FENCE = "```"


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
        if _ENDED.search(text[max(0, self.cut - 4) : self.cut]):
            return self.cut  # the copy already ends a sentence or a line
        ahead = text[self.cut : self.cut + min(self.unit, BOUNDARY_REACH)]
        match = _BOUNDARY.search(ahead)
        return self.cut + match.end() if match else self.cut


class LoopDetector:
    """Follows one reply as it grows (see the module docstring)."""

    def __init__(self, ignore: Sequence[str] = ()) -> None:
        """``ignore``: markers of a paragraph that is never compared (the model's tool-call tags)."""
        self._text = ""
        self._repeated = 0  # length of the longest suffix of the text that also occurs earlier
        self._ignore = tuple(ignore)
        self._paragraphs: list[tuple[int, int]] = []  # the last finished paragraphs that count
        self._open = 0  # where the paragraph being written begins
        self._fenced = False  # whether a code fence is open where it begins
        self._looked = False  # its first characters were compared already
        self._suspect = False  # and are alike to an earlier paragraph's: held back

    @property
    def held(self) -> int:
        """Where the repeated suffix of the text begins (or the paragraph being written, when it
        begins like an earlier one): what a streaming caller should not send yet."""
        held = len(self._text) - self._repeated
        return min(held, self._open) if self._suspect else held

    def _counts(self, text: str, start: int, end: int) -> bool:
        """Whether the paragraph ``text[start:end]`` is compared: long enough, outside a code
        fence, no tool-call marker in it."""
        paragraph = text[start:end]
        return (
            len(paragraph.strip()) >= NEAR_UNIT
            and not self._fenced
            and _FENCE not in paragraph
            and not any(mark in paragraph for mark in self._ignore)
        )

    def _close(self, text: str, end: int, after: int, compare: bool) -> Loop | None:
        """The paragraph being written ends at ``end`` (the next begins at ``after``): the
        near-repeat it is, when ``compare``, else None; it then joins the paragraphs compared."""
        start = self._open
        found = None
        if self._counts(text, start, end):
            paragraph = text[start:end].strip()
            if compare:
                earlier = next(
                    (s for s, e in reversed(self._paragraphs) if similar(paragraph, text[s:e].strip(), NEAR_RATIO)),
                    None,
                )
                if earlier is not None:
                    found = Loop(start=earlier, unit=start - earlier, copies=2.0)
            self._paragraphs = [*self._paragraphs[-(NEAR_LOOKBACK - 1) :], (start, end)]
        self._fenced ^= text.count(_FENCE, start, after) % 2 == 1
        self._open, self._looked, self._suspect = after, False, False
        return found

    def _near(self, text: str, compare: bool = True) -> Loop | None:
        """The near-repeat the paragraphs finished since the last update make, or None; and
        whether the paragraph being written is to be held back."""
        while (end := _PARAGRAPH_END.search(text, self._open)) is not None:
            loop = self._close(text, end.start(), end.end(), compare)
            if loop is not None:
                return loop
        current = text[self._open :].lstrip()
        if compare and not self._looked and len(current) >= NEAR_PREFIX:
            self._looked = True  # once per paragraph: the cost stays bounded
            if self._paragraphs and not self._fenced and not any(mark in current for mark in self._ignore):
                head = current[:NEAR_PREFIX]
                self._suspect = any(
                    similar(head, text[s:e].strip()[:NEAR_PREFIX], NEAR_RATIO) for s, e in self._paragraphs
                )
        return None

    def finish(self) -> Loop | None:
        """The reply has ended: the near-repeat its last paragraph is, or None."""
        text = self._text
        return self._close(text, len(text), len(text), True) if self._open < len(text) else None

    def _occurs_earlier(self, text: str, length: int) -> int:
        """Where the suffix of ``length`` characters last occurs before its own place, or -1."""
        n = len(text)
        return text.rfind(text[n - length :], max(0, n - WINDOW), n - 1)

    def update(self, text: str) -> Loop | None:
        """Take the reply so far (the previous text with more at its end, or a new text) and
        return the loop its tail is, or None."""
        if not text.startswith(self._text):
            self._repeated = 0  # another text (cut back): start over
            self._paragraphs, self._open, self._fenced, self._looked, self._suspect = [], 0, False, False, False
            self._near(text, compare=False)  # what is kept is no loop
        grown = len(text) - len(self._text) if text.startswith(self._text) else len(text)
        self._text = text
        near = self._near(text)
        if near is not None:
            return near
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
        if (unit >= LONG_UNIT and low >= unit + THIRD_BEGUN) or (
            three and (unit >= LINE_UNIT or low + unit >= MIN_SPAN)
        ):
            return Loop(start=at, unit=unit, copies=copies)
        return None
