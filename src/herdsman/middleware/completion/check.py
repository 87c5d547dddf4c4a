"""Verify, then continue: when the model stops, check the request against what happened.

A small model often stops before the job is done: it prints the JSON it was asked to save,
answers "2" after a grep without writing the requested file, states a total without opening the
CSV, claims a chart "is saved in /mnt/user-data/outputs/profit.png" that does not exist, or
apologizes that it "can't assist" with a harmless task. This middleware is the cheap end of the
act-observe-reflect loop: when a reply has no tool calls, rules check it (and, when
``lead.verifier_model`` is set, one short model call judges it); what is missing is told to the
agent in a ``[harness check]`` message and the model runs again, at most ``lead.verify_rounds``
times per run. The calls after a note are forced (``tool_choice``) along a short plan: some tool
(``"any"``); or read the file to fix, then edit it (``str_replace``, or ``write_file`` when the
reply showed the new code); or ``write_file`` for a missing file; or ``bash`` to run code the reply
showed. A small model told it did not look otherwise apologizes, or writes a tutorial, instead
of doing it.

Every rule returns typed findings (:mod:`~herdsman.middleware.completion.findings`: a rule id, the
evidence, the next tools); the plan reads their fields, and their words are made in one place
(:mod:`~herdsman.middleware.completion.findings_text`). The note message carries them as data too
(``additional_kwargs["herdsman_findings"]``). The structural rules (files, exit codes, numbers,
calls) hold for a request in any language; those that read intent ("fix", 修复) run only on a
request in a language they declare (English and Chinese: :mod:`~herdsman.middleware.completion.intent_words`),
and only when ``lead.intent_rules`` turns them on (``auto``: for a ``small`` profile model). The rules, in order:

* the reply holds a tool call written as text (it was not run), or a call to a tool that does
  not exist;
* the reply repeats a note of the harness (:mod:`~herdsman.middleware.completion.note_echo`): it is sent back
  to answer in its own words, with no tool forced;
* the answer to a request in Chinese is in English (:mod:`~herdsman.middleware.reply_language`):
  sent back once to answer in Chinese, with no tool forced;
* the reply is a refusal, imitates a tool result (``<tool_response>``), or has placeholders
  (``<total_amount>``) where values belong;
* a path under outputs the request names (or a file it asks to make with a verb such as save,
  write, create, 保存, 写入) did not exist when the run began and still does not exist, or is empty, or
  is a folder (``mkdir -p outputs/a.py``); a folder under outputs it names holds no file; a file it
  asks for lacks the fixed words of a line the request quotes with placeholders ('Total: <sum>');
* the reply names a path under ``/mnt/user-data`` that does not exist;
* the answer to a question states a number no tool result shows, or a file the run wrote holds
  nothing but such numbers; the answer to "how many" (or "what is the total") states none, or
  only numbers seen in what was read, none a command computed (a count made by eye);
* a file the request named (it existed when the run began) was written back unchanged (by
  content), or one it asks to fix or change (in English or Chinese) was not changed; a script it named was
  changed and not run since;
* the last tool call failed (an error, or a command's non-zero exit code);
* a URL in the answer, or in a text file the run wrote, that no request, upload or tool result
  shows (:mod:`~herdsman.middleware.completion.sources`): a source must be real; one still in the
  answer when the rounds run out is taken out of it, marked;
* no tool was used at all although the request names a file (or files were just uploaded, or,
  in English, it talks of files);
* and when any of these holds, code the reply shows (a fenced Python or shell block: "here is
  the corrected script, save it and run it") is named: write it into the file, or run it.

Each round costs one more model call (and what the agent then does); the thread state keeps
``completion_checks``, the rounds used by the last run, so a benchmark can count them, and
``completion_unresolved``, the findings still there when the rounds ran out (a sub-agent whose
final reply leaves something there is retried, with its files rolled back, when retries are set).
When the rounds ran out on a reply that is no answer at all (a call written as text, a copy of a
note), an honest "could not" built from those findings ends the run after it
(:mod:`~herdsman.middleware.completion.could_not`): a note of the harness never becomes the final answer.
"""

from __future__ import annotations

import asyncio
import fnmatch
import hashlib
import os
import re
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import AgentState, ModelRequest, hook_config
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from herdsman.config.schema import switched_on
from herdsman.language.detect import language_of
from herdsman.logs import get_logger
from herdsman.middleware.agent_profile import run_settings, tool_allowed
from herdsman.middleware.answer_nudge import is_question
from herdsman.middleware.completion.could_not import NO_ANSWER, could_not_message
from herdsman.middleware.completion.edits import edit_not_everywhere, edited_in_named_folder
from herdsman.middleware.completion.files import (
    cut_lines,
    double_extension,
    keys_missing,
    not_just_value,
    not_sorted,
    printed_not_saved,
    rows_short,
    run_and_save,
    template_missing,
    unbacked_claim,
    unset_value,
)
from herdsman.middleware.completion.findings import (
    ANSWER,
    COMMAND,
    EDIT,
    FINDINGS_KEY,
    FREE,
    REWRITE,
    WRITE,
    WRITE_IF_ALONE,
    Finding,
    applies,
    noted,
)
from herdsman.middleware.completion.findings_text import note_text, render
from herdsman.middleware.completion.globs import shallow_glob
from herdsman.middleware.completion.intent_words import INTENT_LANGUAGES, files_topic, says, zh_question
from herdsman.middleware.completion.note_echo import NOTE_ECHO_KEY, echoes_note, harness_notice, note_texts
from herdsman.middleware.completion.plan import deciding, next_tools, read_first, spent_ways
from herdsman.middleware.completion.rules import (
    FENCE_SUFFIX,
    MAX_SHORT_ANSWER_WORDS,
    NUMBER,
    SOURCE_SUFFIXES,
    change_targets,
    command_not_run,
    command_outcome,
    count_command,
    denied_but_shown,
    failed,
    failure_detail,
    fenced_code,
    guessed_numbers,
    is_shown,
    is_value,
    json_in,
    local_module_tip,
    made_up_figures,
    numbers_in,
    one_liner_tip,
    output_folders,
    printed_line,
    request_command,
    request_paths,
    shown_numbers,
    uncompared,
    unsupported_names,
    unsupported_numbers,
    untested_change,
)
from herdsman.middleware.completion.search import count_line, counted_by_eye, fruitless_search, unsearched_term
from herdsman.middleware.completion.servers import server_unused
from herdsman.middleware.completion.shown_code import (
    RAN_SHOWN_CODE,
    harness_call,
    proposed_command,
    shown_command,
    shown_file,
)
from herdsman.middleware.completion.skill_checks import skill_check_not_run
from herdsman.middleware.completion.sources import strip_unseen, unseen_sources
from herdsman.middleware.completion.verifier import verify
from herdsman.middleware.read_before_write import edit_refused
from herdsman.middleware.reply_language import wrong_language
from herdsman.middleware.rewrite import RequestRewriteMiddleware
from herdsman.sandbox.base import OUTPUTS, UPLOADS, USER_DATA_ROOT, HostBackedSandbox, SandboxProvider
from herdsman.sandbox.paths import normalize_virtual
from herdsman.sandbox.tools import parse_error
from herdsman.skills.activation import active_skill
from herdsman.skills.model import Skill
from herdsman.turns.text_calls import text_tool_call, unknown_tools
from herdsman.turns.turn import (
    HARNESS_NAME,
    holds_nothing,
    is_harness,
    named_files,
    run_sandbox,
    this_run,
    tool_names,
    turn_language,
)

log = get_logger(__name__)

_VIRTUAL = re.compile(r"/mnt/user-data/[\w./-]*[\w]")
_NAMED = re.compile(r"\bnamed\s+[`'\"]?([a-z0-9][a-z0-9-]*)", re.IGNORECASE)
_SAMPLE_SUFFIXES = (".txt", ".csv", ".json", ".log", ".md")
_REFUSAL = re.compile(
    r"(I(?:'m| am) sorry,? but I|I can(?:'|no)t (?:assist|help) with|I(?:'m| am) (?:unable|not able) to "
    r"(?:assist|help|do|complete|fulfill)|I cannot (?:fulfill|complete|do) (?:this|that|your)|As an AI\b)",
    re.IGNORECASE,
)  # English (rule reply.refusal, on the reply's language)
_PLACEHOLDER = re.compile(r"<(?:[a-z]+_)+[a-z]+>|<(?:the |your |number of |total |insert )[a-z .]+>", re.IGNORECASE)
ERROR_REPLIES = ("Error: the model call failed", "错误：模型调用失败", "The model's reply could not be used")
"""How the harness's own replies begin when the model could not be called, or its replies not
used (``agents/model_failure.py``, ``model_output_guard.py``): the run failed, there is nothing to check."""
_UNCHANGED = ("file.change_not_made", "file.unchanged")
_ALL_TOOLS = "__all__"  # LangChain's ToolCallLimitMiddleware's count key when it counts every tool


def intent_languages(mode: str, small: bool) -> tuple[str, ...]:
    """The languages whose intent rules run, for ``lead.intent_rules`` ``mode`` (``auto``: those
    of :data:`INTENT_LANGUAGES` for a ``small`` profile model, none for another; ``on``: all;
    ``off``: none). A rule still runs only on a request in its own language."""
    if switched_on(mode, small):
        return INTENT_LANGUAGES
    return ()


def asks(request: str, intent: bool, language: str = "en") -> bool:
    """Whether the request is a question: it holds a question mark (any script: "Which planet is
    farthest? Reply with the name only."); with ``intent``, also a question without one, by its
    words ("how many rows have status failed", "日志里有多少行错误")."""
    text = request.strip()
    if "?" in text or "\uff1f" in text:
        return True
    if intent:
        return zh_question(text) if language == "zh" else is_question(text)
    return False


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
        if n not in preexisting and n.endswith((".py", ".sh", ".js")) and _wrote(run, n) and lookup.size_of(n)
    ]
    if made and request_command(request) and not any(f.rule == "script.changed_not_run" for f in found):
        out += untested_change(request, made, run, _samples(lookup))
    others = [n for n in named if n not in preexisting and n not in made]
    scripts = [n for n in named if n.endswith((".py", ".sh", ".js")) and _wrote(run, n)]
    if not out and not others and (outcome := command_outcome(request, scripts, run)) is not None:
        out.append(outcome)
    return out


def _matches(path: str, patterns: Sequence[str]) -> bool:
    """Whether ``path`` (relative to outputs) matches one of a skill's output ``patterns``."""
    return any(fnmatch.fnmatchcase(path, p) or fnmatch.fnmatchcase(path, p.removeprefix("**/")) for p in patterns)


def _command_findings(request: str, run: Sequence[Any], lookup: FileLookup, on: Callable[[str], bool]) -> list[Finding]:
    """What the run's commands left undone, from the commands and the files (any language): a
    glob one folder short, a background server not used or asked for a file it does not serve, an
    edit made in one file of the request's folder and not in the others."""
    found = [shallow_glob(request, run, lookup.entries())] if not noted(run, "glob.shallow") else []
    found.append(server_unused(request, run, lambda p: lookup.size_of(p) is not None, lookup.text_of))
    found.append(edit_not_everywhere(request, run, lookup.entries(), lookup.text_of))
    return [f for f in found if f is not None and on(f.rule)]


class CompletionState(AgentState):
    """``completion_checks``: rounds used in the current run; ``completion_unresolved``: the
    findings (dicts, see :meth:`~herdsman.middleware.completion.findings.Finding.to_dict`) still there when
    the rounds ran out; ``preexisting``: files the request named that existed when the run began
    (``preexisting_stat``: a fingerprint of the content of the code and config files among them,
    see :meth:`FileLookup.fingerprint_of`; both private: checkpointed, never shown to clients)."""

    completion_checks: NotRequired[int]
    completion_unresolved: NotRequired[list[dict[str, Any]]]
    preexisting: NotRequired[Annotated[list[str], PrivateStateAttr]]
    preexisting_stat: NotRequired[Annotated[dict[str, Any], PrivateStateAttr]]


MAX_HASHED_BYTES = 1_000_000


class FileLookup:
    """Where a thread's files are: exact virtual paths, or any file with a given relative tail."""

    def __init__(self, sandbox: HostBackedSandbox) -> None:
        self.sandbox = sandbox
        self._entries: dict[str, tuple[int, int]] | None = None

    def entries(self) -> dict[str, tuple[int, int]]:
        """Virtual path -> (size, mtime) of the files under /mnt/user-data (bounded walk)."""
        if self._entries is None:
            self._entries = dict(self.sandbox.snapshot().entries)
        return self._entries

    def _stat(self, name: str) -> os.stat_result | None:
        """The stat of the full virtual path ``name`` (links followed in virtual space), or None."""
        try:
            return self.sandbox.files.stat(normalize_virtual(name))
        except Exception:  # noqa: BLE001 - a bad path is a missing file here
            return None

    def size_of(self, name: str) -> int | None:
        """The size of the file ``name`` names (largest match for a bare or relative name), or
        None: a folder of that name is not the file."""
        if name.startswith("/"):
            st = self._stat(name)
            return st.st_size if st is not None and stat.S_ISREG(st.st_mode) else None
        tail = "/" + name.lstrip("./")
        sizes = [size for path, (size, _) in self.entries().items() if path.endswith(tail)]
        return max(sizes) if sizes else None

    def is_folder(self, name: str) -> bool:
        """Whether the full virtual path ``name`` is a folder."""
        st = self._stat(name) if name.startswith("/") else None
        return st is not None and stat.S_ISDIR(st.st_mode)

    def find(self, name: str) -> str | None:
        """The virtual path of the first file ``name`` names (a full path, or a relative tail)."""
        path = normalize_virtual(name) if name.startswith("/") else None
        tail = "/" + name.lstrip("./")
        return next((v for v in self.entries() if v == path or (path is None and v.endswith(tail))), None)

    def unseen(self, files_read: Any) -> Callable[[str], bool]:
        """For :func:`read_first`: whether read before write would refuse an edit of the file a
        name names, given the run's ``files_read`` state (a missing file: no)."""

        def refused(name: str) -> bool:
            vpath = self.find(name)
            return vpath is not None and edit_refused(files_read, self.sandbox, vpath)

        return refused

    def text_of(self, name: str) -> str | None:
        """The text of the (small) file ``name`` names, or None when missing or unreadable."""
        vpath = self.find(name)
        if vpath is None or self.entries()[vpath][0] > MAX_HASHED_BYTES:
            return None
        try:
            return self.sandbox.read_text(vpath)
        except Exception:  # noqa: BLE001 - unreadable (binary): no text
            return None

    def holds_nothing(self, name: str) -> bool:
        """Whether a (small) file holds only an empty value: whitespace, [], {}, "" or null (a
        model asked for a JSON list writes [] and calls it done)."""
        vpath = self.find(name)
        try:
            return vpath is not None and holds_nothing(self.sandbox.read_text(vpath))
        except Exception:  # noqa: BLE001 - unreadable: not known to be empty
            return False

    def fingerprint_of(self, name: str) -> str | None:
        """What the file ``name`` names (first match) holds: a hash of its content when it is
        small, else its size and mtime; None when there is no such file. By content, so that
        writing a file back unchanged does not count as changing it (a model "fixes" a file by
        writing back what it read, perhaps without its final newline)."""
        vpath = self.find(name)
        if vpath is None:
            return None
        size, mtime = self.entries()[vpath]
        if size <= MAX_HASHED_BYTES:
            try:
                text = self.sandbox.read_text(vpath).rstrip()  # a final newline dropped is no change
                return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
            except Exception:  # noqa: BLE001 - unreadable (binary): size and mtime
                pass
        return f"{size}:{mtime}"


def _sources(state: Any, reply: str, run: Sequence[Any], lookup: FileLookup | None) -> list[Finding]:
    """``source.unseen``: URLs of the answer (or of a text file the run wrote) that nothing
    showed; the uploaded files are read only when there are some."""
    messages = state.get("messages") or []
    found = unseen_sources(reply, messages, run)
    if found and lookup is not None:
        uploads = [
            p for p, (size, _) in lookup.entries().items() if p.startswith(UPLOADS + "/") and size <= MAX_HASHED_BYTES
        ]
        found = unseen_sources(reply, messages, run, [lookup.text_of(p) or "" for p in uploads])
    return found


def code_problem(found: Sequence[Finding], code: Sequence[tuple[str, str]]) -> Finding | None:
    """What to do with the code a reply shows instead of using it (a small model's habit:
    "here is the corrected script, save it and run it"); for a file to fix, only code in its
    language counts (a shell command shown for a Python fix is not its new text)."""
    unchanged = next((f for f in found if f.rule in _UNCHANGED), None)
    if unchanged is not None:
        targets = list(unchanged.evidence["paths"])
        suffixes = {FENCE_SUFFIX.get(lang[:2]) for lang, _ in code}
        if not any(name.endswith(tuple(s for s in suffixes if s)) for name in targets):
            return None
        return Finding(
            "code.shown_not_written", {"paths": targets}, (*unchanged.next_tools[:-1], "write_file"), REWRITE
        )
    python = any(lang.startswith("py") for lang, _ in code)
    return Finding("code.shown_not_run", {"language": "python" if python else "shell"}, ("bash",), COMMAND)


def _echo_marked(state: Any, found: Sequence[Finding]) -> list[AIMessage]:
    """The final reply marked as a copy of a note (same id: it replaces the reply), so the
    conversation shows it as a failed step; none when ``found`` has no echo or it is marked."""
    reply = (state.get("messages") or [None])[-1]
    if (
        not isinstance(reply, AIMessage)
        or reply.additional_kwargs.get(NOTE_ECHO_KEY)
        or not any(f.rule == "reply.echoes_note" for f in found)
    ):
        return []
    return [reply.model_copy(update={"additional_kwargs": {**reply.additional_kwargs, NOTE_ECHO_KEY: True}})]


def _is_final(state: Any) -> bool:
    """Whether the state ends in a final reply (an AI message without tool calls)."""
    messages = state.get("messages") or []
    return bool(messages) and isinstance(messages[-1], AIMessage) and not messages[-1].tool_calls


class CompletionCheckMiddleware(RequestRewriteMiddleware):
    """Send the agent back to work when its final reply misses what the request asked."""

    state_schema = CompletionState

    def __init__(
        self,
        provider: SandboxProvider | None,
        rounds: int = 2,
        verifier: BaseChatModel | None = None,
        tool_names: Sequence[str] = (),
        skills: Mapping[str, Skill] | None = None,
        intent_languages: Sequence[str] = INTENT_LANGUAGES,
        run_shown_code: bool = False,
        max_tool_calls: int | None = None,
        answer_language: bool = False,
    ) -> None:
        """``provider``: the thread's files; ``rounds``: checks per run; ``verifier``: optional
        judge; ``tool_names``: the agent's tools (to spot a tool call written as text);
        ``skills``: the usable skills, whose declared ``outputs`` are checked while one is active;
        ``intent_languages``: the languages whose intent rules run (see :func:`intent_languages`);
        ``run_shown_code``: run the code a reply showed when that is the way out
        (:mod:`~herdsman.middleware.completion.shown_code`); ``max_tool_calls``: the run's tool-call limit
        (``tools.max_tool_calls_per_run``), which the harness's own call counts against;
        ``answer_language``: send an English answer to a Chinese request back once (the lead's
        ``lead.answer_language``; a sub-agent answers the lead, in whatever language)."""
        super().__init__()
        self.answer_language = answer_language
        self.run_shown_code = run_shown_code
        self.max_tool_calls = max_tool_calls
        self.intent_languages = tuple(intent_languages)
        self.skills = dict(skills or {})
        self.provider = provider
        self.tool_names = tuple(tool_names)
        self.rounds = rounds
        self.verifier = verifier

    def _lookup(self) -> FileLookup | None:
        try:
            sandbox = run_sandbox(self.provider)
        except Exception:  # noqa: BLE001 - no sandbox: the file rules are skipped
            return None
        return FileLookup(sandbox) if sandbox is not None else None

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """At the start of a run: reset the rounds, note which named files already exist."""
        request, _ = this_run(state.get("messages") or [])
        lookup = self._lookup()
        names = named_files(request.text) if request is not None else []
        existing = [n for n in names if lookup is not None and lookup.size_of(n) is not None]
        stats = {n: lookup.fingerprint_of(n) for n in existing if n.endswith(SOURCE_SUFFIXES)} if lookup else {}
        return {"completion_checks": 0, "completion_unresolved": [], "preexisting": existing, "preexisting_stat": stats}

    def problems(self, state: Any) -> list[Finding]:
        """What the final reply misses, as findings (empty: done)."""
        request, run = this_run(state.get("messages") or [])
        reply = run[-1] if run and isinstance(run[-1], AIMessage) else None
        if request is None or reply is None or reply.tool_calls:
            return []
        text = reply.text
        if text.startswith(ERROR_REPLIES):
            return []
        language = language_of(request.text)
        intent = language in self.intent_languages  # the request's words of intent may be read

        def on(rule: str, lang: str = language) -> bool:
            return applies(rule, lang, self.intent_languages)

        found: list[Finding] = []
        if text_tool_call(text, self.tool_names):
            found.append(Finding("call.as_text"))
        unknown = unknown_tools(text, self.tool_names) if self.tool_names else []
        if unknown:
            found.append(Finding("tool.unknown", {"tools": unknown, "available": sorted(self.tool_names)[:12]}))
        tool_results = [m for m in run if isinstance(m, ToolMessage)]
        notices = [m.text for m in run if harness_notice(m)]  # the bash tool's words for the model
        if reply.additional_kwargs.get(NOTE_ECHO_KEY) or echoes_note(
            text,
            [*note_texts(run), *notices],
            [
                request.text,
                *(m.text for m in run[:-1] if isinstance(m, (ToolMessage, AIMessage)) and not harness_notice(m)),
            ],
        ):
            found.append(Finding("reply.echoes_note", priority=ANSWER))
        if "<tool_response>" in text:
            found.append(Finding("reply.fake_tool_result"))
        holes = [h for h in _PLACEHOLDER.findall(text) if h.lower() != "<tool_response>"]
        if holes:
            found.append(Finding("reply.placeholder", {"placeholders": list(dict.fromkeys(holes[:3]))}))
        wrong = wrong_language(request.text, text) if self.answer_language and on("reply.wrong_language") else None
        if wrong is not None and not noted(run, "reply.wrong_language"):  # once: a second English answer stands
            found.append(Finding("reply.wrong_language", {"language": wrong}, priority=ANSWER))
        if on("reply.refusal", language_of(text)) and _REFUSAL.search(text):
            found.append(Finding("reply.refusal"))
        lookup = self._lookup()
        if lookup is not None:
            shown = numbers_in(request.text).union(*(shown_numbers(r) for r in tool_results))
            found += self._file_problems(state, request.text, text, lookup, shown, run, language)
        if tool_results and failed(tool_results[-1]):
            last = tool_results[-1]
            evidence: dict[str, Any] = {"tool": last.name, "detail": failure_detail(last)}
            if not noted(
                run, "command.failed_not_retried", **evidence
            ):  # once: the answer after it may be the explanation
                found.append(
                    Finding(
                        "command.failed_not_retried",
                        {
                            **evidence,
                            "tool_call_id": last.tool_call_id,
                            "tip": local_module_tip(one_liner_tip(run, last), lookup.entries() if lookup else ()),
                        },
                    )
                )
        asked = (
            asks(request.text, intent, language) or NUMBER.fullmatch(text.strip()) is not None
        )  # a question, or a bare number
        unsupported = unsupported_numbers(request.text, text, tool_results) if tool_results and asked else []
        if unsupported:
            counted = count_line(tool_results)
            command = count_command(request.text, language) if intent else None
            number = NUMBER.search(counted[1]) if counted else None
            evidence = {
                "numbers": unsupported[:3],
                "command": command,
                "counted": {"tool": counted[0], "line": counted[1], "number": number.group(0)}
                if counted and number
                else None,
            }
            wc = command is not None and evidence["counted"] is None  # a count to make with that command
            found.append(Finding("number.unsupported", evidence, ("bash",) if wc else (), COMMAND if wc else FREE))
        elif (
            tool_results and on("count.not_computed") and (by_eye := counted_by_eye(request.text, text, run, language))
        ):
            found.append(by_eye)
        elif (
            tool_results
            and asked
            and not noted(run, "name.unsupported")
            and (names := unsupported_names(request.text, text, tool_results))
        ):
            found.append(Finding("name.unsupported", {"names": names[:3]}))
        if (
            tool_results
            and on("answer.denied_but_shown")
            and not noted(run, "answer.denied_but_shown")
            and (denied := denied_but_shown(request.text, text, tool_results, language))
        ):
            found.append(denied)
        again = (
            (on("search.found_nothing") and fruitless_search(request.text, run))
            or (on("search.term_unsearched") and unsearched_term(request.text, run))
            or (on("compare.not_made") and uncompared(request.text, run, language))
        )
        if again:
            found.append(again)
        if (
            on("number.missing")
            and says("count", request.text, language)
            and not numbers_in(text)
            and not (says("make", request.text, language) and named_files(request.text))
        ):  # a file to deliver holds it
            found.append(Finding("number.missing"))
        for path, figures in made_up_figures(run, request.text):
            found.append(Finding("file.figures_unsupported", {"path": path, "figures": figures.split(", ")}))
        for path, numbers in guessed_numbers(run, request.text):
            command = count_command(request.text, language) if intent else None
            found.append(
                Finding(
                    "file.numbers_unsupported",
                    {"path": path, "numbers": numbers.split(", "), "command": command},
                    ("bash",) if command else (),
                    COMMAND if command else FREE,
                )
            )
        uploaded = request.id in (state.get("upload_notices") or {})
        if not tool_results:
            if named_files(request.text) or request_paths(request.text) or uploaded:
                found.append(Finding("tool.none_used", {"uploaded": uploaded}))
            elif on("tool.none_used_topic") and files_topic(request.text, language):
                found.append(Finding("tool.none_used_topic"))
        cut = cut_lines(run)
        if cut:
            found.append(cut)
        found += _sources(state, text, run, lookup)
        claim = unbacked_claim(text, run) if not found and on("claim.unbacked", language_of(text)) else None
        if claim:  # alone: other findings say what to write
            found.append(claim)
        code = fenced_code(text) if found else []
        problem = code_problem(found, code) if code else None
        if problem:
            found.append(problem)
        if len(found) > 1:  # the language is fixed last, alone: asked with other things, a small
            # model rewrote its answer in the language and dropped the rest (answer_translation)
            found = [f for f in found if f.rule != "reply.wrong_language"]
        # a value to copy goes last, alone on the note's last line: a small model copied the
        # whole sentence around it into the file
        return sorted(found, key=lambda f: f.rule == "answer.offer")

    def _file_problems(
        self,
        state: Any,
        request: str,
        reply: str,
        lookup: FileLookup,
        shown: set[str],
        run: Sequence[Any] = (),
        language: str = "en",
    ) -> list[Finding]:
        """The rules on files; ``shown``: the numbers the request and the run's tool results show."""

        def on(rule: str) -> bool:
            return applies(rule, language, self.intent_languages)

        found: list[Finding] = []
        unseen = lookup.unseen(state.get("files_read"))
        before = state.get("preexisting_stat") or {}
        preexisting = set(state.get("preexisting") or [])
        if before:
            asked = on("file.change_not_made") and says("change", request, language) is not None
            targets = change_targets(request, list(before), language) if asked else list(before)
            unchanged = [name for name in targets if lookup.fingerprint_of(name) == before[name]]
            if asked and len(unchanged) == len(targets) and not edited_in_named_folder(request, run):
                found.append(
                    Finding(
                        "file.change_not_made", {"paths": targets}, read_first(unseen, targets, "str_replace"), EDIT
                    )
                )
            else:
                rewritten = [name for name in unchanged if _wrote(run, name)]
                if rewritten:  # written back as it was: any language
                    found.append(
                        Finding(
                            "file.unchanged", {"paths": rewritten}, read_first(unseen, rewritten, "str_replace"), EDIT
                        )
                    )
                found += untested_change(request, [t for t in targets if t not in unchanged], run, _samples(lookup))
                if on("value.not_set"):
                    read = read_first(unseen, targets, "str_replace") == ("str_replace",)
                    found += [
                        f for name in targets if (f := unset_value(request, name, lookup.text_of(name) or "", read))
                    ]
        found += _scripts_made(request, preexisting, lookup, run, found)
        given = request_command(request) if on("command.not_run") else None
        ran_script = given.split()[1] if given else None
        there = ran_script is not None and any(  # named by its path in the request, run by its name
            p == ran_script or p.endswith("/" + ran_script.removeprefix("./")) for p in preexisting
        )
        if ran_script is not None and there and (where := lookup.find(ran_script)) is not None:
            not_run = command_not_run(request, run, where)
            if not_run is not None:
                found.append(not_run)
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
            found.append(Finding("answer.offer", {"path": empty[0], "value": value}, ("write_file",), WRITE))
        elif (printed := printed_not_saved(empty, run, request)) is not None and on(printed.rule):
            found.append(printed)
        elif on("script.output_typed") and (
            script := run_and_save(
                request,
                empty,
                [n for n in named_files(request) if n.endswith((".py", ".sh", ".js")) and lookup.size_of(n)],
            )
        ):
            found.append(script)
        found += self._skill_outputs(state, lookup)
        doubled = double_extension(request, list(lookup.entries())) if on("rename.double_extension") else None
        if doubled:
            found.append(doubled)
        found += _command_findings(request, run, lookup, on)
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

    def _skill_outputs(self, state: Any, lookup: FileLookup) -> list[Finding]:
        """The active skill's declared outputs with no (non-empty) file in outputs yet (a model
        renders the report a skill delivers in its answer instead of writing it); when all are
        there, its check not run on the newest since it was written (``skill_checks.py``)."""
        name, _ = active_skill(state, state.get("messages") or [], self.skills)
        skill = self.skills.get(name) if name else None
        if skill is None or not skill.outputs:
            return []
        made = [
            path.removeprefix(OUTPUTS + "/")
            for path, (size, _) in sorted(lookup.entries().items(), key=lambda e: e[1][1])  # newest last
            if path.startswith(OUTPUTS + "/") and size > 0
        ]
        request, run = this_run(state.get("messages") or [])
        named = _NAMED.search(request.text if request else "")
        found = []
        for pattern in skill.outputs:
            if any(_matches(p, (pattern,)) for p in made):
                continue
            # "a skill named csv-summary" and skills/*/SKILL.md: the file is skills/csv-summary/SKILL.md
            where = (
                f"{OUTPUTS}/{pattern.replace('*', named.group(1), 1)}" if named and pattern.count("*") == 1 else None
            )
            found.append(
                Finding(
                    "skill.output_missing",
                    {"skill": skill.name, "pattern": pattern, "where": where},
                    ("write_file",),
                    WRITE_IF_ALONE,
                )
            )
        delivered = [p for p in made if _matches(p, skill.outputs)]
        checked = skill_check_not_run(skill, f"{OUTPUTS}/{delivered[-1]}", run) if delivered and not found else None
        return [checked] if checked is not None else found

    def _verify(self, state: Any) -> list[Finding]:
        """The verifier model's findings (none without a verifier)."""
        return verify(self.verifier, state.get("messages") or []) if self.verifier is not None else []

    @hook_config(can_jump_to=["model"])
    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """When the model stops: check, and send it back with what is missing."""
        used = int(state.get("completion_checks") or 0)
        if used >= self.rounds:
            # out of rounds: what the rules still find is kept, for a caller that can retry (a
            # sub-agent's attempt is then "rejected", see herdsman.subagents.executor)
            left = self.problems(state) if _is_final(state) else []
            if not left:
                return None
            update: dict[str, Any] = {"completion_unresolved": [f.to_dict(render(f)) for f in left]}
            if any(f.rule in NO_ANSWER for f in left):  # no answer at all: an honest "could not" ends the run
                update["messages"] = [
                    *_echo_marked(state, left),
                    could_not_message(left, turn_language(state["messages"])),
                ]
            elif unseen := [
                u for f in left if f.rule == "source.unseen" and not f.evidence.get("path") for u in f.evidence["urls"]
            ]:
                reply = state["messages"][-1]  # links nobody showed are taken out of the answer, marked
                update["messages"] = [reply.model_copy(update={"content": strip_unseen(reply.text, unseen)})]
            return update
        found = self.problems(state)
        review = False
        if not found:
            found = self._verify(state) if _is_final(state) else []
            review = True
        if not found:
            return None
        log.info("completion_check", round=used + 1, rules=[f.rule for f in found])
        call, spent = None, set()
        if not review:
            _, run = this_run(state.get("messages") or [])
            spent = spent_ways(run, found)
            call = self._harness_call(found, spent, run, state)
            if call is not None:
                ran = call.additional_kwargs[RAN_SHOWN_CODE]
                found = [replace(f, evidence={**f.evidence, "ran": True}) if f.rule == ran else f for f in found]
        data: dict[str, Any] = {FINDINGS_KEY: [f.to_dict(render(f)) for f in found]}
        if (
            not review and call is None and not all(f.priority == ANSWER for f in found)
        ):  # an answer to rewrite needs no tool
            data["force_tools"] = next_tools(found, spent)
        note = HumanMessage(content=note_text(found, review), name=HARNESS_NAME, additional_kwargs=data)
        marked = _echo_marked(state, found)
        if call is not None:  # the harness's bash call goes to the tools node, then the model
            update = {"messages": [*marked, note, call], "completion_checks": used + 1}
            if self.max_tool_calls:  # the limit's hook ran before this one: count the call here
                counts = dict(state.get("run_tool_call_count") or {})
                counts[_ALL_TOOLS] = counts.get(_ALL_TOOLS, 0) + 1
                update["run_tool_call_count"] = counts
            return update
        return {"messages": [*marked, note], "completion_checks": used + 1, "jump_to": "model"}

    def _harness_call(self, found: Sequence[Finding], spent: Any, run: Sequence[Any], state: Any) -> AIMessage | None:
        """The call the harness makes for the model when the finding that decides the way out is
        code the reply showed unrun, or a query the note proposes (bash), or a file that does not
        parse while the reply shows its code, or the one file asked for that is missing while the
        answer is a value a tool printed (write_file), and the harness may make it
        (:mod:`~herdsman.middleware.completion.shown_code`); else None. Never what the run itself may not
        do: a tool outside a custom agent's or the active skill's tools, a call past the run's
        tool-call limit."""
        first = deciding(found, spent)
        reply = run[-1] if run and isinstance(run[-1], AIMessage) else None
        if not self.run_shown_code or first is None or reply is None:
            return None
        if first.rule == "script.does_not_parse":
            code = shown_file(reply.text, str(first.evidence.get("path", "")), run)
            if code is None or not self._may_use(state, "write_file"):
                return None
            return harness_call(first.rule, "write_file", {"path": first.evidence["path"], "content": code})
        if first.rule in ("answer.offer", "output.printed_template"):  # the value stated or printed, into the file
            if not self._may_use(state, "write_file"):
                return None
            return harness_call(
                first.rule, "write_file", {"path": first.evidence["path"], "content": first.evidence["value"] + "\n"}
            )
        if first.rule == "search.found_nothing":  # the search the note proposes, read-only, for the model
            args = {k: v for k, v in dict(first.evidence.get("grep") or {}).items() if v}
            return harness_call(first.rule, "grep", args) if args and self._may_use(state, "grep") else None
        if not self._may_use(state, "bash"):
            return None
        if first.rule == "code.shown_not_run":
            command = shown_command(reply.text, run)
        else:
            command = proposed_command(first.rule, first.evidence, run)
        return harness_call(first.rule, "bash", {"command": command}) if command else None

    def _may_use(self, state: Any, tool: str) -> bool:
        """Whether this run may make one more ``tool`` call: the agent has the tool, the run's
        custom agent and active skill allow it, and the run's tool-call limit is not reached."""
        if tool not in self.tool_names or not tool_allowed(run_settings(), tool):
            return False
        name, _ = active_skill(state, state.get("messages") or [], self.skills)
        skill = self.skills.get(name) if name else None
        if skill is not None and skill.allowed_tools is not None and tool not in skill.allowed_tools:
            return False
        spent = (state.get("run_tool_call_count") or {}).get(_ALL_TOOLS, 0)
        return not self.max_tool_calls or spent < self.max_tool_calls

    def rewrite(self, request: ModelRequest) -> ModelRequest:
        """After a rules note, the next calls must use the tools its plan names, in order
        (``tool_choice``; "any" for some tool): a small model told it answered without looking
        otherwise apologizes instead of looking, and after a forced read it writes prose again."""
        messages = request.messages
        note_at = next((i for i in range(len(messages) - 1, -1, -1) if is_harness(messages[i])), None)
        if note_at is None or "force_tools" not in messages[note_at].additional_kwargs or not request.tools:
            return request  # not a rules note (the verifier's leaves the choice free)
        after = messages[note_at + 1 :]
        if any(isinstance(m, AIMessage) and not m.tool_calls for m in after):
            return request  # the model answered since: the plan is over
        plan = messages[note_at].additional_kwargs.get("force_tools") or ["any"]
        step = sum(isinstance(m, AIMessage) for m in after)
        if step >= len(plan):
            return request
        wanted = plan[step]
        return request.override(tool_choice=wanted if wanted in tool_names(request.tools) else "any")

    @hook_config(can_jump_to=["model"])
    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Async twin of :meth:`after_model` (files and the verifier in a worker thread)."""
        return await asyncio.to_thread(self.after_model, state, runtime)

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Async twin of :meth:`before_agent`."""
        return await asyncio.to_thread(self.before_agent, state, runtime)
