"""A clean page: when a note of the completion check would send the model back, ask it on a clean page instead.

A small model sent back by the completion check keeps to what it already wrote: its earlier
answer, its fruitless grep, the old text of the file it was to fix. Asked the same thing with
nothing but the request and the files it names (no system prompt, no tools, no conversation), the
embedded 1.5B model often gets it right: it writes the program that computes the value, or the
fixed file. This module holds what the two uses share (:class:`CleanPageMiddleware`): the trigger
(the typed findings of the note that ends the run, once per run and use, twice for a program that
failed), how the named files are
shown (bounded: :data:`HEAD_LINES` lines of a file, :data:`LISTED` entries of a folder), the call
on the clean page (never streamed, bounded in tokens; a failure leaves the model to answer as
before), and the harness-made tool call that replaces the model's next step, marked (its own
``additional_kwargs`` key, and :data:`~herdsman.middleware.completion.shown_code.RAN_SHOWN_CODE` with the
finding's rule) and run through the tools node like any call: the tool gates, human approval,
the tool-call limit, the sandbox and the file history apply.

The uses: :mod:`~herdsman.middleware.program_answer` (a value the answer states without a
computation), :mod:`~herdsman.middleware.file_rewrite` (a file the request asks to change that
was not changed, or a script that misbehaves when run) and :mod:`~herdsman.middleware.task_program`
(a file or folder the request asks for that is missing or empty). Language-neutral: the trigger is the
check's rule ids, and the request goes on the page as the user wrote it.

Hand-written: no library re-asks an agent's model outside its conversation for a tool call.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.types import Command

from herdsman import pools
from herdsman.logs import get_logger
from herdsman.middleware.agent_profile import run_settings, tool_allowed
from herdsman.middleware.completion.findings import FINDINGS_KEY
from herdsman.middleware.completion.rules import failed, tool_results
from herdsman.middleware.completion.shown_code import MAX_CHARS, harness_call
from herdsman.sandbox.base import SandboxProvider
from herdsman.sandbox.shell_words import python_heredoc
from herdsman.turns.forced_call import NO_STREAM
from herdsman.turns.turn import (
    USER_DATA_PREFIX,
    is_harness,
    named_files,
    run_sandbox,
    run_user,
    this_run,
    tool_names,
)

log = get_logger(__name__)

HEAD_LINES = 8
"""Lines of a named file shown on a page (each cut at :data:`LINE_CHARS`)."""
LINE_CHARS = 200
LISTED = 30
"""Entries of a named folder shown on a page."""
MAX_NAMED = 3
"""Named files and folders shown at most."""
WORKSPACE = f"{USER_DATA_PREFIX}workspace"
_FENCE = re.compile(r"```[ \t]*([\w+.-]*)[^\n`]*\n(.*?)```", re.DOTALL)
EOF_MARK = "HERDSMAN_PROGRAM"
"""The heredoc marker a program is fed to python3 through."""
ERROR_CHARS = 1500
"""The end of a failed program's output shown on its second page (a traceback ends with its cause)."""
RETRY = "Running it failed with the output below. Reply with the whole fixed program in one ```python block."


@dataclass
class Page:
    """What to ask on a clean page: the messages, the finding's rule that led to it, and what
    the use needs to make its call from the reply (``target``: a path; ``seen``: fingerprints of
    the files the page showed whole; ``before``: the target's text on the page; ``then``: a
    command to run after the change, in the same call)."""

    messages: list[AnyMessage]
    rule: str
    target: str | None = None
    seen: dict[str, str] = field(default_factory=dict)
    before: str | None = None
    then: str | None = None


def note_findings(run: Sequence[AnyMessage]) -> list[dict[str, Any]]:
    """The findings of the note of the completion check that ends ``run`` (none when the run does
    not end with a note: the model is not about to be sent back)."""
    if not run or not is_harness(run[-1]):
        return []
    return list(run[-1].additional_kwargs.get(FINDINGS_KEY) or [])


def found_text(run: Sequence[AnyMessage], proposals: bool = True) -> str:
    """What the note that ends ``run`` found, one finding per line (its text for the model);
    ``proposals=False``: each finding's first line only, what it found without the command it
    proposes (which may repeat the model's own wrong attempt)."""
    texts = (str(f.get("text") or f.get("rule")) for f in note_findings(run))
    return "\n".join(f"- {t if proposals else t.split(chr(10), 1)[0]}" for t in texts)


def full_path(name: str) -> str:
    """A named file as a virtual path (a bare name is taken in the workspace)."""
    return name if name.startswith("/") else f"{WORKSPACE}/{name.lstrip('./')}"


def looks(sandbox: Any, path: str, lines: int = HEAD_LINES) -> str | None:
    """How the file or folder at ``path`` begins (its first ``lines`` lines, or its first
    entries), or None when it cannot be read."""
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
    return f"{path} begins:\n" + "\n".join(line[:LINE_CHARS] for line in text.splitlines()[:lines])


def named_looks(request: str, sandbox: Any, skip: Sequence[str] = ()) -> list[str]:
    """How the files and folders the request names begin (at most :data:`MAX_NAMED`, those in
    ``skip`` left out)."""
    if sandbox is None:
        return []
    paths = [p for p in (full_path(n) for n in named_files(request)) if p not in skip]
    return [seen for p in dict.fromkeys(paths[:MAX_NAMED]) if (seen := looks(sandbox, p)) is not None]


def blocks(reply: str) -> list[tuple[str, str]]:
    """The fenced blocks of a reply, any language or none: (language, lowercased; code). A page
    asks for one block, and the 1.5B model fences a file it rewrites without a language."""
    return [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(reply) if m.group(2).strip()]


def program_of(reply: str) -> str | None:
    """The Python program a reply holds (its first Python block or block without a language, or
    the whole reply when it is code), when it parses and can be fed through the heredoc; else None."""
    found = [code for language, code in blocks(reply) if language.startswith("py") or not language]
    code = (found[0] if found else reply).strip()
    if not code or len(code) > MAX_CHARS or EOF_MARK in code:
        return None
    try:
        ast.parse(code)
    except SyntaxError:
        return None
    return code


def statements_in(code: str) -> bool:
    """Whether ``code`` parses as Python and holds a statement, not only expressions (a one-word
    reply such as "Done" parses as an expression)."""
    try:
        body = ast.parse(code).body
    except SyntaxError:
        return False
    return any(not isinstance(node, ast.Expr) for node in body)


def command_of(program: str) -> str:
    """The bash command that runs ``program`` with python3."""
    return python_heredoc(program, EOF_MARK)


def first_block(reply: str) -> str | None:
    """The first fenced block of a reply (any language or none), or None."""
    found = blocks(reply)
    return found[0][1] if found else None


class CleanPageMiddleware(AgentMiddleware):
    """Ask on a clean page instead of sending the model back (module docstring). A use names
    its rules, its marking key, its tool and token limit, and makes the page and the call."""

    RULES: ClassVar[frozenset[str]] = frozenset()
    """The completion check's rules whose note calls for this page."""
    KEY: ClassVar[str] = ""
    """``additional_kwargs`` key of the AI message whose call this use made."""
    TOOL: ClassVar[str | None] = "bash"
    """The tool of the call the use makes (the run must be allowed it); None: the use answers."""
    MAX_TOKENS: ClassVar[int] = 512

    def __init__(self, provider: SandboxProvider | None) -> None:
        """``provider``: the thread's sandbox, whose files the page shows."""
        super().__init__()
        self.provider = provider

    def page(self, question: str, run: Sequence[AnyMessage], finding: dict[str, Any], sandbox: Any) -> Page | None:
        """The page to ask on for ``finding`` (a note's finding of :attr:`RULES`), or None."""
        raise NotImplementedError

    def call_args(self, page: Page, reply: str) -> dict[str, Any] | None:
        """The arguments of the :attr:`TOOL` call made from the page's reply, or None (unusable)."""
        raise NotImplementedError

    def after(self, request: ModelRequest, response: Any) -> Any:
        """What the use does with the model's own response when no page was asked (unchanged)."""
        return response

    def pick(self, findings: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
        """The finding of a note that the page is for: the first of :attr:`RULES`, or None."""
        return next((f for f in findings if f.get("rule") in self.RULES), None)

    def marked(self, run: Sequence[AnyMessage]) -> list[AIMessage]:
        """The messages this use made in ``run`` (marked with :attr:`KEY`)."""
        return [m for m in run if isinstance(m, AIMessage) and m.additional_kwargs.get(self.KEY)]

    def again(self, run: Sequence[AnyMessage], made: Sequence[AIMessage]) -> bool:
        """Whether to ask a page once more, after the calls this use ``made`` in ``run`` (never)."""
        return False

    def follow_up(self, page: Page, run: Sequence[AnyMessage]) -> Page:
        """``page`` as asked once more after what this use made in ``run`` (unchanged)."""
        return page

    def _due(self, request: ModelRequest) -> tuple[str, list[AnyMessage], dict[str, Any]] | None:
        """The question, the run and the finding to ask a page for, when the run ends with a note
        of one of :attr:`RULES`, this use made no call yet in this run (or :meth:`again` asks for
        one more), and the run may use :attr:`TOOL`; else None. Reads no file: it runs on every
        model call, in the event loop."""
        question, run = this_run(request.messages)
        finding = self.pick(note_findings(run))
        if question is None or finding is None:
            return None
        made = self.marked(run)
        if made and not self.again(run, made):
            return None  # once per run: a second page would be the same page
        if self.TOOL is not None and (
            self.TOOL not in tool_names(request.tools) or not tool_allowed(run_settings(), self.TOOL)
        ):
            return None
        return question.text, run, finding

    def _page_for(self, due: tuple[str, list[AnyMessage], dict[str, Any]]) -> Page | None:
        """The page for what :meth:`_due` found, the named files read through the sandbox."""
        try:
            sandbox = run_sandbox(self.provider)
        except Exception:  # noqa: BLE001 - no sandbox: a page without files
            sandbox = None
        page = self.page(*due, sandbox)
        return self.follow_up(page, due[1]) if page is not None else None

    def made(self, page: Page, reply: Any) -> AIMessage | None:
        """The AI message made from the page's reply: the :attr:`TOOL` call, marked; or None."""
        args = self.call_args(page, reply.text) if isinstance(reply, AIMessage) and self.TOOL else None
        if args is None or self.TOOL is None:
            return None
        call = harness_call(page.rule, self.TOOL, args)
        call.additional_kwargs[self.KEY] = True
        return call

    def _made(self, page: Page, reply: Any) -> Any:
        """The model response holding what :meth:`made` made from the page's reply, or None."""
        message = self.made(page, reply)
        log.info("clean_page", use=self.KEY, rule=page.rule, made=message is not None)
        if message is None:
            return None
        response = ModelResponse(result=[message])
        if page.seen:  # the page showed these files whole: they count as read (read before write)
            return ExtendedModelResponse(model_response=response, command=Command(update={"files_read": page.seen}))
        return response

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        """After a note of one of the use's rules: the call made on a clean page, else the model."""
        due = self._due(request)
        page = self._page_for(due) if due is not None else None
        if page is None:
            return self.after(request, handler(request))
        try:
            reply = request.model.bind(max_tokens=self.MAX_TOKENS).invoke(page.messages, config=NO_STREAM)
        except Exception as exc:  # noqa: BLE001 - the harness's own call never fails a run
            log.warning("clean_page_failed", use=self.KEY, error=str(exc))
            return handler(request)
        made = self._made(page, reply)
        return made if made is not None else handler(request)

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        """Async twin of :meth:`wrap_model_call` (the files are read on the file pool, on the run's
        user's slots, and only when a page is due)."""
        due = self._due(request)
        page = await pools.run(pools.FILES, run_user(), self._page_for, due) if due is not None else None
        if page is None:
            return self.after(request, await handler(request))
        try:
            reply = await request.model.bind(max_tokens=self.MAX_TOKENS).ainvoke(page.messages, config=NO_STREAM)
        except Exception as exc:  # noqa: BLE001 - the harness's own call never fails a run
            log.warning("clean_page_failed", use=self.KEY, error=str(exc))
            return await handler(request)
        made = self._made(page, reply)
        return made if made is not None else await handler(request)


def program_in(command: str) -> str | None:
    """The program a :func:`command_of` command runs, or None for another command."""
    head, tail = command_of("\0").split("\0")
    return command[len(head) : -len(tail)] if command.startswith(head) and command.endswith(tail) else None


def failed_program(run: Sequence[AnyMessage], made: Sequence[AIMessage]) -> tuple[str, str] | None:
    """The program and the error of the one program call ``made`` in ``run``, when it failed."""
    if len(made) != 1 or not made[0].tool_calls:
        return None
    call = made[0].tool_calls[0]
    result = tool_results(run).get(call["id"]) if call["id"] is not None else None
    program = program_in(str(call["args"].get("command", "")))
    if result is None or program is None or not failed(result):
        return None
    return program, result.text.strip()[-ERROR_CHARS:]


class ProgramPageMiddleware(CleanPageMiddleware):
    """A use whose page asks for a Python program, run as a ``bash`` call. A program that failed
    gets one more page: the same page, the program and its error (self-debugging, Chen et al.
    2023: on dev a program passed bare file names to os.path.getsize; the model that wrote it,
    shown the traceback, fixes such a program more often than it writes a right one from the
    conversation)."""

    TOOL = "bash"

    def again(self, run: Sequence[AnyMessage], made: Sequence[AIMessage]) -> bool:
        """Once more when the one program asked for so far failed."""
        return failed_program(run, made) is not None

    def follow_up(self, page: Page, run: Sequence[AnyMessage]) -> Page:
        """The page, then the failed program and its error, when a program of this use failed."""
        failure = failed_program(run, self.marked(run))
        if failure is None:
            return page
        program, error = failure
        retry: list[AnyMessage] = [AIMessage(f"```python\n{program}\n```"), HumanMessage(f"{RETRY}\n\n{error}")]
        return replace(page, messages=[*page.messages, *retry])

    def call_args(self, page: Page, reply: str) -> dict[str, Any] | None:
        """The bash call running the program, when the reply holds one that parses."""
        program = program_of(reply)
        return {"command": command_of(program)} if program is not None else None
