"""The completion check's rule on sources: a URL the answer gives must come from somewhere.

A small model asked for a report or a researched answer lists sources it never opened: plausible
URLs it made up ("https://www.epa.gov/rainwater-harvesting-guide"), presented as where the facts
come from. Rule ``source.unseen``: every http(s) URL in the final answer, or in a text file the run
wrote (a report in outputs), must appear in what the thread was given or found: the user's
messages, an uploaded file, a tool result, or the URL of a tool call that did not fail (a fetched
page need not repeat its own address). A site's root counts as seen when a page of it was. URLs
in code blocks (a command, a snippet) and on reserved example names (example.com, localhost,
``.test``...) are not sources and are not checked.

Structural and language-neutral: URLs are found by their syntax (an address ends at spaces,
brackets, quotes or CJK punctuation), no words are read. The model is sent back to fetch or
remove them; if one is still in the answer when the check's rounds run out, it is taken out of the
answer with a visible mark (:func:`strip_unseen`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from herdsman.middleware.completion.findings import ANSWER, WRITE_IF_ALONE, Finding
from herdsman.middleware.completion.rules import failed, tool_results
from herdsman.turns.turn import is_harness

_URL = re.compile(r"https?://[^\s<>()\[\]{}\"'`|\\，。；：！？、（）【】《》「」]+", re.IGNORECASE)
_TRAILING = ".,;:!?*_~"
_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.DOTALL)
_RESERVED = re.compile(
    r"(?:^|\.)(?:example\.(?:com|org|net)|localhost|test|invalid|example|local)$|^(?:127\.|0\.0\.0\.0$|\[?::1)"
)
TEXT_SUFFIXES = (".md", ".markdown", ".txt", ".html", ".htm", ".rst", ".csv", ".tex")
"""Files whose URLs are read as sources (code files use URLs as values, not sources)."""
MARK = "(unverified link removed)"
MAX_URLS = 20


def urls_in(text: str) -> list[str]:
    """The http(s) URLs in ``text``, in order, without trailing punctuation."""
    return [m.group(0).rstrip(_TRAILING) for m in _URL.finditer(text)]


def _key(url: str) -> str:
    """A URL compared loosely: scheme and host in lower case, no fragment, no trailing slash."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    return f"{parts.netloc.lower()}{path}" + (f"?{parts.query}" if parts.query else "")


def _reserved(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return not host or _RESERVED.search(host) is not None


def known_urls(messages: Sequence[Any], uploads: Iterable[str] = ()) -> set[str]:
    """The URLs (as :func:`_key`) the thread was given or found: in the user's messages, the
    ``uploads`` texts, tool results, and the arguments of tool calls that did not fail which are
    a URL (a page fetched; not the content of a file written)."""
    texts: list[str] = list(uploads)
    results = tool_results(messages)
    for message in messages:
        if isinstance(message, HumanMessage) and not is_harness(message):
            texts.append(message.text)
        elif isinstance(message, ToolMessage):
            texts.append(message.text)
        elif isinstance(message, AIMessage):
            for call in message.tool_calls:
                result = results.get(call.get("id") or "")
                if result is not None and not failed(result):  # an argument that is a URL (not text holding one)
                    texts += [
                        v.strip()
                        for v in (call.get("args") or {}).values()
                        if isinstance(v, str) and _URL.fullmatch(v.strip())
                    ]
    return {_key(u) for text in texts for u in urls_in(text)}


def unseen_urls(text: str, known: set[str]) -> list[str]:
    """The URLs of ``text`` (outside code) that are not in ``known``, nor the root of a known one."""
    prose = _CODE.sub(" ", text)
    out = []
    for url in dict.fromkeys(urls_in(prose)):
        key = _key(url)
        if _reserved(url) or key in known or any(k.startswith(key + "/") for k in known):
            continue
        out.append(url)
    return out


def _written(run: Sequence[Any]) -> dict[str, str]:
    """The text files the run wrote with write_file that succeeded: path -> its last content."""
    results = tool_results(run)
    files: dict[str, str] = {}
    for message in run:
        for call in message.tool_calls if isinstance(message, AIMessage) else []:
            args = call.get("args") or {}
            path = str(args.get("path") or "")
            result = results.get(call.get("id") or "")
            if (
                call["name"] == "write_file"
                and path.lower().endswith(TEXT_SUFFIXES)
                and result is not None
                and not failed(result)
            ):
                files[path] = (files.get(path, "") if args.get("append") else "") + str(args.get("content") or "")
    return files


def unseen_sources(
    reply: str, messages: Sequence[Any], run: Sequence[Any], uploads: Iterable[str] = ()
) -> list[Finding]:
    """``source.unseen`` findings: one for the URLs of ``reply`` nobody showed (rewrite the
    answer), one per text file of the run holding such URLs (rewrite the file). ``messages``:
    the thread; ``run``: this run's messages; ``uploads``: the texts of uploaded files."""
    known = known_urls(messages, uploads)
    found = []
    in_reply = unseen_urls(reply, known)
    if in_reply:
        found.append(Finding("source.unseen", {"urls": in_reply[:MAX_URLS], "path": None}, (), ANSWER))
    for path, content in _written(run).items():
        urls = unseen_urls(content, known)
        if urls:
            found.append(
                Finding("source.unseen", {"urls": urls[:MAX_URLS], "path": path}, ("write_file",), WRITE_IF_ALONE)
            )
    return found


_LINK = re.compile(r"\[([^\]\n]*)\]\(\s*(https?://[^)\s]+)\s*\)", re.IGNORECASE)


def strip_unseen(reply: str, urls: Sequence[str]) -> str:
    """``reply`` with each of ``urls`` taken out and marked :data:`MARK` (a Markdown link keeps its
    text; other URLs, seen ones, stay as they are)."""
    drop = set(urls)

    def link(match: re.Match[str]) -> str:
        return f"{match.group(1)} {MARK}" if match.group(2).rstrip(_TRAILING) in drop else match.group(0)

    def bare(match: re.Match[str]) -> str:
        url = match.group(0).rstrip(_TRAILING)
        return MARK + match.group(0)[len(url) :] if url in drop else match.group(0)

    return _URL.sub(bare, _LINK.sub(link, reply))
