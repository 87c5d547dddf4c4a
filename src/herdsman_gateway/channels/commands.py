"""Chat commands: ``/new``, ``/status``, ``/cancel`` (and ``/help``), parsed from message text.

Telegram appends the bot's name in groups (``/new@herd_bot``); Slack users often type ``!new``
because Slack's client keeps ``/`` for its own slash commands; both are understood.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

CommandName = Literal["new", "status", "cancel", "help", "start"]
KNOWN: tuple[CommandName, ...] = ("new", "status", "cancel", "help", "start")
HELP = (
    "Send me a message and I will work on it.\n"
    "/new - start a new conversation\n"
    "/status - what I am working on\n"
    "/cancel - stop the current run"
)


@dataclass(frozen=True)
class Command:
    """A parsed command: its name (None when unknown) and the word as typed."""

    name: CommandName | None
    word: str
    args: str = ""


def parse_command(text: str) -> Command | None:
    """The command in ``text``, or None when the text is an ordinary message."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "/!":
        return None
    word, _, rest = stripped[1:].partition(" ")
    word = word.split("@", 1)[0].lower()
    if not word or not word.isidentifier():
        return None
    name = word if word in KNOWN else None
    return Command(name, word, rest.strip())  # type: ignore[arg-type]  # name is None or a word of KNOWN, the Literal; mypy does not narrow from the membership test
