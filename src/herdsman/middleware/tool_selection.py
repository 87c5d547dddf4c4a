"""Offer a small model only the tools the request needs (the ``small`` model profile).

A 1.5B model given a dozen tools picks wrong ones: asked about an uploaded CSV it called
``web_fetch`` on an invented URL and delegated to a sub-agent. With the ``small`` profile each
model call gets the core tools (shell and files, search) plus a group only when the request
calls for it: delegation when it asks for sub-agents or parallel work, web tools when it names
the web or a URL, the clarification tool when the request is too short to act on. Other tools
(MCP servers', images, memory, the todo list) stay whenever the request names them, and a tool
already used in the run is always kept.

The first call of a run on a request about files must call a tool (``tool_choice="any"``): asked
to copy a file or find the largest one, the 1.5B model otherwise writes a tutorial, or a call to
a tool that does not exist ("copy"), and every later fix starts from that answer. A request that
asks for sub-agents gets the ``task`` tool as its first call (it wrote a plan of what sub-agents
would do, then did the work itself with made-up numbers).

Groups rather than single tools on purpose: the tools are part of the system message, which the
embedded model keeps processed per version (see :mod:`herdsman.models.local.prompt_cache`); a few
groups make a few versions, each processed once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from langchain.agents.middleware import ModelRequest

from herdsman.language.detect import language_of
from herdsman.middleware.completion.intent_words import files_topic
from herdsman.middleware.rewrite import RequestRewriteMiddleware
from herdsman.turns.turn import named_files, request_text, this_run, tool_name, used_tools

CORE = frozenset({"bash", "ls", "read_file", "write_file", "str_replace", "glob", "grep"})
GROUPS: dict[str, tuple[frozenset[str], re.Pattern[str]]] = {
    "delegation": (
        frozenset({"task", "run_plan"}),
        re.compile(r"\b(sub-?agents?|delegat\w*|in parallel|parallel|helpers?|workers?)\b", re.IGNORECASE),
    ),
    "web": (
        frozenset({"web_fetch", "web_search"}),
        re.compile(r"(https?://|\bwww\.|\b(web|website|internet|online|url|google|search the)\b)", re.IGNORECASE),
    ),
}
ASK = "ask_clarification"
DELEGATE = "task"
_ASKS_TO_DELEGATE = re.compile(r"\b(sub-?agents?|delegate)\b", re.IGNORECASE)
SHORT_REQUEST_WORDS = 3


def about_files(request: str) -> bool:
    """Whether the request is about files: names one (any language), or talks of files, folders,
    data (in a language :func:`~herdsman.middleware.completion.intent_words.files_topic` has words for)."""
    return bool(named_files(request) or files_topic(request, language_of(request)))


def select_tools(names: Iterable[str], text: str, used: set[str]) -> set[str]:
    """The tool names to offer for a request ``text`` when ``used`` were called already."""
    names = set(names)
    keep = set(names & CORE) | (used & names)
    for tools, pattern in GROUPS.values():
        if pattern.search(text):
            keep |= tools & names
    grouped = CORE | {ASK} | frozenset().union(*(tools for tools, _ in GROUPS.values()))
    lowered = text.lower()
    keep |= {n for n in names - grouped if n.lower() in lowered or n.replace("_", " ").lower() in lowered}
    if ASK in names and len(text.split()) <= SHORT_REQUEST_WORDS:
        keep.add(ASK)
    return keep


class ToolSelectionMiddleware(RequestRewriteMiddleware):
    """Narrow each model call's tools to what the request needs, and make the first call on a
    request about files a tool call (see the module docstring)."""

    def rewrite(self, request: ModelRequest) -> ModelRequest:
        """The request with its tools narrowed, and its first call forced when it is about files."""
        names = [tool_name(t) for t in request.tools]
        text = request_text(request.messages)
        keep = select_tools(names, text, used_tools(request.messages))
        changes: dict[str, Any] = {}
        if len(keep) < len(names):
            changes["tools"] = [t for t in request.tools if tool_name(t) in keep]
        last, run = this_run(request.messages)
        if keep and last is not None and not run and request.tool_choice in (None, "auto"):
            if DELEGATE in keep and _ASKS_TO_DELEGATE.search(text):
                changes["tool_choice"] = DELEGATE
            elif about_files(text):
                changes["tool_choice"] = "any"
        return request.override(**changes) if changes else request
