"""An edit made in one file of a folder and left undone in the others.

Asked to change something across a folder (bump a version "everywhere in pkg", update the imports
after a module was renamed, rename a function its callers use), the embedded 1.5B model edits the
first file it reads and answers; the same text stays in the folder's other files. Whatever the
request's language, the run's own edits say what the change is: a ``str_replace`` that worked
(its ``old`` and ``new``) or a ``sed -i 's/OLD/NEW/'`` that did. :func:`edit_not_everywhere` takes
the word that changed (``1.4.0`` -> ``1.5.0`` from ``__version__ = "1.4.0"``; ``helpers`` ->
``common`` from ``import helpers``) and looks for it, as a whole word, in the other text files
of the folder the request names; the finding (``edit.not_everywhere``) names those files and
gives the one ``sed`` command that makes the same change in them.

Only when the request names a folder and no file inside it: a request that names the file to
change ("fix the bug in stats.py") means that file, and the same word elsewhere is none of the
change's business. Hand-written: the changed word is the difference of two strings widened to
word characters, which no library gives; files are read through the check's bounded lookup.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from langchain_core.messages import AIMessage

from herdsman.middleware.completion.findings import COMMAND, Finding
from herdsman.middleware.completion.rules import failed, request_folders, request_paths, tool_results

MAX_WORD = 60
"""A longer change is a rewrite of a passage, not a word to make everywhere."""
MAX_FILES_READ = 200
SHOWN = 4
MIN_WORD = 3
"""A shorter word (``1``, ``x``) is in every file."""


def _widens(text: str, at: int, step: int) -> bool:
    """Whether a changed span of ``text`` takes in ``text[at]``, the character next to it on the
    side ``step`` points to: a word character, or the dot of a version number between two digits
    (``1.4.0``; not the dot of ``helpers.slugify``)."""
    if not 0 <= at < len(text):
        return False
    if re.match(r"\w", text[at]):
        return True
    beyond, inner = at + step, at - step
    return (
        text[at] in ".-"
        and 0 <= beyond < len(text)
        and 0 <= inner < len(text)
        and text[beyond].isdigit()
        and text[inner].isdigit()
    )


_SED = re.compile(r"""\bsed\s+(?:-\w*i\w*\s+)+(?:-e\s+)?(['"]?)s([/|#,])((?:\\.|(?!\2).)+)\2((?:\\.|(?!\2).)*)\2g?\1""")
_REGEX_META = re.compile(r"(?<!\\)[\[\]*^$+?(){}|]")


def changed_word(old: str, new: str) -> tuple[str, str] | None:
    """The word that ``old`` -> ``new`` changes, widened to whole words (``1.4.0``, ``1.5.0``), or
    None when the change is no single short word (several lines, a passage, only spacing)."""
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    end = 0
    while end < min(len(old), len(new)) - start and old[-1 - end] == new[-1 - end]:
        end += 1
    while start > 0 and _widens(old, start - 1, -1):
        start -= 1
    while end > 0 and _widens(old, len(old) - end, 1):
        end -= 1
    word, replacement = old[start : len(old) - end].strip(), new[start : len(new) - end].strip()
    if len(word) < MIN_WORD or len(word) > MAX_WORD or "\n" in word + replacement or word == replacement:
        return None
    return word, replacement


def _sed_change(command: str) -> tuple[str, str] | None:
    """The literal change of a ``sed -i 's/OLD/NEW/g'`` in ``command`` (escaped dots unescaped),
    or None when it has none or its pattern is a regular expression beyond a literal."""
    match = _SED.search(command)
    if match is None or _REGEX_META.search(match.group(3)):
        return None
    old = re.sub(r"\\(.)", r"\1", match.group(3).replace(r"\b", ""))
    new = re.sub(r"\\(.)", r"\1", match.group(4))
    return changed_word(old, new)


def _worked(run: Sequence[Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The name and arguments of each call of the run whose result is there and no failure."""
    results = tool_results(run)
    for message in run:
        for call in message.tool_calls if isinstance(message, AIMessage) else ():
            result = results.get(call.get("id") or "")
            if result is not None and not failed(result):
                yield call["name"], call.get("args") or {}


def run_changes(run: Sequence[Any]) -> list[tuple[str, str]]:
    """The words the run's edits that worked changed, in order, each once."""
    found: list[tuple[str, str]] = []
    for name, args in _worked(run):
        if name == "str_replace":
            change = changed_word(str(args.get("old", "")), str(args.get("new", "")))
        elif name == "bash":
            change = _sed_change(str(args.get("command", "")))
        else:
            change = None
        if change is not None and change not in found:
            found.append(change)
    return found


def edited_in_named_folder(request: str, run: Sequence[Any]) -> bool:
    """Whether the request names a folder and no file in it, and an edit of the run that worked
    (``str_replace``, ``write_file`` on a path, a ``sed -i`` naming the folder) changed a file in
    it: the change asked for is the folder's, and which of its files it touches the edits show
    (``file.change_not_made`` guessed ``common.py`` from "I renamed helpers.py to common.py in
    tool... update the imports in the other files" after the model had edited main.py)."""
    folders = [f.rstrip("/") + "/" for f in request_folders(request)]
    if not folders or any(p.startswith(tuple(folders)) for p in request_paths(request)):
        return False
    for name, args in _worked(run):
        target = str(args.get("path") or "") if name in ("str_replace", "write_file") else ""
        if name == "bash" and _SED.search(str(args.get("command", ""))):
            target = next((f for f in folders if f in str(args.get("command", ""))), "")
        if target.startswith(tuple(folders)):
            return True
    return False


def _sed_command(word: str, replacement: str, files: Iterable[str]) -> str:
    """The ``sed -i`` command that replaces the whole word ``word`` by ``replacement`` in ``files``."""
    pattern = re.sub(r"([.*\[\]^$\\/])", r"\\\1", word)
    if re.match(r"\w", word):
        pattern = r"\b" + pattern
    if re.search(r"\w$", word):
        pattern += r"\b"
    escaped = re.sub(r"([&/\\])", r"\\\1", replacement)
    script = f"s/{pattern}/{escaped}/g"
    return f"sed -i {shlex.quote(script)} " + " ".join(shlex.quote(f) for f in files)


def edit_not_everywhere(
    request: str, run: Sequence[Any], entries: Iterable[str], text_of: Callable[[str], str | None]
) -> Finding | None:
    """``edit.not_everywhere`` for the first word the run's edits changed that is still in other
    text files of the folder the request names (``entries``: the thread's file paths;
    ``text_of``: a small file's text, None for a large or binary one)."""
    folders = request_folders(request)
    changes = run_changes(run) if folders else []
    if not changes:  # no edit to repeat: no file is read
        return None
    named = [p for p in request_paths(request) if p not in folders]
    paths = list(entries)
    for folder in folders:
        inside = [p for p in paths if p.startswith(folder.rstrip("/") + "/")]
        if not inside or any(n.startswith(folder.rstrip("/") + "/") for n in named):
            continue
        texts = {p: text_of(p) or "" for p in inside[:MAX_FILES_READ]}
        for word, replacement in changes:
            whole = re.compile(rf"(?<![\w.]){re.escape(word)}(?!\w)")
            left = [p for p, text in texts.items() if whole.search(text)]
            if left:
                evidence = {
                    "old": word,
                    "new": replacement,
                    "folder": folder,
                    "files": left[:SHOWN],
                    "more": max(0, len(left) - SHOWN),
                    "command": _sed_command(word, replacement, left),
                }
                return Finding("edit.not_everywhere", evidence, ("bash",), COMMAND)
    return None
