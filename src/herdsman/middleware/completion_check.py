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
of doing it. The rules, in order:

* the reply holds a tool call written as text (it was not run), or a call to a tool that does
  not exist;
* the reply is a refusal, imitates a tool result (``<tool_response>``), or has placeholders
  (``<total_amount>``) where values belong;
* a file the request names to be made (a request with a verb such as save, write, create) did
  not exist when the run began and still does not exist, or is empty;
* a folder under outputs the request asks for holds no file;
* the reply names a path under ``/mnt/user-data`` that does not exist;
* the answer to a question states a number no tool result shows, or a file the run wrote holds
  nothing but such numbers; the answer to "how many" (or "what is the total") states none;
* a file the request asks to fix or change (it existed when the run began) was not changed (by
  content), or a script was changed and not run since;
* the last tool call failed (an error, or a command's non-zero exit code);
* no tool was used at all although the request is about files (or files were just uploaded);
* and when any of these holds, code the reply shows (a fenced Python or shell block: "here is
  the corrected script, save it and run it") is named: write it into the file, or run it.

Each round costs one more model call (and what the agent then does); the thread state keeps
``completion_checks``, the rounds used by the last run, so a benchmark can count them, and
``completion_unresolved``, what the rules still found when the rounds ran out (a sub-agent whose
final reply leaves something there is retried, with its files rolled back, when retries are set).
"""

from __future__ import annotations

import asyncio
import fnmatch
import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

import structlog
from langchain.agents.middleware import AgentState, ModelRequest, hook_config
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from typing_extensions import NotRequired

from herdsman.middleware.answer_nudge import is_question
from herdsman.middleware.completion_files import (
    SKILL_OUTPUT,
    cut_lines, double_extension, not_just_value, not_sorted, printed_not_saved, rows_short, run_and_save, unbacked_claim,
    unset_value,
)
from herdsman.middleware.completion_plan import next_tools
from herdsman.middleware.completion_rules import (
    ANSWER_OFFER, CHANGE_VERBS, CODE_NOT_RUN, CODE_NOT_WRITTEN, COUNT_QUESTION, FENCE_SUFFIX, FOLDER_EMPTY, NUMBER,
    SOURCE_SUFFIXES, change_targets, count_command, failed, failure_detail, fenced_code, guessed_numbers, is_shown, is_value,
    json_in,
    made_up_figures,
    numbers_in, one_liner_tip, output_folders, shown_numbers, text_tool_call, uncompared, unknown_tools,
    unsupported_numbers, untested_change,
)
from herdsman.middleware.completion_search import count_line, fruitless_search, unsearched_term
from herdsman.middleware.rewrite import RequestRewriteMiddleware
from herdsman.middleware.turn import (
    HARNESS_NAME, about_files, holds_nothing, is_harness, named_files, run_sandbox, this_run, tool_names,
)
from herdsman.sandbox.base import OUTPUTS, HostBackedSandbox, SandboxProvider, USER_DATA_ROOT
from herdsman.skills.activation import active_skill
from herdsman.skills.model import Skill
from herdsman.sandbox.paths import normalize_virtual

log = structlog.get_logger(__name__)

PREFIX = "[harness check]"
VERIFIER_PREFIX = "[harness review]"
_VIRTUAL = re.compile(r"/mnt/user-data/[\w./-]*[\w]")
_NAMED = re.compile(r"\bnamed\s+[`'\"]?([a-z0-9][a-z0-9-]*)", re.IGNORECASE)
_SAMPLE_SUFFIXES = (".txt", ".csv", ".json", ".log", ".md")
_MAKE_VERBS = re.compile(
    r"\b(save|saves|saved|write|writes|create|creates|generate|export|produce|make|store|put|output|"
    r"convert|rename|move|copy|build|draw|plot|render|dump|append|add|split|merge|extract|compress|archive)\b",
    re.IGNORECASE,
)
_REFUSAL = re.compile(
    r"(I(?:'m| am) sorry,? but I|I can(?:'|no)t (?:assist|help) with|I(?:'m| am) (?:unable|not able) to "
    r"(?:assist|help|do|complete|fulfill)|I cannot (?:fulfill|complete|do) (?:this|that|your)|As an AI\b)",
    re.IGNORECASE,
)
_PLACEHOLDER = re.compile(r"<(?:[a-z]+_)+[a-z]+>|<(?:the |your |number of |total |insert )[a-z .]+>", re.IGNORECASE)
_ERROR_REPLIES = ("Error: the model call failed", "The model's reply could not be used")


class CompletionState(AgentState):
    """``completion_checks``: rounds used in the current run; ``preexisting``: files the request
    named that existed when the run began (``preexisting_stat``: a fingerprint of the content of
    the code and config files among them, see :meth:`FileLookup.fingerprint_of`)."""

    completion_checks: NotRequired[int]
    completion_unresolved: NotRequired[list[str]]
    preexisting: NotRequired[list[str]]
    preexisting_stat: NotRequired[dict[str, Any]]


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

    def size_of(self, name: str) -> int | None:
        """The size of the file ``name`` names (largest match for a bare or relative name), or None."""
        if name.startswith("/"):
            try:
                st = self.sandbox.files.stat(normalize_virtual(name))
            except Exception:  # noqa: BLE001 - a bad path is a missing file here
                return None
            return st.st_size if st is not None else None
        tail = "/" + name.lstrip("./")
        sizes = [size for path, (size, _) in self.entries().items() if path.endswith(tail)]
        return max(sizes) if sizes else None

    def _find(self, name: str) -> str | None:
        """The virtual path of the first file ``name`` names (a full path, or a relative tail)."""
        path = normalize_virtual(name) if name.startswith("/") else None
        tail = "/" + name.lstrip("./")
        return next((v for v in self.entries() if v == path or (path is None and v.endswith(tail))), None)

    def text_of(self, name: str) -> str | None:
        """The text of the (small) file ``name`` names, or None when missing or unreadable."""
        vpath = self._find(name)
        if vpath is None or self.entries()[vpath][0] > MAX_HASHED_BYTES:
            return None
        try:
            return self.sandbox.read_text(vpath)
        except Exception:  # noqa: BLE001 - unreadable (binary): no text
            return None

    def holds_nothing(self, name: str) -> bool:
        """Whether a (small) file holds only an empty value: whitespace, [], {}, "" or null (from
        the benchmark: a sub-agent asked for a JSON list of names wrote [])."""
        vpath = self._find(name)
        try:
            return vpath is not None and holds_nothing(self.sandbox.read_text(vpath))
        except Exception:  # noqa: BLE001 - unreadable: not known to be empty
            return False

    def fingerprint_of(self, name: str) -> str | None:
        """What the file ``name`` names (first match) holds: a hash of its content when it is
        small, else its size and mtime; None when there is no such file. By content, so that
        writing a file back unchanged does not count as changing it (from the benchmark: the
        model "fixed" stats.py by writing back what it had read, without its final newline)."""
        vpath = self._find(name)
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
    ) -> None:
        """``provider``: the thread's files; ``rounds``: checks per run; ``verifier``: optional
        judge; ``tool_names``: the agent's tools (to spot a tool call written as text);
        ``skills``: the usable skills, whose declared ``outputs`` are checked while one is active."""
        super().__init__()
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

    def problems(self, state: Any) -> list[str]:
        """What the final reply misses, by the rules (empty: done)."""
        request, run = this_run(state.get("messages") or [])
        reply = run[-1] if run and isinstance(run[-1], AIMessage) else None
        if request is None or reply is None or reply.tool_calls:
            return []
        text = reply.text
        if text.startswith(_ERROR_REPLIES):
            return []
        found: list[str] = []
        if text_tool_call(text, self.tool_names):
            found.append("Your reply contains a tool call written as text, so it was NOT run. Call the tool properly.")
        unknown = unknown_tools(text, self.tool_names) if self.tool_names else []
        if unknown:
            found.append(
                f"There is no tool named {', '.join(unknown)}. Use your tools ({', '.join(sorted(self.tool_names)[:12])}); "
                "bash runs any shell command (cp, mv, python3...)."
            )
        if "<tool_response>" in text:
            found.append(
                "Your reply imitates a tool result (<tool_response>); only a tool call gives one. Call the tool, "
                "then answer from what it returns."
            )
        holes = [h for h in _PLACEHOLDER.findall(text) if h.lower() != "<tool_response>"]
        if holes:
            found.append(
                f"Your answer has placeholders ({', '.join(dict.fromkeys(holes[:3]))}) instead of values. "
                "Compute the values with your tools and give them."
            )
        if _REFUSAL.search(text):
            found.append(
                "You refused, but this is a normal task in your own sandbox and your tools can do it. "
                "Continue the work step by step."
            )
        tool_results = [m for m in run if isinstance(m, ToolMessage)]
        lookup = self._lookup()
        if lookup is not None:
            shown = numbers_in(request.text).union(*(shown_numbers(r) for r in tool_results))
            found += self._file_problems(state, request.text, text, lookup, shown, run)
        told = "\n".join(m.text for m in run if is_harness(m))
        if tool_results and failed(tool_results[-1]):
            failure = (
                f"Your last tool call ({tool_results[-1].name}) failed: {failure_detail(tool_results[-1])}. Fix the cause and try "
                "again, or try another way; if it truly cannot be done, say why."
            )
            if failure not in told:  # once: the answer after it may be the explanation
                found.append(failure + one_liner_tip(run, tool_results[-1]))
        asked = is_question(request.text) or NUMBER.fullmatch(text.strip()) is not None  # a question, or a bare number
        unsupported = unsupported_numbers(request.text, text, tool_results) if tool_results and asked else []
        if unsupported:
            counted = count_line(tool_results)
            found.append(
                f"Your answer states {', '.join(unsupported[:3])}, which no tool result shows. "
                + (f"Your {counted[0]} call said {counted[1]}: if that counts what the request asks about, the number is "
                   f"{NUMBER.search(counted[1]).group(0)}; use it, in the answer and in any file the request asks for." if counted else
                   f"Compute it with a tool (for example {count_command(request.text) or 'python3'}) and answer with the value "
                   "the tool prints.")
            )
        again = fruitless_search(request.text, run) or unsearched_term(request.text, run) or uncompared(request.text, run)
        if again:
            found.append(again)
        delivers_file = bool(_MAKE_VERBS.search(request.text) and named_files(request.text))
        if COUNT_QUESTION.search(request.text) and not delivers_file and not numbers_in(text):
            found.append(
                "The question asks for a number, and your answer has none. Compute it with a tool and answer with the "
                "number it prints."
            )
        for path, figures in made_up_figures(run, request.text):
            found.append(
                f"{path} states {figures}, which no tool result shows. Compute the figures with a tool (python3) "
                "first, then write them as the tool prints them."
            )
        for path, number in guessed_numbers(run, request.text):
            found.append(
                f"You wrote {number} to {path}, but no tool result shows that. Compute it with a tool (run "
                f"{count_command(request.text) or 'the script or command'}) and write what the tool prints."
            )
        uploaded = request.id in (state.get("upload_notices") or {})
        if not tool_results and (about_files(request.text) or uploaded):
            found.append(
                "You answered without using any tool. Look at the files with your tools (read_file, "
                "ls, grep, bash) and answer from what they show."
            )
        cut = cut_lines(run)
        if cut:
            found.append(cut)
        claim = unbacked_claim(text, run) if not found else None  # alone: other notes say what to write
        if claim:
            found.append(claim)
        code = fenced_code(text) if found else []
        problem = self._code_problem(found, code) if code else None
        if problem:
            found.append(problem)
        # a value to copy goes last, alone on the note's last line: a small model copied the
        # whole sentence around it into the file ("book07.txt: if that is what belongs in ...")
        return sorted(found, key=lambda p: p.startswith(ANSWER_OFFER))

    @staticmethod
    def _code_problem(found: Sequence[str], code: Sequence[tuple[str, str]]) -> str | None:
        """What to do with the code a reply shows instead of using it (a small model's habit:
        "here is the corrected script, save it and run it"); for a file to fix, only code in its
        language counts (a shell command shown for a Python fix is not its new text)."""
        unchanged = next((p for p in found if "but it was not changed" in p), None)
        if unchanged:
            target = unchanged.removeprefix("The request asks to change ").split(", but")[0]
            suffixes = {FENCE_SUFFIX.get(lang[:2]) for lang, _ in code}
            if not any(name.endswith(tuple(s for s in suffixes if s)) for name in target.split(" or ")):
                return None
            return f"{CODE_NOT_WRITTEN} {target} is unchanged: write that code into it with write_file (the whole new text), then run it."
        if any(lang.startswith(("py",)) for lang, _ in code):
            return (f"{CODE_NOT_RUN} Run it with bash as python3 - <<'EOF', the code with one statement per line, "
                    "then EOF; make it write any file the request asks for.")
        return f"{CODE_NOT_RUN} Run those commands with bash."

    def _file_problems(
        self, state: Any, request: str, reply: str, lookup: FileLookup, shown: set[str], run: Sequence[Any] = ()
    ) -> list[str]:
        """The rules on files; ``shown``: the numbers the request and the run's tool results show."""
        found: list[str] = []
        before = state.get("preexisting_stat") or {}
        preexisting = set(state.get("preexisting") or [])
        if before and CHANGE_VERBS.search(request):
            targets = change_targets(request, list(before))
            if all(lookup.fingerprint_of(name) == before[name] for name in targets):
                names = " or ".join(targets)
                found.append(f"The request asks to change {names}, but it was not changed. Make the change with your tools.")
            else:
                samples = [p.rsplit("/", 1)[-1] for p in lookup.entries() if p.endswith(_SAMPLE_SUFFIXES) and "/workspace/" in p]
                found += untested_change(request, targets, run, samples)
                found += [note for name in targets if (note := unset_value(request, name, lookup.text_of(name) or ""))]
        if _MAKE_VERBS.search(request):
            empty: list[str] = []
            for name in named_files(request):
                if name in preexisting:
                    continue
                size = lookup.size_of(name)
                if size is None:
                    found.append(f"The request asks for {name}, which does not exist yet. Create it with your tools.")
                    empty.append(name)
                elif size == 0 or (size <= 8 and lookup.holds_nothing(name)):
                    found.append(f"{name} is empty. Write its content.")
                    empty.append(name)
                else:  # read once for the rules on what it holds
                    text = lookup.text_of(name) or ""
                    held = (rows_short(request, name, text, run)
                            or (not_just_value(request, name, text) if size <= 400 else None)
                            or not_sorted(request, name, text))
                    if held:
                        found.append(held)
            for folder in output_folders(request):
                if not any(path.startswith(folder + "/") for path in lookup.entries()):
                    found.append(f"{FOLDER_EMPTY} {folder}, which has none yet. Write them there with your tools.")
            value = reply.strip()
            if len(empty) == 1 and empty[0].endswith(".json"):
                value = json_in(reply) or value  # the JSON the answer holds (it printed the totals, then wrote {})
            offered = is_value(value) or value != reply.strip()
            if len(empty) == 1 and offered and all(is_shown(n, shown) for n in numbers_in(value)):
                # "Write just the file name to answer.txt": the model answered /book07.txt, then
                # wrote an empty file; a value to copy is easier than a task to redo (but not a
                # number no tool showed: given "[7 matches]", it answered 1)
                found.append(f"{ANSWER_OFFER} the line below; if it is what belongs in {empty[0]}, write just that line there with write_file:\n{value}")
            elif (printed := printed_not_saved(empty, run, request)) is not None:
                found.append(printed)
            elif (script := run_and_save(request, empty, [n for n in named_files(request) if n.endswith((".py", ".sh", ".js"))
                                                         and lookup.size_of(n)])) is not None:
                found.append(script)
        found += self._skill_outputs(state, lookup)
        doubled = double_extension(request, list(lookup.entries()))
        if doubled:
            found.append(doubled)
        prose = re.sub(r"```.*?(?:```|\Z)", "", reply, flags=re.DOTALL)  # paths in a shown command are not claims
        for path in dict.fromkeys(_VIRTUAL.findall(prose)):
            if path.rstrip("/") in (USER_DATA_ROOT, f"{USER_DATA_ROOT}/workspace", f"{USER_DATA_ROOT}/outputs") \
                    or path.startswith(f"{USER_DATA_ROOT}/uploads"):
                continue  # an upload is the user's to give, never the agent's to make up (it touched one)
            if "." in path.rsplit("/", 1)[-1] and lookup.size_of(path) is None:
                found.append(f"Your answer mentions {path}, but there is no such file. Create it, or correct the answer.")
        return found

    def _skill_outputs(self, state: Any, lookup: FileLookup) -> list[str]:
        """The active skill's declared outputs with no (non-empty) file in outputs yet (from the
        benchmark: with the report-writing skill active, the model rendered a report it had not
        written, touched the file and stopped)."""
        name, _ = active_skill(state, state.get("messages") or [], self.skills)
        skill = self.skills.get(name) if name else None
        if skill is None or not skill.outputs:
            return []
        made = [path.removeprefix(OUTPUTS + "/") for path, (size, _) in lookup.entries().items()
                if path.startswith(OUTPUTS + "/") and size > 0]
        request, _ = this_run(state.get("messages") or [])
        named = _NAMED.search(request.text if request else "")
        found = []
        for pattern in skill.outputs:
            if any(fnmatch.fnmatchcase(p, pattern) or fnmatch.fnmatchcase(p, pattern.removeprefix("**/")) for p in made):
                continue
            # "a skill named csv-summary" and skills/*/SKILL.md: the file is skills/csv-summary/SKILL.md
            where = f"{OUTPUTS}/{pattern.replace('*', named.group(1), 1)}" if named and pattern.count("*") == 1 else None
            found.append(
                f"{SKILL_OUTPUT} {skill.name} skill delivers {pattern} in {OUTPUTS}, and there is none yet. Do its steps: "
                + (f"write {where} with write_file." if where else "write it with write_file (or the skill's script).")
            )
        return found

    def _verify(self, state: Any) -> list[str]:
        """The verifier model's judgement: one short call; MISSING: ... becomes a problem."""
        if self.verifier is None:
            return []
        request, run = this_run(state.get("messages") or [])
        steps = []
        for m in run[:-1]:
            if isinstance(m, AIMessage):
                steps += [f"called {c['name']}({str(c['args'])[:200]})" for c in m.tool_calls]
            elif isinstance(m, ToolMessage):
                steps.append(f"result: {m.text[:300]}")
        prompt = [
            SystemMessage(content=(
                "You check an agent's work. Given the user's request, the agent's steps and its final "
                "answer, reply with DONE if the request was fully carried out, otherwise with "
                "MISSING: and one sentence saying what is still to do."
            )),
            HumanMessage(content=(
                f"Request:\n{request.text if request else ''}\n\nSteps:\n" + "\n".join(steps[-20:])
                + f"\n\nFinal answer:\n{run[-1].text if run else ''}"
            )),
        ]
        try:
            verdict = self.verifier.invoke(prompt).text.strip()
        except Exception as exc:  # noqa: BLE001 - a failing verifier must not fail the run
            log.warning("verifier_failed", error=str(exc))
            return []
        if verdict.upper().startswith("MISSING"):
            return [verdict.split(":", 1)[-1].strip() or "The request is not fully carried out."]
        return []

    @hook_config(can_jump_to=["model"])
    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """When the model stops: check, and send it back with what is missing."""
        used = int(state.get("completion_checks") or 0)
        if used >= self.rounds:
            # out of rounds: what the rules still find is kept, for a caller that can retry (a
            # sub-agent's attempt is then "rejected", see herdsman.subagents.executor)
            left = self.problems(state) if self._is_final(state) else []
            return {"completion_unresolved": left} if left else None
        found = self.problems(state)
        prefix = PREFIX
        if not found:
            found = self._verify(state) if self._is_final(state) else []
            prefix = VERIFIER_PREFIX
        if not found:
            return None
        log.info("completion_check", round=used + 1, problems=found)
        note = f"{prefix} Not done yet:\n" + "\n".join(f"- {p}" for p in found)
        return {
            "messages": [HumanMessage(content=note, name=HARNESS_NAME, additional_kwargs={"force_tools": next_tools(found, state)})],
            "completion_checks": used + 1,
            "jump_to": "model",
        }

    @staticmethod
    def _is_final(state: Any) -> bool:
        messages = state.get("messages") or []
        return bool(messages) and isinstance(messages[-1], AIMessage) and not messages[-1].tool_calls

    def rewrite(self, request: ModelRequest) -> ModelRequest:
        """After a rules note, the next calls must use the tools its plan names, in order
        (``tool_choice``; "any" for some tool): a small model told it answered without looking
        otherwise apologizes instead of looking, and after a forced read it writes prose again."""
        messages = request.messages
        note_at = next((i for i in range(len(messages) - 1, -1, -1) if is_harness(messages[i])), None)
        if note_at is None or not messages[note_at].text.startswith(PREFIX) or not request.tools:
            return request
        after = messages[note_at + 1:]
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
