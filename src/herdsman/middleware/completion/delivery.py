"""The completion check's rules that read the thread's files: what the run delivered, checked in
the files themselves (:func:`file_problems`).

A file the request asks for that is missing, empty or a folder (``mkdir -p outputs/a.py``); a
folder under outputs it names that holds no file; what a delivered file holds (rows short, not
just the value, not sorted, a quoted template's words or a JSON file's keys missing); a file
asked to change that was not, or was written back as it was; code the run wrote that does not
parse, or a script it made and never ran; a value the answer states or a command printed, to copy
into the one file left empty; an active skill's declared outputs; a doubled extension; what the
run's commands left undone in the files (a glob one folder short, a server not used, an edit not
made everywhere); a path the reply names that does not exist.

This module reads the files, through a :class:`~herdsman.middleware.completion.lookup.FileLookup`,
and decides which rule looks at which file; the rules on a file's text are pure functions in
:mod:`~herdsman.middleware.completion.files`, those on the reply and the run alone in
:mod:`~herdsman.middleware.completion.rules`.
:class:`~herdsman.middleware.completion.check.CompletionCheckMiddleware` calls :func:`file_problems`
when the thread has a sandbox.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage

from herdsman.middleware.completion.edits import edit_not_everywhere, edited_in_named_folder
from herdsman.middleware.completion.files import (
    double_extension,
    keys_missing,
    not_just_value,
    not_sorted,
    printed_not_saved,
    rows_short,
    run_and_save,
    template_missing,
    unset_value,
)
from herdsman.middleware.completion.findings import COMMAND, EDIT, WRITE, WRITE_IF_ALONE, Finding, noted
from herdsman.middleware.completion.globs import shallow_glob
from herdsman.middleware.completion.intent_words import says
from herdsman.middleware.completion.lookup import FileLookup
from herdsman.middleware.completion.plan import read_first
from herdsman.middleware.completion.rules import (
    MAX_SHORT_ANSWER_WORDS,
    SOURCE_SUFFIXES,
    change_targets,
    command_not_run,
    command_outcome,
    ignores_arguments,
    is_shown,
    is_value,
    json_in,
    numbers_in,
    output_folders,
    printed_line,
    request_command,
    shown_numbers,
    untested_change,
)
from herdsman.middleware.completion.servers import server_unused
from herdsman.middleware.completion.shown_files import wrote_files
from herdsman.middleware.completion.skill_checks import skill_check_not_run, skill_not_served, skill_output_misnamed
from herdsman.sandbox.base import OUTPUTS, USER_DATA_ROOT
from herdsman.sandbox.paths import normalize_virtual
from herdsman.sandbox.tools import parse_error
from herdsman.skills.activation import active_skill, harness_chosen
from herdsman.skills.model import Skill
from herdsman.turns.turn import named_files, this_run

_VIRTUAL = re.compile(r"/mnt/user-data/[\w./-]*[\w]")
_NAMED = re.compile(r"\bnamed\s+[`'\"]?([a-z0-9][a-z0-9-]*)", re.IGNORECASE)
_SAMPLE_SUFFIXES = (".txt", ".csv", ".json", ".log", ".md")
_SCRIPT_SUFFIXES = (".py", ".sh", ".js")

On = Callable[[str], bool]
"""Whether a rule applies to this request (its language, ``lead.intent_rules``)."""


def file_problems(
    state: Any,
    request: str,
    reply: str,
    lookup: FileLookup,
    run: Sequence[Any],
    language: str,
    on: On,
    skills: Mapping[str, Skill],
) -> list[Finding]:
    """The rules on files, in order, for a ``request`` in ``language`` answered by ``reply`` at the
    end of ``run`` (the run's messages); ``on``: whether a rule applies (its language,
    ``lead.intent_rules``); ``skills``: the usable skills (an active one's declared outputs are
    checked). The thread's ``state`` gives what the files were when the run began."""
    unseen = lookup.unseen(state.get("files_read"))
    preexisting = set(state.get("preexisting") or [])
    found = _changes(request, state.get("preexisting_stat") or {}, lookup, run, language, on, unseen)
    found += _scripts_made(request, preexisting, lookup, run, found)
    found += _given_command_not_run(request, preexisting, lookup, run, on)
    deliverables, empty = _deliverables(request, preexisting, lookup, run, language, on, unseen)
    found += deliverables
    found += _value_to_save(request, reply, empty, lookup, run, on)
    found += _skill_outputs(state, lookup, skills)
    doubled = double_extension(request, list(lookup.entries())) if on("rename.double_extension") else None
    if doubled:
        found.append(doubled)
    found += _command_findings(request, run, lookup, on)
    found += _reply_paths_missing(reply, lookup)
    return found


def _wrote(run: Sequence[Any], name: str) -> bool:
    """Whether a write_file or str_replace call of the run targeted the file ``name``."""
    base = "/" + name.rsplit("/", 1)[-1]
    return any(
        c["name"] in ("write_file", "str_replace") and ("/" + str((c.get("args") or {}).get("path", ""))).endswith(base)
        for m in run
        if isinstance(m, AIMessage)
        for c in m.tool_calls
    )


def _samples(lookup: FileLookup) -> list[str]:
    """Names of data files in the workspace, for a command whose FILE placeholder needs one."""
    return [p.rsplit("/", 1)[-1] for p in lookup.entries() if p.endswith(_SAMPLE_SUFFIXES) and "/workspace/" in p]


def _changes(
    request: str,
    before: Mapping[str, Any],
    lookup: FileLookup,
    run: Sequence[Any],
    language: str,
    on: On,
    unseen: Callable[[str], bool],
) -> list[Finding]:
    """The rules on the files the request named that existed when the run began (``before``:
    their fingerprints then): asked to change and not changed; written back as they were (any
    language); changed and not run since; a value the request sets still unset."""
    if not before:
        return []
    asked = on("file.change_not_made") and says("change", request, language) is not None
    targets = change_targets(request, list(before), language) if asked else list(before)
    unchanged = [name for name in targets if lookup.fingerprint_of(name) == before[name]]
    if asked and len(unchanged) == len(targets) and not edited_in_named_folder(request, run):
        return [Finding("file.change_not_made", {"paths": targets}, read_first(unseen, targets, "str_replace"), EDIT)]
    found: list[Finding] = []
    rewritten = [name for name in unchanged if _wrote(run, name)]
    if rewritten:  # written back as it was: any language
        found.append(
            Finding("file.unchanged", {"paths": rewritten}, read_first(unseen, rewritten, "str_replace"), EDIT)
        )
    found += untested_change(request, [t for t in targets if t not in unchanged], run, _samples(lookup))
    if on("value.not_set"):
        read = read_first(unseen, targets, "str_replace") == ("str_replace",)
        found += [f for name in targets if (f := unset_value(request, name, lookup.text_of(name) or "", read))]
    return found


def _scripts_made(
    request: str, preexisting: set[str], lookup: FileLookup, run: Sequence[Any], found: Sequence[Finding]
) -> list[Finding]:
    """The language-neutral rules on code the run wrote: a Python or JSON file it wrote, or one the
    request asks for that did not exist before, that does not parse; a script the request names
    and shows how to run, that the run made and never ran since; what the command the request
    shows printed when run on a script the run wrote (see ``command_outcome``)."""
    out: list[Finding] = []
    written = dict.fromkeys(
        str((c.get("args") or {}).get("path", ""))
        for m in run
        if isinstance(m, AIMessage)
        for c in m.tool_calls
        if c["name"] in ("write_file", "str_replace")
    )
    # and the code or JSON files the request asks for, however they were made (a bash command, a sub-agent)
    written |= dict.fromkeys(n for n in named_files(request) if n not in preexisting and n.endswith((".py", ".json")))
    for path in written:
        error = (
            parse_error(path, lookup.text_of(path) or "")
            if path.endswith((".py", ".json")) and lookup.size_of(path)
            else None
        )
        if error is not None:
            out.append(Finding("script.does_not_parse", {"path": path, "error": error}, ("write_file",), EDIT))
    if out:
        return out
    named = named_files(request)
    made = [
        n
        for n in named
        if n not in preexisting and n.endswith(_SCRIPT_SUFFIXES) and _wrote(run, n) and lookup.size_of(n)
    ]
    if made and request_command(request) and not any(f.rule == "script.changed_not_run" for f in found):
        out += untested_change(request, made, run, _samples(lookup))
    others = [n for n in named if n not in preexisting and n not in made]
    scripts = [n for n in named if n.endswith(_SCRIPT_SUFFIXES) and _wrote(run, n)]
    outcome = command_outcome(request, scripts, run) if not out and not others else None
    if outcome is not None and outcome.rule == "script.printed_nothing":
        return [outcome]  # what it printed says more than what its code reads
    if not out and (ignored := ignores_arguments(request, scripts, lookup.text_of)) is not None:
        return [ignored]
    return [*out, outcome] if outcome is not None else out


def _given_command_not_run(
    request: str, preexisting: set[str], lookup: FileLookup, run: Sequence[Any], on: On
) -> list[Finding]:
    """``command.not_run``: the command the request gives, on a script that was there when the
    run began (named by its path in the request, run by its name), not run."""
    given = request_command(request) if on("command.not_run") else None
    ran_script = given.split()[1] if given else None
    there = ran_script is not None and any(
        p == ran_script or p.endswith("/" + ran_script.removeprefix("./")) for p in preexisting
    )
    if ran_script is None or not there or (where := lookup.find(ran_script)) is None:
        return []
    not_run = command_not_run(request, run, where)
    return [not_run] if not_run is not None else []


def _deliverables(
    request: str,
    preexisting: set[str],
    lookup: FileLookup,
    run: Sequence[Any],
    language: str,
    on: On,
    unseen: Callable[[str], bool],
) -> tuple[list[Finding], list[str]]:
    """The files the request asks for (a path under outputs, or a file it asks to make) that were
    not there when the run began: a folder instead of the file, missing or empty, or what one holds
    short of the request; and a folder under outputs it names that holds no file. Also the names
    of the files left missing or empty (for :func:`_value_to_save`)."""
    found: list[Finding] = []
    make = on("file.missing") and says("make", request, language) is not None
    empty: list[str] = []
    tried = " ".join(
        [str(c["args"]) for m in run if isinstance(m, AIMessage) for c in m.tool_calls]
        + [m.text for m in run if isinstance(m, AIMessage)]
    )
    for name in named_files(request):
        delivered = normalize_virtual(name).startswith(OUTPUTS + "/") if name.startswith("/") else False
        if name in preexisting or not (delivered or make):
            continue
        size = lookup.size_of(name)
        if size is None and lookup.is_folder(name):  # mkdir -p outputs/pal.py: a folder is not the file
            found.append(Finding("path.not_a_file", {"path": name}, ("bash", "write_file"), COMMAND))
            empty.append(name)
        elif size is None or size == 0 or (size <= 8 and lookup.holds_nothing(name)):
            rule = ("path." if delivered else "file.") + ("missing" if size is None else "empty")
            # a text file the model tried to write another way: it knows the content, not the mechanics
            again = name.lower().endswith(SOURCE_SUFFIXES) and name in tried
            found.append(Finding(rule, {"path": name}, ("write_file",), WRITE if again else WRITE_IF_ALONE))
            empty.append(name)
        else:  # read once for the rules on what it holds
            text = lookup.text_of(name) or ""
            held = (
                (on("rows.count_wrong") and rows_short(request, name, text, run))
                or (on("file.not_just_value") and size <= 400 and not_just_value(request, name, text))
                or (on("file.not_sorted") and not_sorted(request, name, text, language))
                or template_missing(request, name, text, unseen)
                or keys_missing(request, name, text, unseen)
            )
            if held:
                found.append(held)
    for folder in output_folders(request):
        if not any(path.startswith(folder + "/") for path in lookup.entries()):
            found.append(Finding("folder.empty", {"folder": folder}, ("write_file",), WRITE_IF_ALONE))
    return found, empty


def _value_to_save(
    request: str,
    reply: str,
    empty: list[str],
    lookup: FileLookup,
    run: Sequence[Any],
    on: On,
) -> list[Finding]:
    """For the files left ``empty``, what the run has to put in them: the value the answer states
    (or a command printed) when one file is empty and the request or a tool result shows its
    numbers, else what the run printed and did not save, else the output of a script it wrote,
    typed in by hand."""
    shown = numbers_in(request).union(*(shown_numbers(m) for m in run if isinstance(m, ToolMessage)))
    value = reply.strip()
    if len(empty) == 1 and empty[0].endswith(".json"):
        value = json_in(reply) or value  # the JSON the answer holds (it printed the totals, then wrote {})
    offered = is_value(value) or value != reply.strip()
    line = printed_line(run) if not offered and len(empty) == 1 else None
    if (
        line is not None and len(reply.split()) <= MAX_SHORT_ANSWER_WORDS and line.casefold() in reply.casefold()
    ):  # "The warmest city is Cairo." after "Cairo"
        value, offered = line, True
    if len(empty) == 1 and offered and all(is_shown(n, shown) for n in numbers_in(value)):
        # the answer was the value and the file is empty: a value to copy is easier than a
        # task to redo (but not a number no tool showed)
        return [Finding("answer.offer", {"path": empty[0], "value": value}, ("write_file",), WRITE)]
    if (printed := printed_not_saved(empty, run, request)) is not None and on(printed.rule):
        return [printed]
    if on("script.output_typed") and (
        script := run_and_save(
            request,
            empty,
            [n for n in named_files(request) if n.endswith(_SCRIPT_SUFFIXES) and lookup.size_of(n)],
        )
    ):
        return [script]
    return []


def _matches(path: str, patterns: Sequence[str]) -> bool:
    """Whether ``path`` (relative to outputs) matches one of a skill's output ``patterns``."""
    return any(fnmatch.fnmatchcase(path, p) or fnmatch.fnmatchcase(path, p.removeprefix("**/")) for p in patterns)


def _asked_kind(pattern: str, named: Sequence[str]) -> bool:
    """Whether a file the request names is of the kind a skill's output ``pattern`` makes: its
    name matches the pattern's last part (``test_*.py``, ``*.pptx``, ``README.md``; ``*.*`` takes
    any named file)."""
    last = posixpath.basename(pattern).lower()
    return any(fnmatch.fnmatchcase(posixpath.basename(n).lower(), last) for n in named)


def _skill_outputs(state: Any, lookup: FileLookup, skills: Mapping[str, Skill]) -> list[Finding]:
    """The active skill's declared outputs with no (non-empty) file in outputs yet (a model
    renders the report a skill delivers in its answer instead of writing it); when all are
    there, its check not run on the newest since it was written (``skill_checks.py``).

    A skill the harness chose by the request's words, for a request that names no file, demands
    no output until the run writes a file: "draft an email to my landlord" fits the letter skill
    and wants the draft in the answer, not a ``.eml`` file (the user did not ask for one); a run
    that set out to build a site owes the site. When the request names its files, a chosen skill
    demands only an output its pattern finds among those names: the user's file names say what
    is owed, and the harness's guess of a skill (an image skill for "write c2f.py that converts
    Celsius") adds no deliverable of its own. Its check and its server apply to an output the run
    made. An output written without its file name (``outputs/site`` holding the page) is
    ``skill.output_misnamed``, moved by the harness (``skill_checks.py``)."""
    name, _ = active_skill(state, state.get("messages") or [], skills)
    skill = skills.get(name) if name else None
    if skill is None or not skill.outputs:
        return []
    made = [
        path.removeprefix(OUTPUTS + "/")
        for path, (size, _) in sorted(lookup.entries().items(), key=lambda e: e[1][1])  # newest last
        if path.startswith(OUTPUTS + "/") and size > 0
    ]
    request, run = this_run(state.get("messages") or [])
    text = request.text if request else ""
    named = _NAMED.search(text)
    asked = named_files(text)
    found = []
    for pattern in skill.outputs:
        if any(_matches(p, (pattern,)) for p in made):
            continue
        misnamed = next(
            (
                f
                for p in made
                if "." not in posixpath.basename(p)
                and (f := skill_output_misnamed(skill, pattern, f"{OUTPUTS}/{p}", lookup.text_of(f"{OUTPUTS}/{p}")))
            ),
            None,
        )
        if misnamed is not None:
            found.append(misnamed)
            continue
        if harness_chosen(state) and (not _asked_kind(pattern, asked) if asked else not wrote_files(run)):
            continue  # the harness chose the skill, and the request asks for no file of its kind
        # "a skill named csv-summary" and skills/*/SKILL.md: the file is skills/csv-summary/SKILL.md
        where = f"{OUTPUTS}/{pattern.replace('*', named.group(1), 1)}" if named and pattern.count("*") == 1 else None
        found.append(
            Finding(
                "skill.output_missing",
                {"skill": skill.name, "pattern": pattern, "where": where},
                ("write_file",),
                WRITE_IF_ALONE,
            )
        )
    delivered = [p for p in made if _matches(p, skill.outputs)]
    if found or not delivered:
        return found
    newest = f"{OUTPUTS}/{delivered[-1]}"  # checked first, then served (when the skill serves it)
    return [f for f in (skill_check_not_run(skill, newest, run), skill_not_served(skill, newest, run)) if f is not None]


def _command_findings(request: str, run: Sequence[Any], lookup: FileLookup, on: On) -> list[Finding]:
    """What the run's commands left undone, from the commands and the files (any language): a
    glob one folder short, a background server not used or asked for a file it does not serve, an
    edit made in one file of the request's folder and not in the others."""
    found = [shallow_glob(request, run, lookup.entries())] if not noted(run, "glob.shallow") else []
    found.append(server_unused(request, run, lambda p: lookup.size_of(p) is not None, lookup.text_of))
    found.append(edit_not_everywhere(request, run, lookup.entries(), lookup.text_of))
    return [f for f in found if f is not None and on(f.rule)]


def _reply_paths_missing(reply: str, lookup: FileLookup) -> list[Finding]:
    """``reply.path_missing``: a file under /mnt/user-data the reply's prose names (not a command
    it shows, not an upload) that does not exist."""
    found = []
    prose = re.sub(r"```.*?(?:```|\Z)", "", reply, flags=re.DOTALL)  # paths in a shown command are not claims
    for path in dict.fromkeys(_VIRTUAL.findall(prose)):
        if path.rstrip("/") in (
            USER_DATA_ROOT,
            f"{USER_DATA_ROOT}/workspace",
            f"{USER_DATA_ROOT}/outputs",
        ) or path.startswith(f"{USER_DATA_ROOT}/uploads"):
            continue  # an upload is the user's to give, never the agent's to make up
        if "." in path.rsplit("/", 1)[-1] and lookup.size_of(path) is None:
            found.append(Finding("reply.path_missing", {"path": path}))
    return found
