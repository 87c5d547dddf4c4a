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
  asks for lacks the fixed words of a line the request quotes with placeholders ('Total: <sum>')
  (these rules read the thread's files: :mod:`~herdsman.middleware.completion.delivery`, through a
  :class:`~herdsman.middleware.completion.lookup.FileLookup`);
* the reply names a path under ``/mnt/user-data`` that does not exist;
* the answer to a question states a number no tool result shows, or a file the run wrote holds
  nothing but such numbers; the answer to "how many" (or "what is the total") states none, or
  only numbers seen in what was read, none a command computed (a count made by eye);
* a file the request named (it existed when the run began) was written back unchanged (by
  content), or one it asks to fix or change (in English or Chinese) was not changed; a script it named was
  changed and not run since;
* the last tool call failed (an error, or a command's non-zero exit code); when it is a Python
  error raised in a file of the user's, that file is named (:mod:`~herdsman.middleware.completion.raised`);
* a URL in the answer, or in a text file the run wrote, that no request, upload or tool result
  shows (:mod:`~herdsman.middleware.completion.sources`): a source must be real; one still in the
  answer when the rounds run out is taken out of it, marked;
* no tool was used at all although the request names a file (or files were just uploaded, or,
  in English, it talks of files);
* and when any of these holds, code the reply shows (a fenced Python or shell block: "here is
  the corrected script, save it and run it") is named: write it into the file, or run it.

Each round costs one more model call (and what the agent then does); a fix the harness makes
itself, certain of it (:data:`FIX_RULES`: a missing standard import), is made even when the rounds
ran out, in one more round at most. The thread state keeps
``completion_checks``, the rounds used by the last run, so a benchmark can count them, and
``completion_unresolved``, the findings still there when the rounds ran out (a sub-agent whose
final reply leaves something there is retried, with its files rolled back, when retries are set).
When the rounds ran out on a reply that is no answer at all (a call written as text, a copy of a
note), an honest "could not" built from those findings ends the run after it
(:mod:`~herdsman.middleware.completion.could_not`): a note of the harness never becomes the final answer.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
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
from herdsman.middleware.completion.delivery import file_problems
from herdsman.middleware.completion.files import cut_lines, unbacked_claim
from herdsman.middleware.completion.findings import (
    ANSWER,
    COMMAND,
    FINDINGS_KEY,
    FREE,
    REWRITE,
    Finding,
    applies,
    ignored_note,
    noted,
)
from herdsman.middleware.completion.findings_text import note_text, render
from herdsman.middleware.completion.imports import missing_import
from herdsman.middleware.completion.intent_words import INTENT_LANGUAGES, files_topic, says, zh_question
from herdsman.middleware.completion.lookup import MAX_HASHED_BYTES, FileLookup
from herdsman.middleware.completion.note_echo import NOTE_ECHO_KEY, echoes_note, harness_notice, note_texts
from herdsman.middleware.completion.plan import deciding, next_tools, spent_ways
from herdsman.middleware.completion.raised import script_raised
from herdsman.middleware.completion.rules import (
    FENCE_SUFFIX,
    NUMBER,
    SOURCE_SUFFIXES,
    count_command,
    denied_but_shown,
    failed,
    failure_detail,
    fenced_code,
    guessed_numbers,
    local_module_tip,
    made_up_figures,
    numbers_in,
    one_liner_tip,
    request_paths,
    uncompared,
    unsupported_names,
    unsupported_numbers,
)
from herdsman.middleware.completion.search import count_line, counted_by_eye, fruitless_search, unsearched_term
from herdsman.middleware.completion.shown_code import (
    RAN_SHOWN_CODE,
    harness_call,
    harness_calls,
    proposed_command,
    shown_command,
    shown_file,
    shown_tool_call,
)
from herdsman.middleware.completion.shown_files import files_evidence, shown_files
from herdsman.middleware.completion.sources import strip_unseen, unseen_sources
from herdsman.middleware.completion.verifier import verify
from herdsman.middleware.reply_language import wrong_language
from herdsman.middleware.rewrite import RequestRewriteMiddleware
from herdsman.sandbox.base import UPLOADS, SandboxProvider
from herdsman.skills.activation import active_skill
from herdsman.skills.model import Skill
from herdsman.turns.text_calls import text_tool_call, unknown_tools
from herdsman.turns.turn import (
    HARNESS_NAME,
    is_harness,
    named_files,
    run_sandbox,
    this_run,
    tool_names,
    turn_language,
)

log = get_logger(__name__)

FIX_RULES = frozenset({"script.missing_import", "skill.not_served", "skill.output_misnamed"})
"""Findings whose way out is a command the harness makes itself, certain of it (not a guess of the
model's): made even when the rounds ran out, in at most :data:`FIX_ROUNDS` more. A script that failed
on a missing standard import as the rounds ran out was otherwise left broken, its fix one call away;
a page the web page builder made and checked was left unserved, the Preview tab one call away.
Two rounds: a page written to a name without an extension is moved, then served (two certain
calls; the live-preview acceptance run had the first and no round left for the second)."""
FIX_ROUNDS = 2

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


class CompletionState(AgentState):
    """``completion_checks``: rounds used in the current run; ``completion_unresolved``: the
    findings (dicts, see :meth:`~herdsman.middleware.completion.findings.Finding.to_dict`) still there when
    the rounds ran out; ``preexisting``: files the request named that existed when the run began
    (``preexisting_stat``: a fingerprint of the content of the code and config files among them,
    see :meth:`~herdsman.middleware.completion.lookup.FileLookup.fingerprint_of`; both private:
    checkpointed, never shown to clients)."""

    completion_checks: NotRequired[int]
    completion_unresolved: NotRequired[list[dict[str, Any]]]
    preexisting: NotRequired[Annotated[list[str], PrivateStateAttr]]
    preexisting_stat: NotRequired[Annotated[dict[str, Any], PrivateStateAttr]]


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
            found += file_problems(state, request.text, text, lookup, run, language, on, self.skills)
        if tool_results and failed(tool_results[-1]):
            last = tool_results[-1]
            unimported = missing_import(run, last) if on("script.missing_import") else None
            if unimported is not None and not noted(run, "script.missing_import", path=unimported.evidence["path"]):
                found.append(unimported)
            raised = script_raised(run, last) if unimported is None and on("script.raises") else None
            if raised is not None and not noted(run, "script.raises", **raised.evidence):
                found.append(raised)  # which file to fix: the file rewrite page writes it (file_rewrite)
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
        shown = {  # new files only: a name the workspace has is that file (code.shown_not_written's)
            p: t
            for p, t in shown_files(text, run).items()
            if lookup is None or (lookup.size_of(p) is None and lookup.size_of(p.rsplit("/", 1)[-1]) is None)
        }
        if shown and on("code.files_not_written"):  # first: writing them may be all the run lacks
            found.insert(0, Finding("code.files_not_written", files_evidence(shown), ("write_file",), REWRITE))
        claim = unbacked_claim(text, run) if not found and on("claim.unbacked", language_of(text)) else None
        if claim:  # alone: other findings say what to write
            found.append(claim)
        code = fenced_code(text) if found and not shown else []  # shown files: their commands come after
        problem = code_problem(found, code) if code else None
        if problem:
            found.append(problem)
        if len(found) > 1:  # the language is fixed last, alone: asked with other things, a small
            # model rewrote its answer in the language and dropped the rest (answer_translation)
            found = [f for f in found if f.rule != "reply.wrong_language"]
        # a value to copy goes last, alone on the note's last line: a small model copied the
        # whole sentence around it into the file
        return sorted(found, key=lambda f: f.rule == "answer.offer")

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
                return self._ignored(state)
            if used < self.rounds + FIX_ROUNDS and (fixed := self._mechanical_fix(left, state, used)) is not None:
                return fixed
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
            return self._ignored(state)
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
            return self._with_call([*marked, note, call], used, state)
        return {"messages": [*marked, note], "completion_checks": used + 1, "jump_to": "model"}

    def _with_call(self, messages: list[Any], used: int, state: Any) -> dict[str, Any]:
        """The update that sends ``messages`` (a note, then the harness's call) as round ``used + 1``,
        the call counted against the run's tool-call limit."""
        update: dict[str, Any] = {"messages": messages, "completion_checks": used + 1}
        if self.max_tool_calls:  # the limit's hook ran before this one: count the call here
            counts = dict(state.get("run_tool_call_count") or {})
            counts[_ALL_TOOLS] = counts.get(_ALL_TOOLS, 0) + 1
            update["run_tool_call_count"] = counts
        return update

    def _ignored(self, state: Any) -> dict[str, Any] | None:
        """When the run ends quiet but the model ignored the last note (said the same again and
        ran nothing, :func:`~herdsman.middleware.completion.findings.ignored_note`: a rule that
        speaks once stays quiet then), that note's findings as ``completion_unresolved``, so
        every reader of the state (the web UI's outcome line, ``herdsman run``, the channels)
        shows the run as not delivered; else None."""
        if not _is_final(state):
            return None
        left = ignored_note(this_run(state.get("messages") or [])[1])
        return {"completion_unresolved": left} if left else None

    def _mechanical_fix(self, left: Sequence[Finding], state: Any, used: int) -> dict[str, Any] | None:
        """Past the rounds, the harness's own fix of :data:`FIX_RULES` among ``left`` (a command it
        runs, not a guess of the model: the import a traceback shows missing added and the command
        run again), as one more round; None when there is none or the harness may not make it."""
        fixes = [f for f in left if f.rule in FIX_RULES]
        _, run = this_run(state.get("messages") or [])
        call = self._harness_call(fixes, spent_ways(run, fixes), run, state) if fixes else None
        if call is None:
            return None
        log.info("completion_check", round=used + 1, rules=[f.rule for f in fixes], past_rounds=True)
        data = {FINDINGS_KEY: [f.to_dict(render(f)) for f in fixes]}
        note = HumanMessage(content=note_text(fixes, False), name=HARNESS_NAME, additional_kwargs=data)
        return self._with_call([note, call], used, state)

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
        if first.rule == "code.files_not_written":  # the files the reply showed, as it showed them
            files = {p: t for p, t in shown_files(reply.text, run).items() if p in first.evidence["paths"]}
            if not files or not self._may_use(state, "write_file"):
                return None
            return harness_calls(first.rule, [("write_file", {"path": p, "content": t}) for p, t in files.items()])
        if first.rule in ("answer.offer", "output.printed_template"):  # the value stated or printed, into the file
            if not self._may_use(state, "write_file"):
                return None
            return harness_call(
                first.rule, "write_file", {"path": first.evidence["path"], "content": first.evidence["value"] + "\n"}
            )
        if first.rule == "search.found_nothing":  # the search the note proposes, read-only, for the model
            args = {k: v for k, v in dict(first.evidence.get("grep") or {}).items() if v}
            return harness_call(first.rule, "grep", args) if args and self._may_use(state, "grep") else None
        if first.rule == "code.shown_not_run" and (named := shown_tool_call(reply.text, run)):
            tool, args = named  # a tool written as a shell command: the call it names
            return harness_call(first.rule, tool, args) if self._may_use(state, tool) else None
        if not self._may_use(state, "bash"):
            return None
        if first.rule == "skill.not_served":  # the skill's own server, started in the background
            return harness_call(first.rule, "bash", {"command": first.evidence["command"], "background": True})
        if first.rule == "skill.output_misnamed":  # the file moved where the skill's pattern finds it
            return harness_call(first.rule, "bash", {"command": first.evidence["command"]})
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
