"""Text from models, tools and files made safe to print on a user's terminal.

A command's output or a model's reply can carry terminal control sequences: OSC 52 writes the
user's clipboard, OSC 0/2 sets the window title, ``ESC c`` and ``CSI 2J`` clear the screen, cursor
moves overwrite what was printed, DCS/APC/PM/SOS strings reach the terminal's own parsers, C1
controls (U+0080-U+009F, the 8-bit CSI ``\\x9b`` among them) do the same in one character, and
bidi overrides reorder what the user reads. :func:`strip_controls` removes all of them, keeping
newlines and tabs; :func:`escape` also escapes rich's markup, so the CLI's own colours (drawn by
rich after this) are the only escape sequences that reach the terminal.

Written by hand: rich's ``Text.from_ansi`` keeps SGR and drops only some sequences (an OSC ended
by BEL passes), and the small "strip ANSI" packages on PyPI handle CSI only. The rules here
follow ECMA-48's sequence grammar.
"""

from __future__ import annotations

import re

from rich.markup import escape as _rich_escape

_SEQUENCES = re.compile(
    r"""
    \x1b\[[0-?]*[ -/]*[@-~]?                        # CSI ... final
    | \x1b[\]PX^_](?:[^\x07\x1b\x9c]*)(?:\x07|\x1b\\|\x9c)?   # OSC, DCS, SOS, PM, APC ... BEL or ST
    | [\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?  # the same opened by a C1 byte
    | \x9b[0-?]*[ -/]*[@-~]?                         # 8-bit CSI
    | \x1b[ -/]*[0-~]?                               # other escapes (ESC c, ESC 7, charset switches)
    """,
    re.VERBOSE,
)
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def strip_controls(text: str) -> str:
    """``text`` without terminal control sequences, C0/C1 controls (but ``\\n`` and ``\\t``) and
    bidi overrides; a carriage return becomes a newline so nothing overwrites a line."""
    text = _SEQUENCES.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    return _CONTROLS.sub("", text)


def escape(text: str) -> str:
    """``text`` safe to print with rich: controls stripped, then rich markup escaped."""
    return _rich_escape(strip_controls(text))
