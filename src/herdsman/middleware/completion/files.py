"""The completion check's rules on what the run delivered in files: values the request sets
that the file lacks, rows short of a range, lines cut short, a sentence where just a value was
asked for, a result printed instead of saved, and work claimed that no call could have done.

Pure functions of the request, the run's messages and a file's text (read by the caller), so
each rule can be read and tested on its own; each returns a
:class:`~herdsman.middleware.completion.findings.Finding` whose ``next_tools``
:func:`herdsman.middleware.completion.plan.next_tools` follows. Most read English words of the
request ("set", "sorted", "one row for each"...): their rules are declared English in
:data:`~herdsman.middleware.completion.findings.RULES`.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage

from herdsman.middleware.completion.command_sense import binary_file
from herdsman.middleware.completion.findings import COMMAND, EDIT, WRITE, WRITE_IF_ALONE, Finding
from herdsman.middleware.completion.intent_words import says
from herdsman.middleware.completion.plan import read_first
from herdsman.middleware.completion.rules import failed, is_value, mention, numbers_in, tool_results
from herdsman.sandbox.tools import sent_to_background

_SET = re.compile(r"\b(?:set|change|update)\s+(.+?)(?:[;.](?:\s|$)|$)", re.IGNORECASE)
_PAIR = re.compile(
    r"(?:^|,|\band\b)\s*(?:the\s+)?[\"']?([\w.-]+)[\"']?\s+(?:to|=)\s+[\"']?([\w.:/-]*\w)", re.IGNORECASE
)


def unset_value(request: str, name: str, text: str, read: bool = True) -> Finding | None:
    """``value.not_set`` when the request sets a key to a value ("set port to 9090 and debug to
    false") and the file ``name`` still has a line with the key but not the value (an edit that
    matched nothing, answered as done); ``read``: whether the run read the file (else the plan
    reads it before the edit)."""
    clause = _SET.search(request)
    if clause is None or not text:
        return None
    for key, value in _PAIR.findall(clause.group(1)):
        lines = [
            line.strip() for line in text.splitlines() if re.match(rf"\s*[\"']?{re.escape(key)}[\"']?\s*[=:]", line)
        ]
        if lines and not any(re.search(rf"(?<![\w.]){re.escape(value)}(?![\w.])", line) for line in lines):
            return Finding(
                "value.not_set",
                {"key": key, "value": value, "path": name, "line": lines[0]},
                ("str_replace",) if read else ("read_file", "str_replace"),
                EDIT,
            )
    return None


_COMPUTING = re.compile(r"\s*(?:python3?|node|awk|jq|sort|uniq|cut|tr|seq)\b")


_SAVE_LINES = re.compile(r"\blines?\b", re.IGNORECASE)


def _grep_not_saved(call: dict[str, Any], result: ToolMessage | None, request: str, name: str) -> Finding | None:
    """``output.grep_not_saved`` for a request to save lines (``request`` says "lines", English)
    that the grep tool found: the shell grep that saves them whole (the grep tool shows lines, and
    a model then writes an empty file, or the check's own note)."""
    if (
        result is None
        or failed(result)
        or result.text.startswith("no matches")
        or not _SAVE_LINES.search(request)
        or binary_file(name)
    ):
        return None
    args = call.get("args") or {}
    path = str(args.get("path") or ".")
    flags = "-rh " if "." not in path.rsplit("/", 1)[-1] else ""
    command = f"grep {flags}{shlex.quote(str(args.get('pattern') or ''))} {shlex.quote(path)} > {shlex.quote(name)}"
    return Finding("output.grep_not_saved", {"path": name, "command": command}, ("bash",), COMMAND)


def printed_not_saved(missing: Sequence[str], run: Sequence[Any], request: str = "") -> Finding | None:
    """``output.printed_not_saved`` when a file the request asks for is missing or empty and the
    run's last command printed a result without saving it anywhere (a script prints the rows,
    then the model writes [] to the file). Only for a command that computes (python3, awk,
    sort...), or the grep tool's lines when the request is to save lines. Says how to save
    exactly what it prints: run it again with its output sent to the file."""
    if len(missing) != 1:
        return None
    last, result = _last_call(run, ("bash", "grep"))
    if last is None:
        return None
    name = missing[0]
    if last["name"] == "grep":
        return _grep_not_saved(last, result, request, name)
    command = str((last.get("args") or {}).get("command") or "")
    if (last.get("args") or {}).get("background") or sent_to_background(command):
        return None  # a job started in the background printed a note of the harness, not its result
    if result is None or failed(result) or result.text.strip() in ("", "(no output)") or ">" in command:
        return None
    if not _COMPUTING.match(command):
        return None  # cat or grep shows material to work on (a file to summarize), not the result
    if binary_file(name):  # printed text is no PNG: the code must save the file itself
        return Finding("output.printed_not_saved", {"path": name, "command": None, "binary": True}, ("bash",), COMMAND)
    filled = filled_template(request, result.text)
    if filled is not None:
        return Finding("output.printed_template", {"path": name, "value": filled}, ("write_file",), COMMAND)
    return Finding(
        "output.printed_not_saved", {"path": name, "command": saving_command(command, name)}, ("bash",), COMMAND
    )


def templates_of(request: str) -> list[str]:
    """The lines the request quotes with placeholders for values ('Total: <total amount>')."""
    return [next(g for g in m.groups() if g is not None).strip() for m in _QUOTED.finditer(request)]


_FLOAT_NOISE = re.compile(r"-?\d+\.\d{12,}")


def filled_template(request: str, printed: str) -> str | None:
    """The request's quoted lines ('Total: <total amount>', 'Rows: <number of rows>') with the
    values a command printed, one printed line per quoted line, in order, when each quoted line
    has one placeholder and the command printed exactly that many lines, each one value (a
    float's binary noise cut: 7990.9299999999985 is 7990.93); else None. On dev the model printed
    the total and the row count, then could not get them into the file in its lines."""
    templates = templates_of(request)
    values = [line.strip() for line in printed.strip().splitlines() if line.strip()]
    if not templates or len(values) != len(templates) or any(len(_HOLE.findall(t)) != 1 for t in templates):
        return None
    if not all(is_value(v) and len(v) <= MAX_VALUE_CHARS for v in values):
        return None
    values = [_FLOAT_NOISE.sub(lambda m: format(float(m.group(0)), ".12g"), v) for v in values]
    return "\n".join(_fill(t, v) for t, v in zip(templates, values, strict=True))


def _fill(template: str, value: str) -> str:
    """``template`` with its one placeholder replaced by ``value`` (taken as it is, no escapes)."""
    hole = _HOLE.search(template)
    return template if hole is None else template[: hole.start()] + value + template[hole.end() :]


def saving_command(command: str, name: str) -> str:
    """``command`` with its output sent to ``name``: ``> name`` after ``python3 -`` of a heredoc
    (or at the end of a one-line command); for a .json file, a last ``print(x)`` of a heredoc
    prints ``json.dumps(x)``. A small model told to add the redirect re-runs its command
    unchanged; given the whole command, it has only to copy it."""
    heredoc = re.match(r"(\s*python3?\s+-)(\s*<<)", command)
    if heredoc is None:
        return f"{command.rstrip()} > {name}"
    saved = f"{heredoc.group(1)} > {name}{heredoc.group(2)}{command[heredoc.end() :]}"
    if name.endswith(".json") and not re.search(r"json\.dumps?\(", command):
        saved = re.sub(
            r"^print\((\w+)\)\s*$", r"import json\nprint(json.dumps(\1))", saved, count=1, flags=re.MULTILINE
        )
    return saved


_RUN_AND_SAVE = re.compile(
    r"\b(?:run|execute)\b.{0,80}?\b(?:save|write|store|put)\b.{0,20}?\boutput\b", re.IGNORECASE | re.DOTALL
)
_RUNNERS = {".py": "python3", ".sh": "bash", ".js": "node"}


def run_and_save(request: str, missing: Sequence[str], scripts: Sequence[str]) -> Finding | None:
    """``script.output_typed`` when the request says to run a script and save its output to a
    file that is still missing or empty, and the script exists: the command that does both (a
    model writes the script, then types what it thinks it prints). English."""
    if len(missing) != 1 or not scripts or not _RUN_AND_SAVE.search(request):
        return None
    script = scripts[0]
    runner = _RUNNERS.get(script[script.rfind(".") :], "")
    if binary_file(missing[0]):  # its output is a file it saves, not what it prints
        return Finding(
            "script.output_typed",
            {"path": missing[0], "command": f"{runner} {shlex.quote(script)}", "binary": True},
            ("bash",),
            COMMAND,
        )
    return Finding(
        "script.output_typed",
        {"path": missing[0], "command": f"{runner} {shlex.quote(script)} > {shlex.quote(missing[0])}"},
        ("bash",),
        COMMAND,
    )


_ROW_RANGE = re.compile(
    (
        r"\bone (?:row|line|entry|object)s? (?:for|per) (?:each )?\w+ from (\d+) to (\d+)\b|\b(?:the "
        r")?numbers (\d+) to (\d+), one per line\b"
    ),
    re.IGNORECASE,
)


def rows_short(request: str, name: str, text: str, run: Sequence[Any] = ()) -> Finding | None:
    """``rows.count_wrong`` when the request asks for one row per item of a range ("one row for
    each n from 1 to 50", English) and the file ``name`` has another number of lines (and a
    header when asked for): a model types the rows and miscounts. Suggests generating the rows;
    when the run's last command printed just that many rows without saving them, gives that
    command whole, saving them, the header printed first."""
    match = _ROW_RANGE.search(request)
    if match is None or not text.strip() or name.endswith(".json"):
        return None
    low, high = (int(g) for g in (match.group(1) or match.group(3), match.group(2) or match.group(4)))
    wanted = high - low + 1
    lines = [line for line in text.splitlines() if line.strip()]
    allowed = (wanted + 1,) if re.search(r"\bheader\b", request, re.IGNORECASE) else (wanted, wanted + 1)
    if wanted <= 0 or len(lines) in allowed:  # a header row when the request asks for one; else either
        return None
    evidence: dict[str, Any] = {
        "path": name,
        "low": low,
        "high": high,
        "wanted": wanted,
        "lines": len(lines),
        "command": None,
    }
    printed = _last_printed(run)
    if printed is not None and len(printed[1].strip().splitlines()) == wanted and _COMPUTING.match(printed[0]):
        command = saving_command(printed[0], name)
        header = _HEADER.search(request)
        if header and re.match(r"\s*python3?\s+-\s*>", command):
            first, rest = command.split("\n", 1)
            command = f"{first}\nprint({header.group(1)!r})\n{rest}"
        evidence["command"] = command
    return Finding("rows.count_wrong", evidence, ("bash",), COMMAND)


_HEADER = re.compile(r"\bheader(?: row| line)? ([^\s]+?)[.,;]?(?:\s|$)", re.IGNORECASE)


def _last_call(run: Sequence[Any], names: Sequence[str]) -> tuple[dict[str, Any] | None, ToolMessage | None]:
    """The run's last call of one of the tools ``names`` and its result (either may be None)."""
    calls = [c for m in run if isinstance(m, AIMessage) for c in m.tool_calls if c["name"] in names]
    if not calls:
        return None, None
    call_id = calls[-1].get("id")
    result = tool_results(run).get(call_id) if call_id is not None else None
    return dict(calls[-1]), result


def _last_printed(run: Sequence[Any]) -> tuple[str, str] | None:
    """``(command, output)`` of the run's last bash call when it succeeded without a redirect."""
    call, result = _last_call(run, ("bash",))
    command = str(((call or {}).get("args") or {}).get("command") or "")
    if result is None or failed(result) or ">" in command:
        return None
    return command, result.text


_GREP_PREFIX = re.compile(r"^(?:/mnt/user-data/[^:\s]+:\d+: ?|\s*\d+\t)")  # grep's path:line:, read_file's gutter


def cut_lines(run: Sequence[Any]) -> Finding | None:
    """``file.lines_cut`` when the last write_file of the run holds lines that are each only part
    of a line a tool showed (a model copying log lines drops their timestamps). With a grep call
    in the run, says how to save whole lines with it."""
    shown: list[str] = []
    writes: list[dict[str, Any]] = []
    greps: list[dict[str, Any]] = []
    for message in run:
        if isinstance(message, ToolMessage):
            shown += [_GREP_PREFIX.sub("", line).strip() for line in message.text.splitlines()]
        elif isinstance(message, AIMessage):
            writes += [dict(c) for c in message.tool_calls if c["name"] == "write_file"]
            greps += [dict(c) for c in message.tool_calls if c["name"] == "grep"]
    if not writes:
        return None
    args = writes[-1].get("args") or {}
    lines = [line.strip() for line in str(args.get("content") or "").splitlines() if line.strip()]
    whole = set(shown)
    # a single token (a path, a name) is a value taken from a line, not a line cut short
    cut = [
        line
        for line in lines
        if len(line) >= 12
        and " " in line
        and line not in whole
        and any(line in s and len(s) > len(line) for s in shown)
    ]
    if not lines or len(cut) * 2 <= len(lines):
        return None
    full = next(s for s in shown if cut[0] in s and len(s) > len(cut[0]))
    command = None
    if greps:
        g = greps[-1].get("args") or {}
        command = f"grep {shlex.quote(str(g.get('pattern') or ''))} {g.get('path') or '.'} > {args.get('path')}"
    return Finding(
        "file.lines_cut",
        {"path": str(args.get("path")), "cut": cut[0], "line": full, "command": command},
        ("bash",),
        COMMAND,
    )


_JUST = re.compile(
    r"\b(?:write|save|put)\s+(?:just\s+|only\s+)?(?:its|the)\s+(?:(file\s*)?name|path|number)|\bjust\s+(?:the|its)\s+(?:(file\s*)?name|path|number)",
    re.IGNORECASE,
)
_RELATIVE = re.compile(r"\brelative to ([\w.-]+)", re.IGNORECASE)


_QUOTED = re.compile(
    r"'([^'\n]*<[^<>\n]+>[^'\n]*)'|\"([^\"\n]*<[^<>\n]+>[^\"\n]*)\"|`([^`\n]*<[^<>\n]+>[^`\n]*)`"
    r"|\u201c([^\u201d\n]*<[^<>\n]+>[^\u201d\n]*)\u201d|\u300c([^\u300d\n]*<[^<>\n]+>[^\u300d\n]*)\u300d"
)
_HOLE = re.compile(r"<[^<>]+>")
MAX_VALUE_CHARS = 80


def template_missing(
    request: str, name: str, text: str, unseen: Callable[[str], bool] = lambda _: False
) -> Finding | None:
    """``file.template_missing`` when the request quotes the lines a file must hold, with
    placeholders for the values ('Total: <total amount>', “合计：<金额>”), and the file ``name``
    lacks the fixed words of one of them (a model asked for ``Total: 7990.93`` wrote ``7990.93``).
    Reads quotes and angle brackets only, so it holds for a request in any language. Its way
    rewrites the file, read first when read before write would refuse it (``unseen``, see
    :func:`read_first`)."""
    templates = templates_of(request)
    missing = []
    for template in templates:
        for part in _HOLE.split(template):
            words = part.strip(" \t,;")
            if len(words) >= 2 and any(c.isalpha() for c in words) and words not in text:
                missing.append(words)
    if not missing or not text.strip():
        return None
    return Finding(
        "file.template_missing",
        {"path": name, "missing": list(dict.fromkeys(missing))[:4], "templates": templates[:4]},
        read_first(unseen, [name], "write_file"),
        WRITE,
    )


_JSON_SHAPE = re.compile(r"\{\s*\"[^\"\n]+\"\s*:[^{}\n]*\}")
_JSON_KEY = re.compile(r"\"([^\"\n]+)\"\s*:")


def keys_missing(request: str, name: str, text: str, unseen: Callable[[str], bool] = lambda _: False) -> Finding | None:
    """``file.keys_missing`` when the request shows the JSON object a .json file must hold
    (``{"a": <sum>, "b": <sum>}``, the one after the file's name, else the last before it) and the
    file ``name`` parses to an object (or a list of objects) without some of its keys: on dev two
    sums asked for as a and b were saved as ``{"sum": 899}``. Keys and braces only: any language."""
    if not name.endswith(".json"):
        return None
    where = mention(request, name.rsplit("/", 1)[-1])
    shapes = list(_JSON_SHAPE.finditer(request))
    after = [m for m in shapes if where is None or m.start() >= where.end()]
    shape = after[0] if after else (shapes[-1] if shapes else None)
    if shape is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None  # not JSON: another rule's business (the script that wrote it)
    held = data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else data
    if not isinstance(held, dict):
        return None
    keys = list(dict.fromkeys(_JSON_KEY.findall(shape.group(0))))
    missing = [k for k in keys if k not in held]
    if not missing:
        return None
    evidence = {"path": name, "shape": shape.group(0), "missing": missing, "has": [str(k) for k in held][:6]}
    return Finding("file.keys_missing", evidence, read_first(unseen, [name], "write_file"), WRITE)


def not_just_value(request: str, name: str, text: str) -> Finding | None:
    """``file.not_just_value`` when the request asks for just a name, path or number in the file
    ``name`` (English) and the file holds a sentence ("The largest file in ... is .../c.log.").
    Offers the value the sentence holds: the last path's file name (or the path), or its one
    number. Several lines (a search's output copied in whole) get the finding without an offer."""
    match = _JUST.search(request)
    value = text.strip()
    if match is None or not value:
        return None
    relative = _RELATIVE.search(request)
    if relative and is_value(value) and value.startswith("/") and f"/{relative.group(1)}/" in value:
        # "its path relative to pkg (like a/b.py)": the model wrote /mnt/user-data/workspace/pkg/utils/dates.py
        offer: str | None = value.split(f"/{relative.group(1)}/", 1)[1]
        return Finding(
            "file.not_just_value",
            {
                "path": name,
                "what": "path",
                "relative": relative.group(1),
                "offer": offer,
                "lines": 1,
                "sentence": value[:120],
            },
            ("write_file",),
            WRITE_IF_ALONE,
        )
    named = "name" in match.group(0).lower()
    if is_value(value) and named and "/" in value.rstrip("/"):
        # "write just its file name": the model wrote /book07.txt or library/book07.txt
        base = value.rstrip("/").rsplit("/", 1)[-1]
        evidence = {"path": name, "what": "name", "relative": None, "offer": base, "lines": 1, "sentence": value[:120]}
        return Finding("file.not_just_value", {**evidence, "holds_path": True}, ("write_file",), WRITE_IF_ALONE)
    if is_value(value):
        return None
    lines = len(value.splitlines())
    what = match.group(0).lower()
    if "number" in what:
        numbers = sorted(numbers_in(value))
        offer = numbers[0] if len(numbers) == 1 else None
        thing = "number"
    else:
        paths = re.findall(r"[\w./-]*\w\.\w+", value)
        offer = (paths[-1].rsplit("/", 1)[-1] if "name" in what else paths[-1]) if paths else None
        thing = "name" if "name" in what else "path"
    if lines > 1:
        offer = None  # several lines (a search's output): which one is meant is the model's to say
    return Finding(
        "file.not_just_value",
        {"path": name, "what": thing, "relative": None, "offer": offer, "lines": lines, "sentence": value[:120]},
        ("write_file",),
        WRITE_IF_ALONE,
    )


def not_sorted(request: str, name: str, text: str, language: str = "en") -> Finding | None:
    """``file.not_sorted`` when the request asks for a sorted list and the file ``name``
    holds a list (JSON, or one item per line) in neither ascending nor descending order (a model
    types the items in the order it read them)."""
    if says("sorted", request, language) is None or not text.strip():
        return None
    try:
        items = json.loads(text)
    except ValueError:
        items = [line.strip() for line in text.splitlines() if line.strip()]
    if not isinstance(items, list) or len(items) < 2 or not all(isinstance(i, (str, int, float)) for i in items):
        return None
    keys = [i.lower() if isinstance(i, str) else i for i in items]
    try:
        if keys == sorted(keys) or keys == sorted(keys, reverse=True):
            return None
    except TypeError:  # mixed kinds: not a list to judge
        return None
    return Finding("file.not_sorted", {"path": name, "items": [str(i) for i in items[:4]]}, ("bash",), COMMAND)


_RENAME_EXT = re.compile(r"\brename\b.*?\.(\w{1,8})\b.*?\bto\s+(?:\w+\s+)?\.(\w{1,8})\b", re.IGNORECASE)


def double_extension(request: str, paths: Sequence[str]) -> Finding | None:
    """``rename.double_extension`` when the request renames files from one extension to another
    (English) and files now end in both (``a.txt.md``): ``mv {} {}.md`` added the new one without
    taking the old one off. Gives the loop that fixes the names."""
    match = _RENAME_EXT.search(request)
    if match is None:
        return None
    old, new = match.group(1), match.group(2)
    doubled = [p for p in paths if p.endswith(f".{old}.{new}")]
    if not doubled:
        return None
    folder = doubled[0].rsplit("/", 1)[0]
    command = f'cd {folder} && for f in *.{old}.{new}; do mv "$f" "${{f%.{old}.{new}}}.{new}"; done'
    return Finding(
        "rename.double_extension",
        {"example": doubled[0].rsplit("/", 1)[-1], "old": old, "new": new, "command": command},
        ("bash",),
        COMMAND,
    )


_CLAIM = re.compile(
    r"\b(?:has|have) been (?:created|saved|written|generated|made|built|added|renamed|moved|updated)\b"
    r"|\bI(?:'ve| have)? (?:created|saved|written|wrote|generated|made|built|added)\b",
    re.IGNORECASE,
)
_WRITING_COMMAND = re.compile(r">|\b(?:tee|cp|mv|touch|rename|zip|tar|ln|python3?|node|sed\s+-i|perl|dd|install)\b")


def unbacked_claim(reply: str, run: Sequence[Any]) -> Finding | None:
    """``claim.unbacked`` when the answer claims (in English) something was created or saved but
    no call of the run could have written a file (a model runs ``mkdir`` and answers that the
    thing "has been created")."""
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
    return Finding("claim.unbacked", {"mkdir": any("mkdir" in str(c.get("args")) for c in calls)})
