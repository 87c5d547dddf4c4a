"""Program answers: a value the model could not get right is computed by a program it writes on a clean page.

Asked "how many distinct client IP addresses appear in access.log?", the embedded 1.5B model
greps for the word "client", finds nothing and answers 0; told that no tool result shows 0, it
writes a Python program that counts the lines holding "client". Asked for the bytes of the .bin
files under a folder, it runs ``du -sh`` and answers "68K" three times over. Its own earlier
attempts are in its context and it keeps to them. Asked the same question on a clean page, with
nothing but the question and how the files it names begin, the same model wrote the program that
gives the right value (the distinct addresses of the first field, in English and in Chinese; the
orders whose status is failed), in one call of about ten seconds. That is program-aided answering
(PAL, Gao et al. 2023): the model writes the computation, the interpreter does the arithmetic a
small model gets wrong.

So when a note of the completion check says the answer's *number* is not backed
(:data:`COMPUTE_RULES`: a number no tool result shows, a count made by reading, no number at all
where one was asked for), and the model is about to be asked again, this middleware asks the
run's model instead, once per run, on a clean page (:func:`brief`: no system prompt, no tools, no
conversation; the question and the beginning of each file or folder it names), for one Python
program that prints the answer. A program that parses (:func:`program_of`) becomes the model's
next step: a ``bash`` call running it, made in the model's name and marked
(:data:`~herdsman.middleware.shown_code.RAN_SHOWN_CODE` and :data:`PROGRAM_KEY`), which goes
through the tools node like any call (the tool gates, approval, the tool-call limit, the sandbox,
the file history). The model then answers from what it printed. It may not: on a dev task the program printed 8
and the model answered 11 again, the count it had made by reading. So when the program exited 0
and printed one short line (:func:`printed_value`), the answer the model gives right after it
must hold that value; one that does not is replaced by it (the model's own words are kept in
``additional_kwargs``, :data:`VALUE_KEY`): a value a program computed on a clean page outranks a
number the check already found unbacked. The completion check checks that answer as any other.
When the program call fails or gives nothing usable, the model is asked as it would have been.

Language-neutral: the trigger is the check's typed findings, and the question is passed as the
user wrote it. The files are read through the thread's sandbox, bounded (:data:`HEAD_LINES`
lines of a file, :data:`LISTED` entries of a folder).

Hand-written: no library runs a program-aided step inside an agent's loop.
"""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage

from herdsman.logs import get_logger
from herdsman.middleware.agent_profile import run_settings, tool_allowed
from herdsman.middleware.completion_rules import failed, fenced_code
from herdsman.middleware.findings import FINDINGS_KEY
from herdsman.middleware.forced_call import NO_STREAM, final_reply, replace_reply
from herdsman.middleware.shown_code import MAX_CHARS, harness_call
from herdsman.middleware.turn import USER_DATA_PREFIX, is_harness, named_files, run_sandbox, this_run, tool_names
from herdsman.middleware.value_answer import results_text
from herdsman.sandbox.base import SandboxProvider

log = get_logger(__name__)

PROGRAM_KEY = "herdsman_program_answer"
"""``additional_kwargs`` key of the AI message whose bash call runs a program the harness asked for."""
VALUE_KEY = "herdsman_program_value"
"""``additional_kwargs`` key of an answer replaced by the value the program printed: the model's own words."""
MAX_VALUE_CHARS = 80
"""A printed line longer than this is output to read, not a value to answer with."""
COMPUTE_RULES = frozenset({"number.unsupported", "count.not_computed", "number.missing"})
"""The completion check's rules that say the answer's number is not backed by a computation."""
PROMPT = (
    "Write one Python 3 program that computes the answer to the user's question and prints only the answer "
    "(the value itself, no words). Use only the standard library. Read the files at the paths the question "
    "names: below is how they begin. Apply every condition the question states. "
    "Reply with the program in one ```python block."
)
MAX_TOKENS = 512
"""The program's length limit (a short program; a small model may otherwise go on explaining it)."""
HEAD_LINES = 8
"""Lines of a named file shown in the brief (each cut at :data:`LINE_CHARS`)."""
LINE_CHARS = 200
LISTED = 30
"""Entries of a named folder shown in the brief."""
MAX_NAMED = 3
"""Named files and folders shown at most."""
EOF = "HERDSMAN_PROGRAM"
"""The heredoc marker the bash call feeds the program through."""
WORKSPACE = f"{USER_DATA_PREFIX}workspace"


def wants_program(run: Sequence[AnyMessage]) -> str | None:
    """The compute rule of the note that ends ``run``, when the model is about to be asked again
    after it and no program was asked for in this run; else None."""
    if not run or not is_harness(run[-1]):
        return None
    if any(isinstance(m, AIMessage) and m.additional_kwargs.get(PROGRAM_KEY) for m in run):
        return None  # once per run: a second program from the same page would be the same
    findings = run[-1].additional_kwargs.get(FINDINGS_KEY) or []
    return next((str(f["rule"]) for f in findings if f.get("rule") in COMPUTE_RULES), None)


def printed_value(run: Sequence[AnyMessage]) -> str | None:
    """The value the program printed, when ``run`` ends with the result of the program's call, it
    exited 0 and printed one short line; else None."""
    last = run[-1] if run else None
    if not isinstance(last, ToolMessage) or failed(last):
        return None
    ran = next((m for m in reversed(run) if isinstance(m, AIMessage) and m.tool_calls), None)
    if ran is None or not ran.additional_kwargs.get(PROGRAM_KEY) or ran.tool_calls[0]["id"] != last.tool_call_id:
        return None
    lines = [line.strip() for line in last.text.strip().splitlines() if line.strip()]
    return lines[0] if len(lines) == 1 and len(lines[0]) <= MAX_VALUE_CHARS else None


def holding(reply: AIMessage, value: str) -> AIMessage | None:
    """``reply`` as the printed ``value`` when it does not hold it (the model's words kept), or
    None when it does."""
    if value.casefold() in reply.text.casefold():
        return None
    log.info("program_value", replaced=True)
    return reply.model_copy(
        update={"content": value, "additional_kwargs": {**reply.additional_kwargs, VALUE_KEY: reply.text}}
    )


def program_of(reply: str) -> str | None:
    """The Python program a reply holds (its first Python block, or the whole reply when it is
    code), when it parses and can be fed through the heredoc; else None."""
    blocks = [code for language, code in fenced_code(reply) if language.startswith("py") or not language]
    code = (blocks[0] if blocks else reply).strip()
    if not code or len(code) > MAX_CHARS or EOF in code:
        return None
    try:
        ast.parse(code)
    except SyntaxError:
        return None
    return code


def command_of(program: str) -> str:
    """The bash command that runs ``program`` with python3."""
    return f"python3 - <<'{EOF}'\n{program}\n{EOF}"


def _full(name: str) -> str:
    """A named file as a virtual path (a bare name is taken in the workspace)."""
    return name if name.startswith("/") else f"{WORKSPACE}/{name.lstrip('./')}"


def _looks(sandbox: Any, path: str) -> str | None:
    """How the file or folder at ``path`` begins (its first lines, or its first entries), or None."""
    try:
        entries = sandbox.list_dir(path, max_depth=3)
    except Exception:  # noqa: BLE001 - not a folder (or not there): try it as a file
        entries = None
    if entries:
        shown = "\n".join(entries[:LISTED]) + ("\n..." if len(entries) > LISTED else "")
        return f"{path} holds:\n{shown}"
    try:
        text = sandbox.read_text(path)
    except Exception:  # noqa: BLE001 - missing or unreadable: nothing to show
        return None
    lines = [line[:LINE_CHARS] for line in text.splitlines()[:HEAD_LINES]]
    return f"{path} begins:\n" + "\n".join(lines)


def brief(question: str, run: Sequence[AnyMessage], sandbox: Any) -> list[AnyMessage]:
    """The clean page: the question and how the files it names begin (read now, through the
    sandbox). Without a named file that can be read, the run's last tool results stand in.
    (The model's own tool results are left out otherwise: on a dev task a grep for a guessed
    word that found nothing made the program count that word.)"""
    looks = [
        seen
        for name in named_files(question)[:MAX_NAMED]
        if sandbox is not None and (seen := _looks(sandbox, _full(name))) is not None
    ]
    files = "\n\n".join(looks) or f"Tool results:\n{results_text(run) or '(none)'}"
    return [SystemMessage(PROMPT), HumanMessage(f"Question: {question[:2000]}\n\n{files}")]


class ProgramAnswerMiddleware(AgentMiddleware):
    """Answer a value the model could not back with a program asked for on a clean page (module docstring)."""

    def __init__(self, provider: SandboxProvider | None) -> None:
        """``provider``: the thread's sandbox, whose files the brief shows."""
        super().__init__()
        self.provider = provider

    def _plan(self, request: ModelRequest) -> tuple[str, list[AnyMessage]] | None:
        """The rule that calls for a program and the brief to ask for it, or None."""
        question, run = this_run(request.messages)
        rule = wants_program(run) if question is not None else None
        if rule is None or "bash" not in tool_names(request.tools) or not tool_allowed(run_settings(), "bash"):
            return None
        try:
            sandbox = run_sandbox(self.provider)
        except Exception:  # noqa: BLE001 - no sandbox: the brief shows the tool results instead
            sandbox = None
        return rule, brief(question.text, run, sandbox)  # type: ignore[union-attr]  # question is set

    @staticmethod
    def _call(rule: str, reply: Any) -> ModelResponse | None:
        """The model's next step: the bash call that runs the program ``reply`` holds, or None."""
        program = program_of(reply.text) if isinstance(reply, AIMessage) else None
        log.info("program_answer", rule=rule, program=program is not None)
        if program is None:
            return None
        call = harness_call(rule, "bash", {"command": command_of(program)})
        call.additional_kwargs[PROGRAM_KEY] = True
        return ModelResponse(result=[call])

    @staticmethod
    def _valued(request: ModelRequest, response: Any) -> Any:
        """``response`` with its final answer made the program's value, when it answers right
        after the program and does not hold what it printed (module docstring)."""
        _, run = this_run(request.messages)
        value = printed_value(run)
        found = final_reply(response) if value is not None else None
        made = holding(found[0][found[1]], value) if found and value is not None else None
        return replace_reply(response, *found, made) if found and made is not None else response

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        """After a note that the answer's number is not backed: run a program instead of asking again."""
        plan = self._plan(request)
        if plan is None:
            return self._valued(request, handler(request))
        try:
            reply = request.model.bind(max_tokens=MAX_TOKENS).invoke(plan[1], config=NO_STREAM)
        except Exception as exc:  # noqa: BLE001 - the harness's own call never fails a run
            log.warning("program_answer_failed", error=str(exc))
            return handler(request)
        return self._call(plan[0], reply) or handler(request)

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        """Async twin of :meth:`wrap_model_call` (the files are read in a worker thread)."""
        plan = await asyncio.to_thread(self._plan, request)
        if plan is None:
            return self._valued(request, await handler(request))
        try:
            reply = await request.model.bind(max_tokens=MAX_TOKENS).ainvoke(plan[1], config=NO_STREAM)
        except Exception as exc:  # noqa: BLE001 - the harness's own call never fails a run
            log.warning("program_answer_failed", error=str(exc))
            return await handler(request)
        return self._call(plan[0], reply) or await handler(request)
