"""The completion check's rules on searching and counting: a search that found nothing before the
answer, a term of the request no call looked for, the count the last search printed, and a count
answered with numbers only read, none computed (:func:`counted_by_eye`, English and Chinese).

Pure functions of the request and the run's messages; the two search rules return a
:class:`~herdsman.middleware.completion.findings.Finding` that sends the next call to grep. They run on a
request that asks where something is, which or how many (English words, ``_FIND_QUESTION``):
their rules are declared English in :data:`~herdsman.middleware.completion.findings.RULES`.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage

from herdsman.middleware.completion.findings import COMMAND, SEARCH, Finding, noted
from herdsman.middleware.completion.intent_words import says
from herdsman.middleware.completion.rules import (
    count_command,
    is_shown,
    numbers_in,
    request_folders,
    request_paths,
    tool_results,
)
from herdsman.sandbox.grep_hint import NO_MATCH_NOTE
from herdsman.turns.turn import is_harness

_COUNT_LINE = re.compile(r"^\[\d+ (?:matches|matching lines in \d+ files?|entries)\]$", re.MULTILINE)


def count_line(results: Sequence[ToolMessage]) -> tuple[str, str] | None:
    """``(tool, line)``: the latest count a search tool printed ("[7 matches]"), or None (a model
    given a listing and its count answers with another number)."""
    for result in reversed(results):
        found = _COUNT_LINE.findall(result.text)
        if found:
            return result.name or "tool", found[-1]
    return None


_FIND_QUESTION = re.compile(
    (
        r"\b(?:which|what)\s+(?:\w+\s+)?files?\b|\bin which\b|\bwhere\b|\bmentions?\b|\bcontains?\b|\bdefined\b|\bhow "
        r"many\b"
    ),
    re.IGNORECASE,
)
_FOUND_NOTHING = re.compile(
    r"\A(?:\(no output\)|no matches for |no paths match )|: Is a directory$|No such file or directory", re.MULTILINE
)


def _search_of(call: dict[str, Any]) -> tuple[str, str] | None:
    """``(term, path)`` of a search call: the grep or glob tool, or grep/find in bash."""
    args = call.get("args") or {}
    if call["name"] == "grep":
        return str(args.get("pattern") or ""), str(args.get("path") or "")
    if call["name"] == "glob":
        return str(args.get("pattern") or ""), str(args.get("path") or "")
    if call["name"] != "bash":
        return None
    try:
        words = shlex.split(str(args.get("command") or ""))
    except ValueError:
        return None
    for i, word in enumerate(words):
        if word in ("grep", "egrep", "rg"):
            rest = [w for w in words[i + 1 :] if not w.startswith("-") and w not in ("|", ">")]
            if rest:
                return rest[0], rest[1] if len(rest) > 1 else ""
        if word == "find":
            named = [words[j + 1] for j in range(i, len(words) - 1) if words[j] in ("-name", "-iname")]
            if named:
                return named[0], words[i + 1] if len(words) > i + 1 else ""
    return None


def fruitless_search(request: str, run: Sequence[Any]) -> Finding | None:
    """``search.found_nothing`` when the request asks where something is (or how many) and the
    run's last search found nothing: a name search (``find -name f.py`` for a function), one
    file, a folder given to grep without -r ("Is a directory"), answered as "not found". The
    finding names the term and the folder for the grep tool, which searches inside every file
    under a folder; once per run."""
    if not _FIND_QUESTION.search(request) or noted(run, "search.found_nothing"):
        return None
    results = tool_results(run)
    for message in reversed(run):
        for call in reversed(message.tool_calls if isinstance(message, AIMessage) else []):
            search = _search_of(call)
            if search is None:
                continue
            result = results.get(call.get("id"))
            if result is None or not _FOUND_NOTHING.search(result.text.strip()):
                return None  # the last search found something: the answer may rest on it
            if NO_MATCH_NOTE in result.text:
                return None  # the result showed how the file writes its text: another search of the term is no way out
            term, path = search
            name = term.strip("*'\"").rsplit("/", 1)[-1]  # **/parse_date.py: parse_date.py
            term = re.sub(r"\.\w+$", "", name).strip("*") or term  # parse_date.py: parse_date
            folders = request_folders(request)
            folder = (
                folders[0]
                if folders
                else (path if path and "." not in path.rsplit("/", 1)[-1] else "/mnt/user-data/workspace")
            )
            return Finding(
                "search.found_nothing",
                {"tool": call["name"], "term": search[0], "grep": grep_arguments(request, term, folder)},
                ("grep",),
                SEARCH,
            )
    return None


_TERM = re.compile(r"(?<![\w/.-])(?:[A-Z]{3,}|[a-z]+(?:_[a-z0-9]+)+)(?![\w/.-])|'([^'\s]{2,40})'|\"([^\"\s]{2,40})\"")
_FORMATS = {
    "CSV",
    "JSON",
    "YAML",
    "HTML",
    "XML",
    "PDF",
    "TXT",
    "SQL",
    "API",
    "URL",
    "CLI",
    "PNG",
    "SVG",
    "TSV",
    "INI",
    "UTF",
}


def unsearched_term(request: str, run: Sequence[Any]) -> Finding | None:
    """``search.term_unsearched`` when a search request names a term (a word in capitals like
    TODO, a name like parse_date, a quoted word) that none of the run's tool calls looked for (a
    model asked how many comments of a kind files hold counts the files instead); once per run."""
    if not _FIND_QUESTION.search(request) or noted(run, "search.term_unsearched"):
        return None
    calls = " ".join(
        json.dumps(c.get("args"), default=str) for m in run if isinstance(m, AIMessage) for c in m.tool_calls
    )
    if not calls:
        return None  # no tool at all: another rule says so
    terms = [m.group(1) or m.group(2) or m.group(0) for m in _TERM.finditer(request)]
    terms = [t for t in terms if t not in _FORMATS]
    missing = [t for t in dict.fromkeys(terms) if t.lower() not in calls.lower()]
    if not missing:
        return None
    folders = request_paths(request)
    grep = grep_arguments(request, missing[0], folders[0] if folders else None)
    return Finding("search.term_unsearched", {"term": missing[0], "grep": grep}, ("grep",), SEARCH)


_DEFINED = re.compile(r"\bdefin(?:ed|es|ition)\b", re.IGNORECASE)
_KIND = re.compile(r"(?<![\w/])\.(\w{1,5}) files\b", re.IGNORECASE)


def grep_arguments(request: str, term: str, folder: str | None) -> dict[str, str | None]:
    """The grep tool's arguments a finding suggests (``pattern``, ``path``, ``glob``): the term
    (as a definition when the request asks where something is defined: a plain search also finds
    every use, and a model picks a use), the folder, and the files of the kind the request names
    ("the .py files": not a README that mentions the term too)."""
    pattern = f"(def|class|function) {term}" if _DEFINED.search(request) and re.fullmatch(r"\w+", term) else term
    kind = _KIND.search(request)
    return {"pattern": pattern, "path": folder or None, "glob": f"*.{kind.group(1)}" if kind else None}


COMPUTING_TOOLS = frozenset({"bash"})
"""Tools whose output is a computation (a command's result), not a file's contents or a listing."""


def counted_by_eye(request: str, reply: str, run: Sequence[Any], language: str) -> Finding | None:
    """``count.not_computed`` when the request asks for a count or a total and every number of
    the answer (beyond the request's own) shows only in what the model read (a file, a listing),
    never in a command's result: a small model given a JSON file answers "how many have status
    failed" with a number it saw in the data. With the counting command when the request names
    what to count. Said again once when a command did count since and the answer still gives a
    number none printed (the model counted, then repeated its first guess: ``again``)."""
    if says("count", request, language) is None:
        return None
    answered = numbers_in(reply) - numbers_in(request)
    if not answered:
        return None
    computed: set[str] = set()
    counted_since_note = False
    for message in run:
        if is_harness(message) and noted([message], "count.not_computed"):
            counted_since_note = False
        if isinstance(message, ToolMessage):  # a command's output, or a search tool's own count ([7 matches])
            numbers = numbers_in(
                message.text if message.name in COMPUTING_TOOLS else " ".join(_COUNT_LINE.findall(message.text))
            )
            computed |= numbers
            counted_since_note = counted_since_note or (message.name in COMPUTING_TOOLS and bool(numbers))
    if any(is_shown(n, computed) for n in answered):
        return None
    said = sum(noted([m], "count.not_computed") for m in run if is_harness(m))
    if said >= 2 or (said == 1 and not counted_since_note):
        return None
    command = count_command(request, language)
    return Finding(
        "count.not_computed",
        {"numbers": sorted(answered)[:3], "command": command, "again": said == 1},
        ("bash",),
        COMMAND,
    )
