"""Is a candidate fact worth remembering? A cheap, deterministic check after extraction.

The memory model's prompt already asks for durable facts only (preferences, who the user is,
facts about their projects, decisions) and names what to skip. Small models follow such rules
loosely and write "the user ran ls at 10:32" or "the build passed" as readily as "the user
prefers tabs", so every extracted fact also passes :func:`refusal`: a few patterns that mark
log-like and one-off statements, each with the reason it is refused:

- ``command``: what was run, executed or typed ("ran ls", "executed pytest");
- ``outcome``: how one task ended ("the build passed", "CI is green now");
- ``error``: a transient error (an exception name, "connection refused", "exit code 137");
- ``greeting``: small talk ("said hello", "thanked the assistant");
- ``listing``: a file listing or a tool's output (:data:`LISTED_FILES` file names or more, "the output was");
- ``request``: a one-off request ("asked to rename ...", "this article");
- ``moment``: true only now (a clock time or time stamp, "today", "right now", "yesterday").

Habits and schedules stay: a statement with a habitual word ("every", "always", "nightly",
"prefers", "on Fridays", ...) is not refused for naming a time ("the daily standup is at 9:30")
or a request ("always asks for tests"), nor is a wish to be asked ("wants to be asked first").

Written by hand: no library classifies memory-worthy statements; a model call per fact would cost
what extraction costs. The patterns are scored on ``tests/memory/data/keep_drop.jsonl``.
"""

from __future__ import annotations

import re

_I = re.IGNORECASE

# reason -> pattern; the first that matches is the reason a fact is refused
PATTERNS: dict[str, re.Pattern[str]] = {
    "greeting": re.compile(
        r"\b(said|says|saying|greeted|greets|greeting)\b.{0,20}?\b(hello|hi|hey|good (morning|afternoon|evening|night)|"
        r"goodbye|bye|thanks|thank you)\b|\b(greeted|thanked|thanks) the (assistant|agent|bot)\b|\bsmall talk\b",
        _I,
    ),
    "command": re.compile(
        r"\b(ran|executed|typed|invoked|re-?ran|has run|have run)\b|"
        r"\bthe command\b.{0,40}\b(returned|printed|showed|output)\b",
        _I,
    ),
    "outcome": re.compile(
        r"\b(build|builds|tests?|test suite|ci|pipeline|deploy|deployment|job|run|command|script|migration|install|"
        r"installation|upload|download|compilation|release)\b[^.;]{0,30}?\b(passed|failed|succeeded|worked|broke|crashed|"
        r"finished|completed|went through|is (now )?(green|red|broken|fixed))\b",
        _I,
    ),
    "error": re.compile(
        r"\b[A-Z][a-zA-Z]*(Error|Exception)\b|\bE(ACCES|NOENT|PERM|EXIST|CONN(REFUSED|RESET)|ADDRINUSE|TIMEDOUT|NOSPC|"
        r"PIPE|AGAIN|ISDIR|NOTDIR|INVAL|MFILE|HOSTUNREACH)\b|"
        r"(?i:\btraceback\b|\bstack ?trace\b|\bexit (code|status)\b|\berrno\b|"
        r"\bconnection (refused|reset)\b|\bpermission denied\b|\btimed out\b|\bsegfault\b|\bno module named\b)"
    ),
    "listing": re.compile(
        r"\b(the )?output (was|is|shows?)\b|\b(directory|folder|workspace) "
        r"(contains|lists|holds|has)\b",
        _I,
    ),
    "request": re.compile(
        r"(?<!be )\b(asked|asks|asking|requested|requests)\b|\bwants to know\b|"
        r"\b(this|that) (article|file|page|message|"
        r"link|document|email|pr|snippet|output|error)\b",
        _I,
    ),
    "moment": re.compile(
        r"\b\d{1,2}:\d{2}(:\d{2})?\b|\b\d{4}-\d{2}-\d{2}[t ]\d{2}:\d{2}|\b(today|tonight|yesterday|right now|just now|"
        r"at the moment|this (morning|afternoon|evening|week)|a moment ago|earlier today|tomorrow|next week)\b",
        _I,
    ),
}
# words that make a statement a habit or a standing rule: it may name a time and still last
HABITUAL = re.compile(
    r"\b(always|never|usually|every|each|daily|nightly|weekly|monthly|yearly|prefers?|likes?|favou?rite|"
    r"schedules?|scheduled|standup|recurring|(mon|tues|wednes|thurs|fri|satur|sun)days|weekdays|weekends)\b",
    _I,
)
EXEMPT_WHEN_HABITUAL = frozenset({"moment", "request"})
FILE_NAME = re.compile(r"\b[\w-]{2,}\.[a-z][a-z0-9]{0,4}\b", _I)
LISTED_FILES = 3  # this many file names or more: a listing


def refusal(content: str) -> str | None:
    """Why ``content`` is not worth remembering (one of :data:`PATTERNS`' names), or None to keep it."""
    if len(FILE_NAME.findall(content)) >= LISTED_FILES:
        return "listing"
    habitual = HABITUAL.search(content) is not None
    for reason, pattern in PATTERNS.items():
        if habitual and reason in EXEMPT_WHEN_HABITUAL:
            continue
        if pattern.search(content):
            return reason
    return None


def worth_keeping(content: str) -> bool:
    """True when ``content`` reads as a durable fact (see :func:`refusal`)."""
    return refusal(content) is None


__all__ = ["HABITUAL", "PATTERNS", "refusal", "worth_keeping"]
