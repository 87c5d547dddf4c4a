"""What the completion check found: typed findings, the rules they come from, and their
languages.

A rule of the completion check returns :class:`Finding` values, never text: a stable rule id
(``path.missing``, ``command.failed_not_retried``...), the evidence (the path, the number, the
tool call id, the command), and the tools its way out needs. The plan after a note
(:mod:`~herdsman.middleware.completion.plan`) reads those fields, a rule that must not repeat
itself reads the rule ids of the earlier notes (:func:`noted`), and the words the model reads
are made from a finding in one place only, :mod:`~herdsman.middleware.completion.findings_text`.

Each rule declares the languages it understands in :data:`RULES`: ``None`` for a structural
rule (files, exit codes, numbers, calls) that holds for a request in any language, else the
languages whose words it parses (``("en",)`` for one that reads English words such as
"sorted"; ``("en", "zh")`` for one whose words of intent, "fix" and 修复, "how many" and 多少, are
written in both, in :mod:`~herdsman.middleware.completion.intent_words`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from herdsman.turns.turn import is_harness

FINDINGS_KEY = "herdsman_findings"
"""Where a note message carries its findings (``additional_kwargs``), as dicts (see :meth:`Finding.to_dict`)."""

EN = ("en",)
EN_ZH = ("en", "zh")


@dataclass(frozen=True)
class Rule:
    """A rule of the completion check: its id, the languages it applies to (None: any), what it
    detects; ``intent``: it parses the words of a request in those languages, so it runs only
    where ``lead.intent_rules`` turns intent rules on (False: it counts scripts, not words)."""

    id: str
    languages: tuple[str, ...] | None
    detects: str
    intent: bool = True


_RULES = (
    Rule("call.as_text", None, "a tool call written as text in the reply (it was not run)"),
    Rule("tool.unknown", None, "a call (written as JSON) of a tool that does not exist"),
    Rule("reply.echoes_note", None, "the reply repeats a note of the harness instead of answering"),
    Rule(
        "source.unseen",
        None,
        "a URL in the answer, or in a text file the run wrote, that no request, upload or tool result shows",
    ),
    Rule("reply.fake_tool_result", None, "the reply imitates a tool result (<tool_response>)"),
    Rule(
        "reply.placeholder",
        None,
        "placeholders such as <total_amount> where values belong (also <the total> in an English reply)",
    ),
    Rule(
        "reply.wrong_language",
        ("zh",),
        "the answer to a request in Chinese is in English (counted by script, no model)",
        intent=False,
    ),
    Rule("reply.refusal", EN, "the reply refuses a normal task (English refusal phrases)"),
    Rule("path.missing", None, "a path under /mnt/user-data/outputs the request names does not exist"),
    Rule("path.empty", None, "a path under /mnt/user-data/outputs the request names is empty ([], {}, whitespace)"),
    Rule("path.not_a_file", None, "a file the request names (it has an extension) is a folder"),
    Rule("folder.empty", None, "a folder under /mnt/user-data/outputs the request names holds no file"),
    Rule("file.missing", EN_ZH, "a file the request asks to make (save, write, create...) does not exist"),
    Rule("file.empty", EN_ZH, "a file the request asks to make is empty"),
    Rule("file.unchanged", None, "a file the request named, which existed, was written back with the same content"),
    Rule("file.change_not_made", EN_ZH, "a file the request asks to fix or change (it existed) is unchanged"),
    Rule("script.changed_not_run", None, "a script the request named was changed (or made) and not run since"),
    Rule("script.ignores_arguments", None, "a script the request runs with arguments reads none of them"),
    Rule("script.missing_import", None, "a script failed on a standard module it uses without importing it"),
    Rule("script.raises", None, "the last command failed with a Python error raised in a file of the user's"),
    Rule("script.does_not_parse", None, "a Python or JSON file the run wrote does not parse (compiled, never run)"),
    Rule(
        "script.printed_nothing",
        None,
        "the command the request shows was run on the script the run wrote and printed nothing",
    ),
    Rule(
        "script.output_differs",
        None,
        "that command printed only numbers, and a number the request gives is not among them",
    ),
    Rule("value.not_set", EN, "the request sets a key to a value (set port to 9090) and the file still has another"),
    Rule("skill.output_missing", None, "the active skill declares an output and none is in outputs"),
    Rule(
        "skill.output_misnamed",
        None,
        "a file the run wrote under outputs has no extension and holds what the active skill's output pattern wants",
    ),
    Rule(
        "skill.check_not_run",
        None,
        "the active skill names a check script, its output is there, and nothing ran the check since it was written",
    ),
    Rule(
        "skill.not_served",
        None,
        "the active skill serves what it delivers (serve: a port), it is delivered, and no server was started",
    ),
    Rule("reply.path_missing", None, "the reply names a /mnt/user-data file that does not exist"),
    Rule(
        "command.not_run",
        None,
        "the request shows a command running a script that existed, and no call of the run ran it",
    ),
    Rule(
        "glob.shallow",
        None,
        "a command acted in place on FOLDER/*.EXT for a folder the request names; *.EXT files below were left",
    ),
    Rule(
        "edit.not_everywhere",
        None,
        "a word the run's edits changed is still in other files of the folder the request names (and no file in it)",
    ),
    Rule(
        "server.not_used",
        None,
        "a server the run started in the background listens, and no later command fetched from its port",
    ),
    Rule(
        "server.not_found",
        None,
        "a fetch from a file server the run started got a 404, and the file is in a folder the request names",
    ),
    Rule("command.failed_not_retried", None, "the last tool call failed (error, non-zero exit, only error lines)"),
    Rule("number.unsupported", None, "the answer to a question states a number no tool output shows"),
    Rule(
        "name.unsupported",
        None,
        (
            "a short answer to a question names (a capitalized word, Latin script) what no tool "
            "output or the request shows"
        ),
        intent=False,
    ),
    Rule(
        "answer.denied_but_shown",
        EN_ZH,
        "the answer says no (no, not, 不, 没有) and a tool result lists the file the request names",
    ),
    Rule(
        "count.not_computed",
        EN_ZH,
        "a count or total answered with numbers seen only in what was read, none a command computed",
    ),
    Rule("number.missing", EN_ZH, "the request asks how many / what total and the answer has no number"),
    Rule("file.numbers_unsupported", None, "a file the run wrote holds only numbers no tool output showed"),
    Rule("file.figures_unsupported", None, "a file the run wrote states computed figures no tool output showed"),
    Rule("search.found_nothing", EN, "a where/which/how-many question answered after a search that found nothing"),
    Rule("search.term_unsearched", EN, "a search question's term that no call looked for"),
    Rule("compare.not_made", EN_ZH, "a which-is-the-largest question answered without a command that compares"),
    Rule("tool.none_used", None, "no tool was used although the request names a file or path, or files were uploaded"),
    Rule("tool.none_used_topic", EN_ZH, "no tool was used although the request talks of files, folders, data"),
    Rule("file.lines_cut", None, "the lines written are each only part of a line a tool showed"),
    Rule("claim.unbacked", EN, "the answer says something was created or saved, and no call could have written a file"),
    Rule("code.shown_not_run", None, "the reply shows Python or shell code that nothing ran"),
    Rule("code.shown_not_written", None, "the reply shows the new code of a file to fix that is unchanged"),
    Rule(
        "code.files_not_written",
        None,
        "the reply shows files (a file name, then its text in a fenced block) that the run never wrote",
        intent=False,
    ),
    Rule("answer.offer", None, "the answer was a value and the one file asked for is missing: the value to copy"),
    Rule(
        "output.printed_template",
        None,
        "the last command printed one value per line the request quotes with a placeholder, and the file is missing",
    ),
    Rule("output.printed_not_saved", None, "the last command computed and printed the result of a file still missing"),
    Rule(
        "output.grep_not_saved",
        EN,
        "the grep tool found the lines to save (the request says lines) and nothing saved them",
    ),
    Rule(
        "script.output_typed",
        EN,
        "the request says to run a script and save its output, and the output file is missing",
    ),
    Rule("rows.count_wrong", EN, "the request asks for one row per item of a range and the file has another count"),
    Rule("file.not_just_value", EN, "the request asks for just a name, path or number and the file holds a sentence"),
    Rule(
        "file.keys_missing",
        None,
        "the request shows the JSON object a .json file must hold and the file lacks some of its keys",
    ),
    Rule(
        "file.template_missing",
        None,
        "the request quotes a line with placeholders ('Total: <sum>') and the file lacks its fixed words",
    ),
    Rule("file.not_sorted", EN_ZH, "the request asks for a sorted list and the file is not in order"),
    Rule("rename.double_extension", EN, "a rename from .a to .b left files ending in .a.b"),
)
RULES: Mapping[str, Rule] = {r.id: r for r in _RULES}
"""Every rule of the completion check by id (the verifier's findings are ``verifier.<id>``, any language)."""

DELIVERABLE_MISSING = frozenset(
    {
        "path.missing",
        "path.empty",
        "path.not_a_file",
        "folder.empty",
        "file.missing",
        "file.empty",
        "skill.output_missing",
    }
)
"""The rules whose finding means a deliverable the request asked for is not there (a run that
ends with one left has not delivered: ``herdsman run`` exits non-zero, see ``runtime/runs/run_outcome.py``)."""

# Plan priorities: the first finding (lowest) with next tools decides the forced calls.
REWRITE = 0
"""Rewrite a file with the code the reply showed."""
REPRODUCE = 1
"""Run the command the request shows, to see what it does, before any file is edited."""
EDIT = 2
"""Edit a file the request asks to change."""
COMMAND = 3
"""Run a command (the code shown, the script changed, the saving command)."""
SEARCH = 4
"""Search inside the files."""
WRITE = 5
"""Write a file, whatever else the note says."""
WRITE_IF_ALONE = 6
"""Write a file, when every finding of the note says so."""
FREE = 9
"""No particular tool."""
ANSWER = 10
"""Answer again in words: when every finding of a note is one, no tool is forced (a question
that needs no tool must not be sent to use one)."""


@dataclass(frozen=True)
class Finding:
    """One thing the final reply misses.

    ``rule``: an id of :data:`RULES` (or ``verifier.<id>``); ``evidence``: what shows it (JSON
    values only: paths, numbers, a tool call id, a command); ``next_tools``: the calls its way
    out needs, in order (empty: any tool); ``priority``: which finding's tools the plan follows
    when several have some (lowest first, see the constants above)."""

    rule: str
    evidence: Mapping[str, Any] = field(default_factory=dict)
    next_tools: tuple[str, ...] = ()
    priority: int = FREE

    @property
    def languages(self) -> tuple[str, ...] | None:
        """The languages the rule understands (None: any)."""
        known = RULES.get(self.rule)
        return known.languages if known is not None else None

    def to_dict(self, text: str | None = None) -> dict[str, Any]:
        """A JSON-ready dict (kept in the state and in a note's ``additional_kwargs``)."""
        out: dict[str, Any] = {
            "rule": self.rule,
            "languages": list(self.languages) if self.languages else None,
            "evidence": dict(self.evidence),
            "next_tools": list(self.next_tools),
            "priority": self.priority,
        }
        if text is not None:
            out["text"] = text
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Finding:
        """The finding :meth:`to_dict` gave."""
        return cls(
            str(data.get("rule", "")),
            dict(data.get("evidence") or {}),
            tuple(data.get("next_tools") or ()),
            int(data.get("priority", FREE)),
        )


def applies(rule: str, language: str, enabled: Sequence[str]) -> bool:
    """Whether ``rule`` runs on a text in ``language``: a language-neutral rule always; one that
    declares languages only when ``language`` is one of its own, and, for one that parses words
    (:attr:`Rule.intent`), one of ``enabled`` (the languages whose intent rules the profile turned on)."""
    known = RULES[rule]
    if known.languages is None:
        return True
    return language in known.languages and (not known.intent or language in enabled)


def noted(messages: Iterable[Any], rule: str, **evidence: Any) -> bool:
    """Whether a harness note among ``messages`` already carried a finding of ``rule`` (with
    ``evidence`` matching, when given): for a rule that says its piece once."""
    for message in messages:
        if not is_harness(message):
            continue
        for data in message.additional_kwargs.get(FINDINGS_KEY) or ():
            if data.get("rule") == rule and all((data.get("evidence") or {}).get(k) == v for k, v in evidence.items()):
                return True
    return False


def ignored_note(run: Sequence[Any]) -> list[dict[str, Any]]:
    """The findings of the last harness note in ``run`` (one run's messages, its final reply last)
    when the model ignored that note: nothing ran after it and the final reply says again what the
    reply the note was sent back for said (the same words, spacing aside).

    A rule that says its piece once (:func:`noted`) stays quiet after its note, so the repeated
    claim would stand as done: the README's primes script failed, the note said so, the model said
    "Here are the primes" again and ``herdsman run`` exited 0. An answer that differs (the model
    explains the failure) is not an ignored note."""
    at = next((i for i in range(len(run) - 1, -1, -1) if is_harness(run[i])), None)
    if at is None or at == 0 or at == len(run) - 1:
        return []
    before, after = run[at - 1], run[-1]
    if any(getattr(m, "type", "") == "tool" or getattr(m, "tool_calls", None) for m in (before, *run[at + 1 :])):
        return []
    if getattr(before, "type", "") != "ai" or getattr(after, "type", "") != "ai":
        return []
    said = " ".join(str(getattr(before, "text", "")).split())
    if not said or said != " ".join(str(getattr(after, "text", "")).split()):
        return []
    return [dict(data) for data in run[at].additional_kwargs.get(FINDINGS_KEY) or ()]
