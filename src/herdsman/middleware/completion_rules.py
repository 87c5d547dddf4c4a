"""The completion check's rules that need no files: what a reply, the request and the run's
tool results say (numbers shown and numbers guessed, code shown instead of used, calls written
as text, the file a request asks to change), and which tools the calls after a note must use.

Pure functions of messages and text, so each rule can be read and tested on its own;
:mod:`herdsman.middleware.completion_check` applies them, with the thread's files, when the
model stops.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage

from herdsman.middleware.turn import is_harness, this_run

EXIT_CODE = re.compile(r"\[exit code [1-9]\d*\]\s*$")
CHANGE_VERBS = re.compile(r"\b(fix|fixes|change|edit|update|modify|correct|set|repair)\b", re.IGNORECASE)
SOURCE_SUFFIXES = (".py", ".js", ".ts", ".sh", ".ini", ".cfg", ".toml", ".yaml", ".yml", ".json", ".conf", ".txt", ".md")
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.]*\w)")


def numbers_in(text: str) -> set[str]:
    """The numbers in ``text``, normalized (no sign, no trailing zeros, no thousands commas)."""
    return {n.lstrip("-").rstrip("0").rstrip(".") if "." in n else n.lstrip("-") for n in NUMBER.findall(text.replace(",", ""))}


_GUTTER = re.compile(r"^ *\d+\t", re.MULTILINE)
MAX_CHECKED_NUMBERS = 20
COUNT_QUESTION = re.compile(r"\b(how many|how much|what is the (?:total|sum|average|mean|count|number))\b", re.IGNORECASE)
_ONLY_NUMBERS = re.compile(r"-?\d+(?:\.\d+)?(?:[\s,;]+-?\d+(?:\.\d+)?)*")
_READ_RANGE = re.compile(r"^\[lines \d+-\d+ of \d+\]$", re.MULTILINE)


def shown_numbers(result: ToolMessage) -> set[str]:
    """The numbers a tool result shows; read_file's line numbers are its own decoration, not the
    file's (from the benchmark: counting 'failed' orders by eye, the model answered 11, a line
    number of the listing)."""
    text = result.text
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


_COUNT_LINE = re.compile(r"^\[\d+ (?:matches|matching lines in \d+ files?|entries)\]$", re.MULTILINE)


def count_line(results: Sequence[ToolMessage]) -> tuple[str, str] | None:
    """``(tool, line)``: the latest count a search tool printed ("[7 matches]"), or None (from the
    benchmark: glob listed seven .py files and said "[7 matches]"; the model answered 1, and
    wrote 1 when told that no tool showed it)."""
    for result in reversed(results):
        found = _COUNT_LINE.findall(result.text)
        if found:
            return result.name or "tool", found[-1]
    return None


def is_shown(number: str, shown: set[str]) -> bool:
    """Whether ``number`` is one of ``shown``, or one of them rounded to its decimals (2050.65 for
    a tool's 2050.6499999999996)."""
    if number in shown:
        return True
    decimals = len(number.split(".", 1)[1]) if "." in number else None
    if decimals is None:
        return False
    return any("." in s and len(s.split(".", 1)[1]) > decimals and f"{float(s):.{decimals}f}".rstrip("0").rstrip(".") == number
               for s in shown)


_MISSING = re.compile(r"^(?:The request asks for (\S+), which does not exist yet|(\S+) is empty\. Write its content)")


_CODE_FENCE = re.compile(r"```[ \t]*(python3?|py|bash|sh|shell)[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
CODE_NOT_WRITTEN = "Your reply shows the new code, but"
FENCE_SUFFIX = {"py": ".py", "ba": ".sh", "sh": ".sh"}  # fence language (first two letters) -> file type
CODE_NOT_RUN = "Your reply shows code that nothing ran."
ANSWER_OFFER = "Your answer was"
FOLDER_EMPTY = "The request asks for files in"


def fenced_code(reply: str) -> list[tuple[str, str]]:
    """The Python and shell code blocks of a reply: (language, code)."""
    return [(m.group(1).lower(), m.group(2)) for m in _CODE_FENCE.finditer(reply) if m.group(2).strip()]


def _mention(text: str, name: str) -> re.Match[str] | None:
    """Where ``text`` first names the file ``name`` as a whole (stats.py is not test_stats.py)."""
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", text)


_OUTPUT_FOLDER = re.compile(r"(/mnt/user-data/outputs/[\w./-]*[\w-])(?=[\s,;:)]|\.?$|\.\s)")


def output_folders(request: str) -> list[str]:
    """Folders under outputs the request names (a path without a file extension), to be made
    and filled (from the benchmark: asked for a site in /mnt/user-data/outputs/site, the model
    wrote a plan in the workspace and answered "Done.")."""
    found = [m.group(1) for m in _OUTPUT_FOLDER.finditer(request)]
    return [f for f in dict.fromkeys(found) if "." not in f.rsplit("/", 1)[-1]]


def change_targets(request: str, names: Sequence[str]) -> list[str]:
    """Which of the existing files the request ``names`` it asks to change: those named after
    its first change verb ("python3 test_stats.py fails. Fix the bug in stats.py (not the
    test)": stats.py), or all of them when none is."""
    verb = CHANGE_VERBS.search(request)
    if verb is None:
        return list(names)
    first = {n: _mention(request[verb.end():], n) for n in names}  # the first mention after the verb
    after = [n for n, m in first.items() if m is not None]
    # a file the change reads from is not the one to change ("Fix server.py so it prints the port
    # from config.json": from the benchmark, where the model was sent to change config.json)
    changed = [n for n in after if not _SOURCE_BEFORE.search(request[: verb.end() + first[n].start()])]  # type: ignore[union-attr]
    return changed or after or list(names)


_SOURCE_BEFORE = re.compile(r"\b(?:from|using|reads?|than|like)\s+(?:the\s+)?(?:file\s+)?(?:/mnt/user-data/[\w./-]*/)?$", re.IGNORECASE)


_SET = re.compile(r"\b(?:set|change|update)\s+(.+?)(?:[;.](?:\s|$)|$)", re.IGNORECASE)
_PAIR = re.compile(r"(?:^|,|\band\b)\s*(?:the\s+)?[\"']?([\w.-]+)[\"']?\s+(?:to|=)\s+[\"']?([\w.:/-]*\w)", re.IGNORECASE)
VALUE_NOT_SET = "The request sets"


def unset_value(request: str, name: str, text: str) -> str | None:
    """A note when the request sets a key to a value ("set port to 9090 and debug to false") and
    the file ``name`` still has a line with the key but not the value (from the benchmark: a sed
    for "port = 8080" on a file that said "port = 8000" changed nothing, the debug edit worked,
    and the model answered that both were set)."""
    clause = _SET.search(request)
    if clause is None or not text:
        return None
    for key, value in _PAIR.findall(clause.group(1)):
        lines = [line.strip() for line in text.splitlines() if re.match(rf"\s*[\"']?{re.escape(key)}[\"']?\s*[=:]", line)]
        if lines and not any(re.search(rf"(?<![\w.]){re.escape(value)}(?![\w.])", line) for line in lines):
            return (
                f"{VALUE_NOT_SET} {key} to {value}, but {name} still says: {lines[0]}. Change that line "
                "(str_replace with the line exactly as it is now), then check the file."
            )
    return None


PRINTED_NOT_SAVED = "Your last command printed"
_COMPUTING = re.compile(r"\s*(?:python3?|node|awk|jq|sort|uniq|cut|tr|seq)\b")


def printed_not_saved(missing: Sequence[str], run: Sequence[Any]) -> str | None:
    """A note when a file the request asks for is missing or empty and the run's last command
    printed a result without saving it anywhere (from the benchmark: a python3 heredoc printed
    the rows of the uploaded CSV, then the model wrote [] to the JSON file, twice). Only for a
    command that computes (python3, awk, sort...). Says how to save exactly what it prints: run
    it again with its output sent to the file."""
    if len(missing) != 1:
        return None
    last = None
    results = {m.tool_call_id: m for m in run if isinstance(m, ToolMessage)}
    for message in run:
        for call in message.tool_calls if isinstance(message, AIMessage) else []:
            if call["name"] == "bash":
                last = call
    if last is None:
        return None
    command = str((last.get("args") or {}).get("command") or "")
    result = results.get(last.get("id"))
    name = missing[0]
    if result is None or failed(result) or result.text.strip() in ("", "(no output)") or ">" in command:
        return None
    if not _COMPUTING.match(command):
        return None  # cat or grep shows material to work on (a file to summarize), not the result
    how = (f"python3 - > {name} <<'EOF' (the same code, then EOF)" if re.search(r"python3?\s+-\s*<<", command)
           else f"the same command followed by > {name}")
    json_hint = " Print it as JSON (json.dumps) when the file is .json." if name.endswith(".json") and not re.search(r"json\.dumps?\(", command) else ""
    return f"{PRINTED_NOT_SAVED} its result but saved nothing to {name}. Run it again with its output saved: {how}.{json_hint}"


_ROW_RANGE = re.compile(
    r"\bone (?:row|line|entry|object)s? (?:for|per) (?:each )?\w+ from (\d+) to (\d+)\b|\b(?:the )?numbers (\d+) to (\d+), one per line\b",
    re.IGNORECASE,
)
ROWS_SHORT = "The request wants one row per item"


def rows_short(request: str, name: str, text: str) -> str | None:
    """A note when the request asks for one row per item of a range ("one row for each n from 1
    to 50") and the file ``name`` has another number of lines (and a header when asked for), from the
    benchmark: the model typed 49 of 50 rows into write_file. Suggests generating the rows."""
    match = _ROW_RANGE.search(request)
    if match is None or not text.strip() or name.endswith(".json"):
        return None
    low, high = (int(g) for g in (match.group(1) or match.group(3), match.group(2) or match.group(4)))
    wanted = high - low + 1
    lines = [line for line in text.splitlines() if line.strip()]
    allowed = (wanted + 1,) if re.search(r"\bheader\b", request, re.IGNORECASE) else (wanted, wanted + 1)
    if wanted <= 0 or len(lines) in allowed:  # a header row when the request asks for one; else either
        return None
    return (
        f"{ROWS_SHORT} from {low} to {high} ({wanted} rows), but {name} has {len(lines)} lines. "
        "Generate the rows with a loop instead of typing them: python3 - > file <<'EOF' with a for loop that prints "
        "each row, then EOF."
    )


_GREP_PREFIX = re.compile(r"^(?:/mnt/user-data/[^:\s]+:\d+: ?|\s*\d+\t)")  # grep's path:line:, read_file's gutter
LINES_CUT = "The lines you wrote are cut short"


def cut_lines(run: Sequence[Any]) -> str | None:
    """A note when the last write_file of the run holds lines that are each only part of a line a
    tool showed (from the benchmark: asked to save the ERROR lines of a log, the model wrote
    "ERROR disk full id=3" for "2025-05-01 10:03:00 ERROR disk full id=3", all six of them). With
    a grep call in the run, says how to save whole lines with it."""
    shown: list[str] = []
    writes: list[dict[str, Any]] = []
    greps: list[dict[str, Any]] = []
    for message in run:
        if isinstance(message, ToolMessage):
            shown += [_GREP_PREFIX.sub("", line).strip() for line in message.text.splitlines()]
        elif isinstance(message, AIMessage):
            writes += [c for c in message.tool_calls if c["name"] == "write_file"]
            greps += [c for c in message.tool_calls if c["name"] == "grep"]
    if not writes:
        return None
    args = writes[-1].get("args") or {}
    lines = [line.strip() for line in str(args.get("content") or "").splitlines() if line.strip()]
    whole = set(shown)
    cut = [line for line in lines if len(line) >= 12 and line not in whole and any(line in s and len(s) > len(line) for s in shown)]
    if not lines or len(cut) * 2 <= len(lines):
        return None
    full = next(s for s in shown if cut[0] in s and len(s) > len(cut[0]))
    how = ""
    if greps:
        g = greps[-1].get("args") or {}
        how = f" Save whole lines with bash: grep {shlex.quote(str(g.get('pattern') or ''))} {g.get('path') or '.'} > {args.get('path')}"
    return f"{LINES_CUT}: {cut[0]!r} is part of the line {full!r}.{how}"


_RUN_COMMAND = re.compile(r"\b(?:python3?|node|bash|sh)\s+[\w./-]+\.(?:py|js|sh)\b(?:\s+(?!(?:prints?|fails?|crashes|should|so|and|with|to|but|then)\b)[\w./=-]+)*")
RUN_IT = "You changed"
_PLACEHOLDER_WORD = re.compile(r"\b(?:FILE|PATH|FILENAME|INPUT|NAME|DIR|ARG)S?\b")


def untested_change(request: str, targets: Sequence[str], run: Sequence[Any], samples: Sequence[str] = ()) -> list[str]:
    """A note when the run changed a script the request asks to fix but ran no command since
    (from the benchmark: an edit that broke wc.py with a syntax error, then an answer that it
    was fixed). The command is the one the request names, when it names one; a placeholder in
    it (FILE in "python3 wc.py FILE") is given one of ``samples``, files that exist (from the
    benchmark: the model ran "python3 wc.py FILE" and got FileNotFoundError, three times)."""
    scripts = [t for t in targets if t.endswith((".py", ".sh", ".js"))]
    last_edit = last_run = -1
    for i, message in enumerate(run):
        for call in message.tool_calls if isinstance(message, AIMessage) else []:
            path = str((call.get("args") or {}).get("path", ""))
            if call["name"] in ("write_file", "str_replace") and any(path.endswith(t.rsplit("/", 1)[-1]) for t in scripts):
                last_edit = i
            elif call["name"] == "bash":
                last_run = i
    if last_edit < 0 or last_run > last_edit or any(is_harness(m) and RUN_IT in m.text for m in run):
        return []
    command = _RUN_COMMAND.search(request)
    how = f" ({command.group(0)})" if command else ""
    placeholder = _PLACEHOLDER_WORD.search(how)
    if placeholder and samples:
        how = f" ({command.group(0)}, with {placeholder.group(0)} a file that exists, such as {samples[0]})"  # type: ignore[union-attr]
    return [f"{RUN_IT} {' or '.join(scripts)} but have not run it since. Run it now{how} and check that it does what the request asks."]


_ECHO_TO_FILE = re.compile(r"echo\s+(?:-n\s+)?(['\"]?[-\d.\s,]+['\"]?)\s*>\s*(\S+)")


def guessed_numbers(run: Sequence[Any], request: str) -> list[tuple[str, str]]:
    """(path, numbers) for each file the run wrote (write_file, or ``echo 1 > file``) whose content
    is nothing but numbers, some of which neither the request nor an earlier tool result shows
    (from the benchmark: given 7 paths, the model wrote 0 to count.txt, and 1 with echo; told to
    run primes.py and save its output, it wrote the primes itself, 1 among them)."""
    seen = numbers_in(request)
    results = {m.tool_call_id: m for m in run if isinstance(m, ToolMessage)}
    last: dict[str, str | None] = {}  # path -> the guessed number its last write holds, or None
    for message in run:
        if isinstance(message, ToolMessage):
            seen |= shown_numbers(message)
        elif isinstance(message, AIMessage):
            for call in message.tool_calls:
                args = call.get("args") or {}
                result = results.get(call.get("id"))
                echoed = _ECHO_TO_FILE.fullmatch(str(args.get("command") or "").strip()) if call["name"] == "bash" else None
                if (call["name"] != "write_file" and echoed is None) or result is None or failed(result):
                    continue
                content = (echoed.group(1) if echoed else str(args.get("content", ""))).strip().strip("'\"")
                if echoed:
                    args = {"path": echoed.group(2)}
                numbers = numbers_in(content) if _ONLY_NUMBERS.fullmatch(content) else set()
                # a short list only: "write 1 to 200" is a sequence the request describes, not a result
                unseen = sorted(numbers - seen, key=lambda n: (len(n), n)) if len(numbers) <= MAX_CHECKED_NUMBERS else []
                last[str(args.get("path"))] = ", ".join(unseen[:5]) if unseen else None
    return [(path, number) for path, number in last.items() if number is not None]


_STOCK_REPLIES = {"done", "ok", "okay", "finished", "complete", "completed", "saved", "success", "created", "fixed"}


def is_value(reply: str) -> bool:
    """Whether a reply is one value (a number, a name, a path), not a sentence or a stock word."""
    return 0 < len(reply) <= 80 and not any(c.isspace() for c in reply) and reply.lower().strip(".!") not in _STOCK_REPLIES


_JUST = re.compile(
    r"\b(?:write|save|put)\s+(?:just\s+|only\s+)?(?:its|the)\s+(?:(file\s*)?name|path|number)|\bjust\s+(?:the|its)\s+(?:(file\s*)?name|path|number)",
    re.IGNORECASE,
)
NOT_JUST_VALUE = "The request asks for just"


def not_just_value(request: str, name: str, text: str) -> str | None:
    """A note when the request asks for just a name, path or number in the file ``name`` and the
    file holds a sentence (from the benchmark: asked to write the largest file's name, the model
    wrote "The largest file in ... is /mnt/user-data/workspace/data/c.log."). Offers the value the
    sentence holds: the last path's file name (or the path), or its one number."""
    match = _JUST.search(request)
    value = text.strip()
    if match is None or not value or is_value(value) or "\n" in value:
        return None
    what = match.group(0).lower()
    if "number" in what:
        numbers = sorted(numbers_in(value))
        offer = numbers[0] if len(numbers) == 1 else None
        thing = "the number"
    else:
        paths = re.findall(r"[\w./-]*\w\.\w+", value)
        offer = (paths[-1].rsplit("/", 1)[-1] if "name" in what else paths[-1]) if paths else None
        thing = "the name" if "name" in what else "the path"
    tail = f" If it is {offer}, write just {offer} there with write_file." if offer else f" Write just {thing} there."
    return f"{NOT_JUST_VALUE} {thing} in {name}, but it holds a sentence: {value[:120]!r}.{tail}"


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


def next_tools(problems: Sequence[str], state: Any) -> list[str]:
    """The tools the calls after a note must use, in order ("any": some tool).

    A file to fix that is unchanged: read it first when the run has not (read before write
    refuses an edit of an unread file), then write_file when the reply showed the new code
    (the model copies its own code), else str_replace. A missing file: write_file when it is
    the only problem or the reply was a value to copy into it, or a text file the model already tried to write another way (it knows
    the content, not the mechanics; an empty file counts as missing); bash first when the reply showed code that would make it. Else
    any tool."""
    request, run = this_run(state.get("messages") or [])
    calls = [c for m in run if isinstance(m, AIMessage) for c in m.tool_calls]
    targets = change_targets(request.text if request else "", list(state.get("preexisting_stat") or {}))
    read = any(
        (c["name"] == "read_file" or (c["name"] == "bash" and "cat " in str(c["args"])))
        and any(_mention(str(c["args"]), t.rsplit("/", 1)[-1]) for t in targets)
        for c in calls
    )  # the file to change, not another one (the test beside it)
    if any("but it was not changed" in p for p in problems):
        edit = "write_file" if any(p.startswith(CODE_NOT_WRITTEN) for p in problems) else "str_replace"
        return [edit] if read else ["read_file", edit]
    if any(p.startswith(VALUE_NOT_SET) for p in problems):
        return ["str_replace"] if read else ["read_file", "str_replace"]
    if any(p.startswith((CODE_NOT_RUN, RUN_IT, PRINTED_NOT_SAVED, ROWS_SHORT, LINES_CUT)) for p in problems):
        return ["bash"]
    if any(p.startswith((SEARCH_AGAIN, SEARCH_FOR)) for p in problems):
        return ["grep"]
    missing = [m.group(1) or m.group(2) for p in problems if (m := _MISSING.search(p))]
    if missing and (len(problems) == 1 or any(p.startswith(ANSWER_OFFER) for p in problems)):
        return ["write_file"]
    if len(problems) == 1 and problems[0].startswith((FOLDER_EMPTY, NOT_JUST_VALUE)):
        return ["write_file"]
    tried = " ".join([str(c["args"]) for c in calls] + [m.text for m in run if isinstance(m, AIMessage)])
    if missing and all(name.lower().endswith(SOURCE_SUFFIXES) and name in tried for name in missing):
        return ["write_file"]
    return ["any"]


_FIND_QUESTION = re.compile(
    r"\b(?:which|what)\s+(?:\w+\s+)?files?\b|\bin which\b|\bwhere\b|\bmentions?\b|\bcontains?\b|\bdefined\b|\bhow many\b",
    re.IGNORECASE,
)
_FOUND_NOTHING = re.compile(r"\A(?:\(no output\)|no matches for |no paths match )|: Is a directory$|No such file or directory", re.MULTILINE)
SEARCH_AGAIN = "Your search"


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
            rest = [w for w in words[i + 1:] if not w.startswith("-") and w not in ("|", ">")]
            if rest:
                return rest[0], rest[1] if len(rest) > 1 else ""
        if word == "find":
            named = [words[j + 1] for j in range(i, len(words) - 1) if words[j] in ("-name", "-iname")]
            if named:
                return named[0], words[i + 1] if len(words) > i + 1 else ""
    return None


def fruitless_search(request: str, run: Sequence[Any]) -> str | None:
    """A note when the request asks where something is (or how many) and the run's last search
    found nothing: a name search, one file, a folder given to grep without -r. From the
    benchmark: ``find -name parse_date.py`` came back empty and the model answered that the
    function is defined nowhere; ``grep falcon library`` said "Is a directory" and the model wrote
    "No falcon found". The note names the term and the folder for the grep tool, which searches
    inside every file under a folder."""
    if not _FIND_QUESTION.search(request) or any(is_harness(m) and SEARCH_AGAIN in m.text for m in run):
        return None
    results = {m.tool_call_id: m for m in run if isinstance(m, ToolMessage)}
    for message in reversed(run):
        for call in reversed(message.tool_calls if isinstance(message, AIMessage) else []):
            search = _search_of(call)
            if search is None:
                continue
            result = results.get(call.get("id"))
            if result is None or not _FOUND_NOTHING.search(result.text.strip()):
                return None  # the last search found something: the answer may rest on it
            term, path = search
            term = re.sub(r"\.\w+$", "", term.strip("*'\"")).strip("*") or term  # parse_date.py: parse_date
            folders = [f for f in re.findall(r"/mnt/user-data/[\w./-]*[\w-]", request) if "." not in f.rsplit("/", 1)[-1]]
            folder = folders[0] if folders else (path if path and "." not in path.rsplit("/", 1)[-1] else "/mnt/user-data/workspace")
            return (
                f"{SEARCH_AGAIN} ({call['name']} for {search[0]!r}) found nothing, so your answer rests on nothing. "
                f"Search inside every file under the folder: call grep with pattern {term!r} and path {folder!r}."
            )
    return None


_TERM = re.compile(r"(?<![\w/.-])(?:[A-Z]{3,}|[a-z]+(?:_[a-z0-9]+)+)(?![\w/.-])|'([^'\s]{2,40})'|\"([^\"\s]{2,40})\"")
SEARCH_FOR = "The request is about"
_FORMATS = {"CSV", "JSON", "YAML", "HTML", "XML", "PDF", "TXT", "SQL", "API", "URL", "CLI", "PNG", "SVG", "TSV", "INI", "UTF"}


def unsearched_term(request: str, run: Sequence[Any]) -> str | None:
    """A note when a search request names a term (a word in capitals like TODO, a name like
    parse_date, a quoted word) that none of the run's tool calls looked for (from the benchmark:
    asked how many TODO comments the .py files hold, the model listed the .py files and answered
    with their number)."""
    if not _FIND_QUESTION.search(request) or any(is_harness(m) and SEARCH_FOR in m.text for m in run):
        return None
    calls = " ".join(json.dumps(c.get("args"), default=str) for m in run if isinstance(m, AIMessage) for c in m.tool_calls)
    if not calls:
        return None  # no tool at all: another rule says so
    terms = [m.group(1) or m.group(2) or m.group(0) for m in _TERM.finditer(request)]
    terms = [t for t in terms if t not in _FORMATS]
    missing = [t for t in dict.fromkeys(terms) if t.lower() not in calls.lower()]
    if not missing:
        return None
    folders = [f for f in re.findall(r"/mnt/user-data/[\w./-]*[\w-]", request)]
    where = f" and path {folders[0]!r}" if folders else ""
    return (
        f"{SEARCH_FOR} {missing[0]!r}, but none of your tool calls looked for it, so your answer rests on "
        f"something else. Search for it: call grep with pattern {missing[0]!r}{where}."
    )


_CLAIM = re.compile(
    r"\b(?:has|have) been (?:created|saved|written|generated|made|built|added|renamed|moved|updated)\b"
    r"|\bI(?:'ve| have)? (?:created|saved|written|wrote|generated|made|built|added)\b",
    re.IGNORECASE,
)
_WRITING_COMMAND = re.compile(r">|\b(?:tee|cp|mv|touch|rename|zip|tar|ln|python3?|node|sed\s+-i|perl|dd|install)\b")
CLAIM_UNBACKED = "Your answer says the work was done"


def unbacked_claim(reply: str, run: Sequence[Any]) -> str | None:
    """A note when the answer claims something was created or saved but no call of the run
    could have written a file (from the benchmark: asked to make a skill, the model ran
    ``mkdir -p skills/custom/csv-summary`` and answered "The skill has been created")."""
    if not _CLAIM.search(reply):
        return None
    calls = [c for m in run if isinstance(m, AIMessage) for c in m.tool_calls]
    for call in calls:
        if call["name"] != "bash":
            if call["name"] not in ("read_file", "ls", "glob", "grep", "view_image", "web_search", "web_fetch"):
                return None  # write_file, str_replace, a sub-agent, a tool of a skill or server: may have written
            continue
        if _WRITING_COMMAND.search(str((call.get("args") or {}).get("command") or "")):
            return None
    made = " (mkdir makes an empty folder only)" if any("mkdir" in str(c.get("args")) for c in calls) else ""
    return (
        f"{CLAIM_UNBACKED}, but none of your tool calls wrote a file{made}. Do it now with your tools: "
        "write each file with write_file, then answer."
    )


def failure_detail(result: ToolMessage) -> str:
    """The line that says why: a command's last output line and its exit code, else the first line."""
    lines = [line for line in result.text.strip().splitlines() if line.strip()]
    if not lines:
        return "no output"
    if EXIT_CODE.search(lines[-1]) and len(lines) > 1:
        return f"{lines[-2].strip()[:200]} {lines[-1].strip()}"
    return lines[0][:200]


_PYTHON_C = re.compile(r"\bpython3?\s+-c\b")


def one_liner_tip(run: Sequence[Any], result: ToolMessage) -> str:
    """A hint for the commonest failures of a small model: Python with for/with squeezed into
    ``python3 -c "...; ..."`` (a SyntaxError however it is retried); a placeholder of the request
    run as a file name ("python3 wc.py FILE"); ``rename``, which this sandbox does not have."""
    call = next((c for m in run if isinstance(m, AIMessage) for c in m.tool_calls if c.get("id") == result.tool_call_id), None)
    command = str((call or {}).get("args", {}).get("command", ""))
    if "SyntaxError" in result.text and _PYTHON_C.search(command):
        return (" Python with for, with or if, or newlines inside strings, does not fit in python3 -c: run it as "
                "python3 - <<'EOF' with one statement per line, then EOF.")
    placeholder = _PLACEHOLDER_WORD.search(command)
    if placeholder and "No such file" in result.text and placeholder.group(0) in result.text:
        return (f" {placeholder.group(0)} is a placeholder from the request, not a file: put the name of a file "
                "that exists in its place (ls shows them).")
    if re.search(r"\brename\b.*(?:No such file or directory|not found)", result.text):
        return ' rename is not installed here: use mv in a loop, e.g. for f in *.txt; do mv "$f" "${f%.txt}.md"; done'
    return ""


_ERROR_LINE = re.compile(
    r"^[\w./-]+: .*(?:No such file or directory|command not found|Is a directory|Permission denied|not found)$"
)


def failed(result: ToolMessage) -> bool:
    """Whether a tool result is a failure: an error status, a command's non-zero exit code, or
    output that is nothing but error lines (``grep x folder | head`` exits 0 with "grep: folder: Is
    a directory"; ``find -exec rename`` with no rename exits 0 with "find: 'rename': No such file
    or directory" thrice: both from the benchmark, where the model moved on as if it had worked)."""
    if result.status == "error" or EXIT_CODE.search(result.text[-200:]):
        return True
    lines = [line.strip() for line in result.text.strip().splitlines() if line.strip()]
    return result.name == "bash" and bool(lines) and all(_ERROR_LINE.match(line) for line in lines)


def text_tool_call(reply: str, tool_names: Sequence[str]) -> bool:
    """Whether the reply holds a tool call written as text."""
    if "<tool_call>" in reply:
        return True
    return any(
        re.search(rf'"name"\s*:\s*"{re.escape(n)}"', reply) or re.search(rf"<{re.escape(n)}\s+\w+=", reply)
        for n in tool_names
    )


_CALL_NAME = re.compile(r'\{\s*"name"\s*:\s*"([\w.-]+)"\s*,\s*"(?:arguments|parameters|args)"')


def unknown_tools(reply: str, tool_names: Sequence[str]) -> list[str]:
    """Names of tools that do not exist which the reply tries to call as JSON (from the
    benchmark: ``{"name": "copy", "arguments": {...}}`` to copy a file)."""
    return sorted({n for n in _CALL_NAME.findall(reply) if n not in tool_names and n.rsplit(".", 1)[-1] not in tool_names})
