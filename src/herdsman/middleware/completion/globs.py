"""A shell glob that stopped one folder short: ``chmod +x tools/*.sh`` when ``tools/ci/test.sh`` exists.

Asked (in Chinese) to make every ``.sh`` script under ``tools`` executable, the embedded 1.5B model
ran ``chmod +x /mnt/user-data/workspace/tools/*.sh`` and answered "Done."; the script in
``tools/ci`` stayed as it was. A ``*`` in a shell word matches one level only, which a small model
forgets whatever the request's language. :func:`shallow_glob` finds, after a command of the run
that succeeded, a word ``FOLDER/*.EXT`` (no other wildcard) over a folder the request names, where
files ``*.EXT`` exist in subfolders of that folder; the finding (``glob.shallow``) names a few of
them and gives the one command that reaches them all, the same command run through
``find FOLDER -name '*.EXT' -exec ... {} +``. Only commands that change files in place take part
(:data:`IN_PLACE`): ``mv`` and ``cp`` into a folder below the one globbed would be found again,
and nothing that deletes is proposed for more files than the model chose.

Language-neutral: the trigger is the command and the files, and the request only has to name the
folder. Hand-written: a command is split into shell words (``sandbox/shell_words.py``); no library
knows which files a glob would have missed.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.messages import AIMessage

from herdsman.middleware.completion.findings import COMMAND, Finding
from herdsman.middleware.completion.rules import failed, tool_results
from herdsman.sandbox.base import WORKSPACE
from herdsman.sandbox.shell_words import simple_commands

IN_PLACE = frozenset({"chmod", "chown", "chgrp", "touch", "sed", "dos2unix", "unix2dos"})
"""Commands that change each file they are given, in place and undoably enough to propose for the
files below too; nothing that deletes or truncates (``rm``, ``truncate``, ``gzip``): a request that
meant the top folder only would lose files to the proposal."""
MISSED_SHOWN = 3


def _folder_glob(word: str) -> tuple[str, str] | None:
    """``(folder, suffix)`` for a word ``FOLDER/*.SUFFIX`` with no other wildcard (the folder made
    absolute under the workspace, where bash runs), else None."""
    folder, _, last = word.rpartition("/")
    if not folder or not last.startswith("*.") or any(c in folder + last[1:] for c in "*?[]{}"):
        return None
    return (folder if folder.startswith("/") else f"{WORKSPACE}/{folder.removeprefix('./')}"), last[1:]


def shallow_glob(request: str, run: Sequence[Any], paths: Iterable[str]) -> Finding | None:
    """``glob.shallow`` for the first command of the run that succeeded, acted in place on
    ``FOLDER/*.EXT`` for a folder the request names, and left files ``*.EXT`` in subfolders of
    it (``paths``: the virtual paths of the thread's files)."""
    files = list(paths)
    results = tool_results(run)
    for message in run:
        if not isinstance(message, AIMessage):
            continue
        for call in message.tool_calls:
            result = results.get(call.get("id") or "")
            if call["name"] != "bash" or result is None or failed(result):
                continue
            command = str((call.get("args") or {}).get("command") or "")
            for words in simple_commands(command):
                found = _shallow(request, command, words, files)
                if found is not None:
                    return found
    return None


def _shallow(request: str, command: str, words: list[str], files: Sequence[str]) -> Finding | None:
    """The finding for one simple command (its shell words) of ``command``, or None."""
    if not words or words[0].rsplit("/", 1)[-1] not in IN_PLACE:
        return None
    for index, word in enumerate(words):
        glob = _folder_glob(word)
        if glob is None:
            continue
        folder, suffix = glob
        tail = folder.removeprefix(WORKSPACE + "/")
        if folder.rstrip("/") not in request and tail not in request:
            continue
        missed = [p for p in files if p.startswith(folder + "/") and "/" in p[len(folder) + 1 :] and p.endswith(suffix)]
        if not missed:
            continue
        rest = [*words[:index], "{}", *words[index + 1 :]]
        end = "+" if index == len(words) - 1 else "\\;"  # {} + only when {} comes last
        fix = f"find {shlex.quote(folder)} -name {shlex.quote('*' + suffix)} -exec {shlex.join(rest)} {end}"
        evidence = {
            "command": command.strip(),
            "folder": folder,
            "suffix": suffix,
            "missed": missed[:MISSED_SHOWN],
            "more": max(0, len(missed) - MISSED_SHOWN),
            "fix": fix.replace("'{}'", "{}"),
        }
        return Finding("glob.shallow", evidence, ("bash",), COMMAND)
    return None
