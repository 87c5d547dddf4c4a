"""Near-repeats: a tool call made again with trivially different arguments, a paragraph written
again with a few words changed.

A model stuck in a loop rarely repeats itself byte for byte: the same ``bash`` command comes back
with another comment or more spaces, the same paragraph with two words swapped. Two measures,
both bounded in cost:

* :func:`call_key`, a normalized form of a tool call: each string argument is compared line by
  line, a line as its indentation and its shell words (:func:`shlex.split` with comments, so
  ``#`` inside quotes stays, runs of spaces fold and a comment goes; joined again quoted with
  :func:`shlex.join`, so ``rm "a b"`` and ``rm a b`` differ), blank and comment-only lines
  dropped. Indentation is kept (a Python fix may be only that). A line shlex cannot split (an open quote, the
  middle of a triple-quoted string) is kept with its spaces folded. Only the first
  :data:`NORMALIZED_CHARS` characters of a string are normalized; the rest is compared as it is.
* :func:`similar`, the ratio of :class:`difflib.SequenceMatcher` between two paragraphs (the
  standard library's; each cut to :data:`COMPARED_CHARS` characters, the cheap upper bounds
  tried first), for the loop detector of the embedded model
  (:mod:`herdsman.models.local.repetition`).
"""

from __future__ import annotations

import json
import re
import shlex
from difflib import SequenceMatcher
from typing import Any

NORMALIZED_CHARS = 20_000
"""Characters of a string argument that are normalized (the rest is compared as it is)."""
COMPARED_CHARS = 2_000
"""Characters of each paragraph :func:`similar` compares."""

_SPACES = re.compile(r"[ \t]+")


def _line(line: str) -> str:
    """One line's normal form: its indentation and its shell words ("" for a blank or comment-only line)."""
    stripped = line.rstrip()
    body = stripped.lstrip()
    indent = stripped[: len(stripped) - len(body)]
    if not body:
        return ""
    try:
        words = shlex.split(body, comments=True)
    except ValueError:  # an open quote: the line as written, spaces folded
        return indent + _SPACES.sub(" ", body)
    return indent + shlex.join(words) if words else ""


def normalized_text(text: str) -> str:
    """``text`` as :func:`call_key` compares it (see the module docstring)."""
    head, tail = text[:NORMALIZED_CHARS], text[NORMALIZED_CHARS:]
    lines = [n for n in (_line(line) for line in head.splitlines()) if n]
    return "\n".join(lines) + ("\n" + tail if tail else "")


def _normalized(value: Any) -> Any:
    if isinstance(value, str):
        return normalized_text(value)
    if isinstance(value, dict):
        return {str(k): _normalized(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normalized(v) for v in value]
    return value


def call_key(name: str, args: Any) -> str:
    """A string equal for two calls of tool ``name`` whose ``args`` differ only trivially
    (spaces, comments, blank lines), and different otherwise."""
    return json.dumps([name, _normalized(args)], sort_keys=True, default=str, ensure_ascii=False)


def similar(a: str, b: str, ratio: float) -> bool:
    """Whether the texts ``a`` and ``b`` are alike to :class:`difflib.SequenceMatcher`'s ratio
    ``ratio`` or more (each cut to :data:`COMPARED_CHARS` characters)."""
    a, b = a[:COMPARED_CHARS], b[:COMPARED_CHARS]
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    return matcher.real_quick_ratio() >= ratio and matcher.quick_ratio() >= ratio and matcher.ratio() >= ratio
