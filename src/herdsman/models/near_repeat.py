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
* :func:`similar`, the ratio of :class:`difflib.SequenceMatcher` between the words of two
  paragraphs (the standard library's; each cut to :data:`COMPARED_WORDS` words, a character of
  Chinese a word, the cheap upper bounds tried first), for the loop detector of the embedded
  model (:mod:`herdsman.models.local.repetition`).
"""

from __future__ import annotations

import functools
import json
import re
import shlex
from difflib import SequenceMatcher
from typing import Any

NORMALIZED_CHARS = 8_000
"""Characters of a string argument that are normalized (the rest is compared as it is)."""
COMPARED_WORDS = 200
"""Words (see :data:`_TOKEN`) of each paragraph :func:`similar` compares."""

_SPACES = re.compile(r"[ \t]+")
_SHELL_SYNTAX = re.compile(r"[\"'#\\]")
_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]|[^\W\d_]+|\d+|[^\w\s]")
"""A word of a paragraph: a run of letters, a run of digits, a sign; one character of a script
written without spaces (Chinese, Japanese, Korean) on its own."""


def _line(line: str) -> str:
    """One line's normal form: its indentation and its shell words ("" for a blank or comment-only line)."""
    stripped = line.rstrip()
    body = stripped.lstrip()
    indent = stripped[: len(stripped) - len(body)]
    if not body:
        return ""
    if not _SHELL_SYNTAX.search(body):  # no quotes, comments or escapes: the words are the spaces' (shlex is slow)
        return indent + shlex.join(body.split())
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
    return _key(json.dumps([name, args], sort_keys=True, default=str, ensure_ascii=False))


@functools.lru_cache(maxsize=512)
def _key(call: str) -> str:
    """:func:`call_key` of a call given as JSON (cached: the loop checks see the same calls at
    every model call of a run, and a long script with comments takes tens of milliseconds)."""
    return json.dumps(_normalized(json.loads(call)), sort_keys=True, ensure_ascii=False)


def words(text: str) -> list[str]:
    """The first :data:`COMPARED_WORDS` words of ``text`` (see :data:`_TOKEN`)."""
    found: list[str] = []
    for match in _TOKEN.finditer(text):
        found.append(match.group(0).lower())
        if len(found) >= COMPARED_WORDS:
            break
    return found


def similar(a: str, b: str, ratio: float) -> bool:
    """Whether the texts ``a`` and ``b`` are alike to :class:`difflib.SequenceMatcher`'s ratio
    ``ratio`` or more, word by word (each cut to :data:`COMPARED_WORDS` words: characters made
    the pure-Python matcher take seconds on a repetitive paragraph)."""
    matcher = SequenceMatcher(None, words(a), words(b), autojunk=False)
    return matcher.real_quick_ratio() >= ratio and matcher.quick_ratio() >= ratio and matcher.ratio() >= ratio
