"""The completion check's rules that need no files: what a reply, the request and the run's
tool results say (numbers shown and numbers guessed, code shown instead of used, the file a
request asks to change, why a command failed). Calls written as text are found by
:mod:`~herdsman.turns.text_calls`, the rules on delivered files are in
:mod:`~herdsman.middleware.completion.files`, those on searching in
:mod:`~herdsman.middleware.completion.search`, the tool plan after a note in
:mod:`~herdsman.middleware.completion.plan`.

Pure functions of messages and text, so each rule can be read and tested on its own; those that
find something return a :class:`~herdsman.middleware.completion.findings.Finding` (its words are in
:mod:`~herdsman.middleware.completion.findings_text`). :mod:`herdsman.middleware.completion.check` applies
them, with the thread's files, when the model stops. The words of intent some rules read
("fix", "how many", "which ... largest", in each language they declare in
:data:`~herdsman.middleware.completion.findings.RULES`) are in :mod:`~herdsman.middleware.completion.intent_words`.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage

from herdsman.middleware.completion.findings import ANSWER, COMMAND, EDIT, REPRODUCE, Finding, noted
from herdsman.middleware.completion.intent_words import counted_unit, extreme, said_word, says
from herdsman.middleware.completion.table_query import table_query

EXIT_CODE = re.compile(r"\[exit code [1-9]\d*\]\s*$")
SOURCE_SUFFIXES = (
    ".py",
    ".js",
    ".ts",
    ".sh",
    ".ini",
    ".cfg",
    ".toml",
    ".yaml",
    ".yml",
    ".json",
    ".conf",
    ".txt",
    ".md",
)
# ASCII bounds: "共有5个" holds the number 5 (CJK characters are word characters for \w), "3rd" none
NUMBER = re.compile(r"(?<![A-Za-z0-9_.])-?\d+(?:\.\d+)?(?![A-Za-z0-9_.]*[A-Za-z0-9_])")


def numbers_in(text: str) -> set[str]:
    """The numbers in ``text``, normalized (no sign, no trailing zeros, no thousands commas)."""
    return {
        n.lstrip("-").rstrip("0").rstrip(".") if "." in n else n.lstrip("-")
        for n in NUMBER.findall(text.replace(",", ""))
    }


_GUTTER = re.compile(r"^ *\d+\t", re.MULTILINE)
MAX_CHECKED_NUMBERS = 20
_ONLY_NUMBERS = re.compile(r"-?\d+(?:\.\d+)?(?:[\s,;]+-?\d+(?:\.\d+)?)*")
_READ_RANGE = re.compile(r"^\[lines \d+-\d+ of \d+\]$", re.MULTILINE)


def shown_numbers(result: ToolMessage) -> set[str]:
    """The numbers a tool result shows; read_file's line numbers are its own decoration, not the
    file's (a model counting matching lines by eye in a listing answers with a line number)."""
    text: str = result.text
    if result.name == "read_file":
        text = _READ_RANGE.sub("", _GUTTER.sub("", text))
    return numbers_in(text)


def unsupported_numbers(request: str, reply: str, results: Sequence[ToolMessage]) -> list[str]:
    """Numbers the reply states that neither the request nor any tool result of the run shows
    (an answer the model made up, or worked out in its head)."""
    seen = numbers_in(request)
    for result in results:
        seen |= shown_numbers(result)
    return [n for n in sorted(numbers_in(reply)) if not is_shown(n, seen)]


_NAME = re.compile(r"(?<![\w./-])[A-Z][a-z]{2,}(?![\w/-])")
_SENTENCE_START = re.compile(r"(?:^|[.!?:]\s+|\n)\s*$")
MAX_SHORT_ANSWER_WORDS = 15
MAX_BARE_NAME_WORDS = 3
"""A reply of at most this many capitalized words is a name given bare ("Neptune", "New York"):
its first word counts too, though it starts the reply."""
ANSWER_WORDS = frozenset({"yes", "no", "none", "true", "false", "done", "okay", "unknown", "nothing"})
"""Capitalized words a bare answer may be that are not names."""


def unsupported_names(request: str, reply: str, results: Sequence[ToolMessage]) -> list[str]:
    """The names (capitalized words of the Latin script, not starting a sentence, or the whole
    reply when it is a name given bare) of a short answer that neither the request nor any tool
    result shows: "The planet farthest from the sun is Neptune." or "Neptune" after a script
    printed only 9.54. Compared without regard to case; an answer
    longer than :data:`MAX_SHORT_ANSWER_WORDS` words is an explanation, not a value, and is left alone."""
    if len(reply.split()) > MAX_SHORT_ANSWER_WORDS:
        return []
    seen = (request + "\n" + "\n".join(r.text for r in results)).lower()
    words = reply.strip().rstrip(".!").split()
    if 0 < len(words) <= MAX_BARE_NAME_WORDS and all(_NAME.fullmatch(w) for w in words):  # "Neptune": all of it
        names = [w for w in words if w.lower() not in ANSWER_WORDS | _STOCK_REPLIES]
    else:
        names = [m.group(0) for m in _NAME.finditer(reply) if not _SENTENCE_START.search(reply[: m.start()])]
    return [n for n in dict.fromkeys(names) if n.lower() not in seen]


_FILE_NAME = re.compile(r"(?<![\w.-])([\w-]+\.[A-Za-z0-9]{1,8})(?![\w-])")  # d.bin, report.md, also at a path's end
_DENIAL = {
    "en": re.compile(r"^\W*(?:no\b|not\b|there (?:is|are) no\b|there isn't|it (?:does not|doesn't))", re.IGNORECASE),
    "zh": re.compile(r"^\W*(?:不|没有|没|否)"),
}


LISTING_TOOLS = frozenset({"ls", "glob", "bash"})
"""The tools whose results can list files (for :func:`denied_but_shown`)."""


def denied_but_shown(request: str, reply: str, results: Sequence[ToolMessage], language: str) -> Finding | None:
    """``answer.denied_but_shown`` when the answer says no (in the request's language) to a
    request that names a file, and a listing of the run (:data:`LISTING_TOOLS`: ``ls``, ``glob``,
    or a ``bash`` command such as ``find``) shows a path ending in that file's name: "Is there a
    file called d.bin anywhere under media?" answered "No." under a listing that shows
    media/deep/d.bin. A search's "no matches for 'client' in .../access.log" names the file it
    searched, and the answer "No matches" denies the matches, not the file: results of other tools
    are left out. The words of denial are English and Chinese (:data:`_DENIAL`)."""
    denial = _DENIAL.get(language)
    if denial is None or not denial.search(reply):
        return None
    names = list(dict.fromkeys(_FILE_NAME.findall(request)))
    for result in results:
        if result.name not in LISTING_TOOLS:
            continue
        for name in names:
            listed = re.search(rf"(/mnt/user-data/[\w./-]*/{re.escape(name)})(?![\w.-])", result.text)
            if listed:
                return Finding("answer.denied_but_shown", {"name": name, "path": listed.group(1)}, (), ANSWER)
    return None


def is_shown(number: str, shown: set[str]) -> bool:
    """Whether ``number`` is one of ``shown``, or one of them rounded to its decimals (2050.65 for
    a tool's 2050.6499999999996)."""
    if number in shown:
        return True
    decimals = len(number.split(".", 1)[1]) if "." in number else None
    if decimals is None:
        return False
    return any(
        "." in s and len(s.split(".", 1)[1]) > decimals and f"{float(s):.{decimals}f}".rstrip("0").rstrip(".") == number
        for s in shown
    )


_CODE_FENCE = re.compile(r"```[ \t]*(python3?|py|bash|sh|shell)[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
FENCE_SUFFIX = {"py": ".py", "ba": ".sh", "sh": ".sh"}  # fence language (first two letters) -> file type


def fenced_code(reply: str) -> list[tuple[str, str]]:
    """The Python and shell code blocks of a reply: (language, code)."""
    return [(m.group(1).lower(), m.group(2)) for m in _CODE_FENCE.finditer(reply) if m.group(2).strip()]


def mention(text: str, name: str) -> re.Match[str] | None:
    """Where ``text`` first names the file ``name`` as a whole (stats.py is not test_stats.py)."""
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", text)


_OUTPUT_FOLDER = re.compile(r"(/mnt/user-data/outputs/[\w./-]*[\w-])(?=[\s,;:)]|\.?$|\.\s)")


def output_folders(request: str) -> list[str]:
    """Folders under outputs the request names (a path without a file extension), to be made
    and filled (a model asked for a folder of files writes a plan elsewhere and answers "Done.")."""
    found = [m.group(1) for m in _OUTPUT_FOLDER.finditer(request)]
    return [f for f in dict.fromkeys(found) if "." not in f.rsplit("/", 1)[-1]]


def request_paths(request: str) -> list[str]:
    """The /mnt/user-data paths the request names, in order."""
    return re.findall(r"/mnt/user-data/[\w./-]*[\w-]", request)


def request_folders(request: str) -> list[str]:
    """The paths the request names that look like folders (no extension on the last part)."""
    return [p for p in request_paths(request) if "." not in p.rsplit("/", 1)[-1]]


def change_targets(request: str, names: Sequence[str], language: str = "en") -> list[str]:
    """Which of the existing files the request ``names`` it asks to change: those named after
    its first change verb ("python3 test_stats.py fails. Fix the bug in stats.py (not the
    test)": stats.py), or all of them when none is."""
    verb = says("change", request, language)
    if verb is None:
        return list(names)
    # the first mention after the verb, by the file's name ("Fix server.py" names /mnt/.../server.py too)
    first = {n: mention(request[verb.end() :], n.rsplit("/", 1)[-1]) for n in names}
    after = [n for n, m in first.items() if m is not None]
    # a file the change reads from is not the one to change ("Fix server.py so it prints the port
    # from config.json": config.json is read, not changed)
    changed = [n for n in after if not _SOURCE_BEFORE.search(request[: verb.end() + first[n].start()])]  # type: ignore[union-attr]  # first holds a match for every name in after (built from the same matches)
    return changed or after or list(names)


_SOURCE_BEFORE = re.compile(
    r"\b(?:from|using|reads?|than|like)\s+(?:the\s+)?(?:file\s+)?(?:/mnt/user-data/[\w./-]*/)?$", re.IGNORECASE
)


_RUN_COMMAND = re.compile(
    r"\b(?:python3?|node|bash|sh)\s+[\w./-]+\.(?:py|js|sh)\b"
    r"(?:[ \t]+(?!(?:prints?|fails?|crashes|should|so|and|with|to|but|then)\b)[\w./=-]+)*",
    re.ASCII,
)  # ASCII: the arguments end where a request in Chinese goes on (add.py 2 3 4 输出...)
_NO_MODULE = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")  # Python's own words, any request language
_USER_FRAME = re.compile(r'File "(/mnt/user-data/[^"]+\.py)", line \d+')  # a traceback frame in the user's files
_PLACEHOLDER_WORD = re.compile(r"\b(?:FILE|PATH|FILENAME|INPUT|NAME|DIR|ARG)S?\b")


_SUBAGENT_WROTE = re.compile(r"^Files written: (.+)$", re.MULTILINE)
"""The line of a sub-agent's result (``subagents/result.py``) that lists the files it wrote."""


def untested_change(
    request: str, targets: Sequence[str], run: Sequence[Any], samples: Sequence[str] = ()
) -> list[Finding]:
    """``script.changed_not_run`` when the run (or a sub-agent it started) changed one of the
    scripts ``targets`` (files the request named) but ran no command since (an edit that breaks a
    script, then an answer that it is fixed), once per run. The command is the one the request
    names, when it names one; a placeholder in it (FILE in "python3 wc.py FILE") is given one of
    ``samples``, files that exist (a model runs the request's placeholder as a file name, again
    and again)."""
    scripts = [t for t in targets if t.endswith((".py", ".sh", ".js"))]
    names = tuple(t.rsplit("/", 1)[-1] for t in scripts)
    results = tool_results(run)
    last_edit = last_run = -1
    for i, message in enumerate(run):
        for call in message.tool_calls if isinstance(message, AIMessage) else []:
            path = str((call.get("args") or {}).get("path", ""))
            result = results.get(call.get("id") or "") if call["name"] == "task" else None
            wrote = _SUBAGENT_WROTE.search(result.text) if result is not None else None
            if (call["name"] in ("write_file", "str_replace") and path.endswith(names)) or (
                wrote is not None and any(p.strip().endswith(names) for p in wrote.group(1).split(","))
            ):  # the lead's edit, or a sub-agent's (its result lists the files it wrote)
                last_edit = i
            elif call["name"] == "bash":
                last_run = i
    if last_edit < 0 or last_run > last_edit or noted(run, "script.changed_not_run"):
        return []
    command = _RUN_COMMAND.search(request)
    placeholder = _PLACEHOLDER_WORD.search(command.group(0)) if command else None
    evidence = {
        "scripts": scripts,
        "command": command.group(0) if command else None,
        "placeholder": placeholder.group(0) if placeholder and samples else None,
        "sample": samples[0] if placeholder and samples else None,
    }
    return [Finding("script.changed_not_run", evidence, ("bash",), COMMAND)]


_PATHS_AND_NAMES = re.compile(r"[\w./-]*[/.][\w./-]*\w")  # paths and file names: their digits are no values


def request_command(request: str) -> str | None:
    """The command line the request shows for running a script ("python3 add.py 2 3 4"), if any."""
    found = _RUN_COMMAND.search(request)
    return found.group(0) if found else None


def command_arguments(words: Sequence[str]) -> list[str]:
    """The arguments among the ``words`` after a request's ``python3 script.py``: up to the first
    plain word ("python3 main.py works again": the sentence goes on, the command ends)."""
    kept = []
    for arg in words:
        if arg.rstrip(".,;:").isalpha() and not arg.isupper():
            break
        kept.append(arg)
    return kept


_READS_ARGUMENTS = re.compile(
    r"\bargv\b|argparse|optparse|getopt|\bclick\b|\btyper\b|\bfire\b|docopt|sys\.stdin|\binput\s*\(|fileinput"
)


def ignores_arguments(request: str, scripts: Sequence[str], text_of: Callable[[str], str | None]) -> Finding | None:
    """``script.ignores_arguments`` when the request shows its script run with arguments
    ("python3 add.py 2 3 4") and the Python script of that name the run wrote (``scripts``; its
    text by ``text_of``) reads none (no sys.argv, argparse, stdin...): a small model writes the
    example's values into the code, and the command then prints the right thing for them alone.
    A command line and code read the same way in any language."""
    command = request_command(request)
    if command is None:
        return None
    program, name, *words = command.split()
    args = [a.rstrip(".,;:") for a in command_arguments(words)]
    script = next((s for s in scripts if s.rsplit("/", 1)[-1] == name.rsplit("/", 1)[-1]), None)
    if not args or script is None or not script.endswith(".py"):
        return None
    text = text_of(script)
    if not text or _READS_ARGUMENTS.search(text):
        return None
    shown = " ".join([program, name, *args])
    return Finding("script.ignores_arguments", {"path": script, "command": shown, "args": args}, ("write_file",), EDIT)


def command_not_run(request: str, run: Sequence[Any], script_path: str | None) -> Finding | None:
    """``command.not_run`` when the request shows a command that runs a script that was there
    when the run began (``script_path``: where it is; None: not there then), and the run neither
    ran nor read that script nor changed a file yet: "update the imports so python3 main.py
    works again" answered after edits made blind (from the dev split: the model wrote a new main.py in the wrong folder;
    the traceback would have named cli.py). The command runs in the script's folder, where the
    request's relative names hold. Any language: the command is the request's own."""
    found = request_command(request)
    if found is None or script_path is None:
        return None
    program, script, *args = found.split()
    shown = " ".join([program, script, *command_arguments(args)]).rstrip(".,;:")
    name = script_path.rsplit("/", 1)[-1]
    results = tool_results(run)
    calls = [c for m in run if isinstance(m, AIMessage) for c in m.tool_calls]
    if any(
        (c["name"] == "bash" and name in str((c.get("args") or {}).get("command") or ""))
        or (c["name"] == "read_file" and str((c.get("args") or {}).get("path") or "").endswith(name))
        for c in calls
    ):
        return None  # the model looked at the script or ran it: its way, not a blind one
    if any(
        c["name"] in ("write_file", "str_replace")
        and (result := results.get(c.get("id") or "")) is not None
        and not failed(result)
        for c in calls
    ):
        return None  # something was changed: the checks on changed scripts take it from there
    folder = script_path.rsplit("/", 1)[0]
    evidence = {"shown": shown, "command": f"cd {shlex.quote(folder)} && {shown}"}
    return Finding("command.not_run", evidence, ("bash",), REPRODUCE)


def command_outcome(request: str, scripts: Sequence[str], run: Sequence[Any]) -> Finding | None:
    """What the command the request shows ("python3 add.py 2 3 4") printed, the last time the run
    ran it on one of ``scripts`` (files the run wrote), checked against the request:

    - ``script.printed_nothing``: it exited 0 and printed nothing (``def add(a, b, c)`` and no code
      that reads the arguments);
    - ``script.output_differs``: it printed only numbers, and a number the request gives outside
      the command and its paths is not among them ("should print 3, 2, 1 ... (python3
      countdown.py 3)" and the fixed script printed 2 and 1).

    Numbers and a command line are read the same way in any language. Each said once per run."""
    command = request_command(request)
    if command is None:
        return None
    name = command.split()[1].rsplit("/", 1)[-1]
    script = next((s for s in scripts if s.rsplit("/", 1)[-1] == name), None)
    if script is None:
        return None
    results = tool_results(run)
    last: ToolMessage | None = None
    for message in run:
        for call in message.tool_calls if isinstance(message, AIMessage) else []:
            args = call.get("args") or {}
            if call["name"] == "bash" and mention(str(args.get("command", "")), name):
                last = results.get(str(call.get("id")), last)
            elif call["name"] in ("write_file", "str_replace") and str(args.get("path", "")).endswith("/" + name):
                last = None  # changed since: what it printed before says nothing now
    if last is None or failed(last):
        return None
    printed = last.text.strip()
    evidence = {"command": command, "path": script}
    if printed in ("", "(no output)"):
        return (
            None
            if noted(run, "script.printed_nothing")
            else Finding("script.printed_nothing", evidence, ("write_file",), EDIT)
        )
    rest = _PATHS_AND_NAMES.sub(" ", request.replace(command, " "))
    expected = sorted(numbers_in(rest), key=float)
    if not _ONLY_NUMBERS.fullmatch(printed) or not expected or len(expected) > MAX_CHECKED_NUMBERS:
        return None
    missing = [n for n in expected if not is_shown(n, numbers_in(printed))]
    if not missing or noted(run, "script.output_differs"):
        return None
    return Finding(
        "script.output_differs", {**evidence, "printed": printed[:200], "missing": missing[:5]}, ("read_file",), EDIT
    )


_ECHO_TO_FILE = re.compile(r"echo\s+(?:-n\s+)?(['\"]?[-\d.\s,]+['\"]?)\s*>\s*(\S+)")


_WC = {"words": "-w", "lines": "-l", "characters": "-m"}


def count_command(request: str, language: str = "en") -> str | None:
    """The command that counts what the request asks to count in the file it names ("count the
    words in essay.txt": ``wc -w essay.txt``), or None (a model asked for a count reads the file
    and guesses it; the words are those of :func:`~herdsman.middleware.completion.intent_words.counted_unit`)."""
    what = counted_unit(request, language)
    files = [f for f in re.findall(r"(?:/mnt/user-data/)?[\w./-]+\.\w+", request) if "/outputs/" not in f]
    if what is None or not files:
        return None
    return f"wc {_WC[what]} < {files[0]}"


def _writes(run: Sequence[Any], request: str) -> Iterator[tuple[str, str, set[str]]]:
    """``(path, content, numbers shown so far)`` for each write of the run that succeeded: a
    write_file (not an append), or ``echo N > file``. The numbers are those of the request and of
    the tool results before the write."""
    seen = numbers_in(request)
    results = tool_results(run)
    for message in run:
        if isinstance(message, ToolMessage):
            seen |= shown_numbers(message)
        elif isinstance(message, AIMessage):
            for call in message.tool_calls:
                args = call.get("args") or {}
                result = results.get(call.get("id") or "")
                echoed = (
                    _ECHO_TO_FILE.fullmatch(str(args.get("command") or "").strip()) if call["name"] == "bash" else None
                )
                if (
                    (call["name"] != "write_file" and echoed is None)
                    or result is None
                    or failed(result)
                    or args.get("append")
                ):
                    continue
                if echoed:
                    yield echoed.group(2), echoed.group(1).strip().strip("'\""), seen
                else:
                    yield str(args.get("path")), str(args.get("content", "")), seen


def data_numbers(content: str) -> set[str]:
    """The numbers of a file that holds data: all of them when it is nothing but numbers, the
    numeric values of a JSON document of at most :data:`MAX_CHECKED_NUMBERS` of them (not its
    keys or strings: ``{"a": 899, "b": 1234}``); else none (prose states its numbers among
    words: :func:`made_up_figures`)."""
    content = content.strip()
    if _ONLY_NUMBERS.fullmatch(content):
        return numbers_in(content)
    if not content.startswith(("{", "[")):
        return set()
    try:
        document = json.loads(content)
    except (ValueError, RecursionError):
        return set()
    values: list[str] = []
    stack = [document]
    while stack and len(values) <= MAX_CHECKED_NUMBERS:  # a long document is a sequence, not results
        node = stack.pop()
        if isinstance(node, dict | list):
            stack.extend(node.values() if isinstance(node, dict) else node)
        elif isinstance(node, int | float) and not isinstance(node, bool):
            values.append(json.dumps(node))
    return numbers_in(" ".join(values)) if len(values) <= MAX_CHECKED_NUMBERS else set()


def guessed_numbers(run: Sequence[Any], request: str) -> list[tuple[str, str]]:
    """(path, numbers) for each file the run wrote (write_file, or ``echo 1 > file``) whose content
    is data (:func:`data_numbers`: nothing but numbers, or a JSON document's numeric values) with
    numbers neither the request nor an earlier tool result shows (a count written without
    counting; a script's output typed instead of produced; from the benchmark: a sum of b.txt
    written as 1234 into {"a": 899, "b": 1234} when no tool had summed b.txt)."""
    last: dict[str, str | None] = {}  # path -> the guessed number its last write holds, or None
    for path, content, seen in _writes(run, request):
        numbers = data_numbers(content)
        # a short list only: "write 1 to 200" is a sequence the request describes, not a result
        unseen = sorted(numbers - seen, key=lambda n: (len(n), n)) if len(numbers) <= MAX_CHECKED_NUMBERS else []
        last[path] = ", ".join(unseen[:5]) if unseen else None
    return [(path, number) for path, number in last.items() if number is not None]


_FIGURE = re.compile(
    r"(?<![A-Za-z0-9_.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![A-Za-z0-9_.]*[A-Za-z0-9_])"
    r"|(?<![A-Za-z0-9_.,])\d+\.\d{2,}(?![A-Za-z0-9_.]*[A-Za-z0-9_])"
)


def comma_separated(path: str, content: str) -> bool:
    """Whether ``content`` is comma-separated values (a ``.csv`` file, or two lines or more with
    the same number of commas): there ``10,100`` is two fields, not ten thousand one hundred."""
    if path.lower().endswith(".csv"):
        return True
    counts = {line.count(",") for line in content.splitlines() if line.strip()}
    return len([line for line in content.splitlines() if line.strip()]) >= 2 and len(counts) == 1 and 0 not in counts


def made_up_figures(run: Sequence[Any], request: str) -> list[tuple[str, str]]:
    """(path, figures) for each text file whose last write fills it with figures (two decimals or
    more, or thousands with commas outside comma-separated values: computed values, not section
    numbers like 2.1 or years) that neither the request nor an earlier tool result shows (a
    report stating totals before anything read the data)."""
    found: dict[str, str | None] = {}
    for path, content, seen in _writes(run, request):
        if data_numbers(content):
            continue  # guessed_numbers has it
        text = content.replace(",", ", ") if comma_separated(path, content) else content
        figures = [f.replace(",", "") for f in _FIGURE.findall(text)]
        unseen = [f for f in dict.fromkeys(figures) if not is_shown(f, seen)]
        found[path] = ", ".join(unseen[:3]) if unseen else None
    return [(path, figures) for path, figures in found.items() if figures]


_STOCK_REPLIES = {"done", "ok", "okay", "finished", "complete", "completed", "saved", "success", "created", "fixed"}


_CJK_PUNCTUATION = "，。！？；：、"
"""Chinese and Japanese write sentences without spaces: their punctuation marks a sentence."""


def is_value(reply: str) -> bool:
    """Whether a reply is one value (a number, a name, a path), not a sentence (words with spaces,
    or CJK sentence punctuation) or a stock word."""
    return (
        0 < len(reply) <= 80
        and not any(c.isspace() or c in _CJK_PUNCTUATION for c in reply)
        and reply.lower().strip(".!") not in _STOCK_REPLIES
    )


def printed_line(run: Sequence[Any]) -> str | None:
    """The one short line the run's last tool result printed, when that call succeeded and the
    line is a value (a few words at most, with a digit, a capital, a dot, a slash or a letter
    outside ASCII): ``Cairo`` after a script that picks the warmest city, not ``notes``."""
    last = next((m for m in reversed(run) if isinstance(m, ToolMessage)), None)
    if last is None or failed(last):
        return None
    lines = [line.strip() for line in last.text.strip().splitlines() if line.strip()]
    if len(lines) != 1 or len(lines[0]) > MAX_PRINTED_LINE or lines[0] in ("(no output)",):
        return None
    line = lines[0]
    if len(line.split()) > MAX_BARE_NAME_WORDS or not _VALUE_LIKE.search(line):
        return None
    return line


MAX_PRINTED_LINE = 80
_VALUE_LIKE = re.compile(r"[0-9A-Z./]|[^\x00-\x7f]")
"""What makes a printed line a value rather than a word: a digit, a capital (a name), a dot or a
slash (a file, a path), or a letter outside ASCII (a name in Chinese)."""


def json_in(reply: str) -> str | None:
    """The first JSON object or list in a reply that is not empty, compact, or None."""
    decoder = json.JSONDecoder()
    for i, char in enumerate(reply):
        if char in "{[":
            try:
                value, _ = decoder.raw_decode(reply, i)
            except ValueError:
                continue
            if value:
                return json.dumps(value, ensure_ascii=False)
    return None


_COMPARING = re.compile(r"\b(?:sort|sorted|max|min|du|awk|python3?|node)\b|\bls\s+-\w*S")


def uncompared(request: str, run: Sequence[Any], language: str = "en") -> Finding | None:
    """``compare.not_made`` when the request asks which item is the largest (smallest,
    warmest...) and no command of the run compared anything (a model shown sizes in a listing
    picks one by eye, often the wrong one), once per run; with a command that compares."""
    match = says("superlative", request, language)
    if match is None or noted(run, "compare.not_made"):
        return None
    commands = " ".join(
        str((c.get("args") or {}).get("command") or "")
        for m in run
        if isinstance(m, AIMessage)
        for c in m.tool_calls
        if c["name"] == "bash"
    )
    if _COMPARING.search(commands):
        return None
    word = said_word(match)
    by_value = table_query(request, request_paths(request), extreme(word))
    if by_value is not None:  # a table the request names: the harness compares its values
        return Finding("compare.not_made", {"what": word, "command": by_value, "table": True}, ("bash",), COMMAND)
    folders = request_folders(request)
    by_size = f"ls -S {folders[0]} | head -n 1" if folders else "ls -S <folder> | head -n 1"
    return Finding("compare.not_made", {"what": word, "command": by_size}, ("bash",), COMMAND)


def _command_artifact(result: ToolMessage) -> dict[str, Any] | None:
    """The bash tool's record of the command behind ``result`` (its exit code and output), when
    the message carries it; the text then need not be parsed (the tool may add notes to it)."""
    artifact = getattr(result, "artifact", None)
    return (
        artifact
        if isinstance(artifact, dict) and isinstance(artifact.get("exit_code"), int) and "command" in artifact
        else None
    )


def failure_detail(result: ToolMessage) -> str:
    """The line that says why: a command's last output line and its exit code, else the first line."""
    record = _command_artifact(result)
    if record is not None and record["exit_code"] != 0:
        output = record.get("output") or f"{record.get('stdout') or ''}\n{record.get('stderr') or ''}"
        said = [line.strip() for line in str(output).splitlines() if line.strip()]
        return f"{said[-1][:200] if said else 'no output'} [exit code {record['exit_code']}]"
    lines = [line for line in result.text.strip().splitlines() if line.strip()]
    if not lines:
        return "no output"
    if EXIT_CODE.search(lines[-1]) and len(lines) > 1:
        return f"{lines[-2].strip()[:200]} {lines[-1].strip()}"
    return lines[0][:200]


_CHOICES = re.compile(
    r"(?:no|unknown|invalid) (?:column|field|key|option|choice|sheet)s?:? '([^']+)'.{0,40}?"
    r"(?:the columns are|the fields are|choose from|one of|available|valid (?:choices|values) are)[: ]+([^\n\[]+)",
    re.IGNORECASE,
)
_PYTHON_C = re.compile(r"\bpython3?\s+-c\b")
# one of the agent's own file tools run as a shell command (bash's words, any request language)
_TOOL_COMMAND = re.compile(r"\b(write_file|read_file|str_replace): command not found")


def called_command(run: Sequence[Any], result: ToolMessage) -> str:
    """The bash command of the call of ``run`` whose result is ``result`` ("" for another tool)."""
    call = next(
        (c for m in run if isinstance(m, AIMessage) for c in m.tool_calls if c.get("id") == result.tool_call_id), None
    )
    return str(((call or {}).get("args") or {}).get("command") or "") if call is not None else ""


def user_frames(traceback: str) -> list[str]:
    """The files under /mnt/user-data a Python traceback passes through, outermost first."""
    return _USER_FRAME.findall(traceback)


def one_liner_tip(run: Sequence[Any], result: ToolMessage) -> dict[str, str] | None:
    """The kind of hint (``{"kind": ...}`` with its values) for the commonest failures of a small
    model, read from the failed call and its output (a tool's words, not the request's): Python
    with for/with squeezed into ``python3 -c "...; ..."`` (a SyntaxError however it is retried); a
    placeholder of the request run as a file name ("python3 wc.py FILE"); ``rename``, which this
    sandbox does not have; a Python package that is not installed here (``ModuleNotFoundError``: a
    script of a few lines imported sympy for primes); one of the agent's file tools run as a shell
    command (``write_file out.txt "text"``: command not found); a name that is not among the
    choices an error lists ("no column 'total'; the columns are: date, region, amount", and the
    model sends 'total' again)."""
    command = called_command(run, result)
    if "SyntaxError" in result.text and _PYTHON_C.search(command):
        return {"kind": "python_c"}
    placeholder = _PLACEHOLDER_WORD.search(command)
    if placeholder and "No such file" in result.text and placeholder.group(0) in result.text:
        return {"kind": "placeholder", "word": placeholder.group(0)}
    choice = _CHOICES.search(result.text)
    if choice:
        return {"kind": "choices", "name": choice.group(1), "choices": choice.group(2).strip().rstrip(".)")}
    if re.search(r"\brename\b.*(?:No such file or directory|not found)", result.text):
        return {"kind": "rename"}
    tool = _TOOL_COMMAND.search(result.text)
    if tool:
        return {"kind": "tool_command", "name": tool.group(1)}
    missing = _NO_MODULE.search(result.text)
    if missing:
        frames = user_frames(result.text[: missing.start()])
        if frames:  # imported by a file of the user's: maybe a module of theirs (see local_module_tip)
            return {"kind": "local_module", "name": missing.group(1), "file": frames[-1]}
        return {"kind": "module", "name": missing.group(1)}
    return None


def local_module_tip(tip: dict[str, str] | None, paths: Iterable[str]) -> dict[str, str] | None:
    """``tip`` with, for a ``local_module`` one, the Python files beside the importing file
    (``paths``: the thread's files), which the model can import instead (a module renamed from
    helpers.py to common.py: the import of helpers fails, and common.py is listed). A file alone
    in its folder is no project of modules: its import is of a package (``module``)."""
    if not tip or tip.get("kind") != "local_module":
        return tip
    folder, own = tip["file"].rsplit("/", 1)
    siblings = sorted(p.rsplit("/", 1)[-1] for p in paths if p.rsplit("/", 1)[0] == folder and p.endswith(".py"))
    if not [s for s in siblings if s != own]:
        return {"kind": "module", "name": tip["name"]}
    return {**tip, "folder": folder, "siblings": ", ".join(siblings[:12])}


_ERROR_LINE = re.compile(
    r"^[\w./-]+: .*(?:No such file or directory|command not found|Is a directory|Permission denied|not found)$"
)


def tool_results(messages: Sequence[Any]) -> dict[str, ToolMessage]:
    """The tool results among ``messages`` (a run's, usually) by the id of the call each answers:
    where a rule looks up what a call returned."""
    return {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}


def failed(result: ToolMessage) -> bool:
    """Whether a tool result is a failure: an error status, a command's non-zero exit code, or
    output that is nothing but error lines (``grep x folder | head`` exits 0 with "grep: folder: Is
    a directory"; ``find -exec rename`` with no rename exits 0 with "find: 'rename': No such file
    or directory": a model moves on as if either had worked)."""
    record = _command_artifact(result)
    if result.status == "error" or (
        record["exit_code"] != 0 if record is not None else EXIT_CODE.search(result.text[-200:])
    ):
        return True
    lines = [line.strip() for line in result.text.strip().splitlines() if line.strip()]
    return result.name == "bash" and bool(lines) and all(_ERROR_LINE.match(line) for line in lines)
