"""The sandbox tools the model uses: bash, ls, read_file, write_file, str_replace, glob, grep.

Each tool finds its thread through LangChain's injected ``ToolRuntime``
(``runtime.config["configurable"]["thread_id"]``), asks the provider for that thread's sandbox
and speaks only virtual paths. The runtime is typed ``ToolRuntime[Any, dict[str, Any]]``: left bare, its
context is typed None, and a run's context (a client's keys, the run scope) made pydantic warn
on every tool call when LangChain dumps the tool's arguments. Every failure the model can act on
(a bad path, a missing file, bash being off) is raised as ``ToolException`` and, with
``handle_tool_error=True``, reaches the model as a ``ToolMessage`` with ``status="error"``
instead of ending the run.

``bash``, ``write_file`` and ``str_replace`` also return a LangChain tool *artifact*
(``response_format="content_and_artifact"``): structured data kept on the ``ToolMessage`` for
traces and UIs, never sent to the model. ``bash``'s is ``{"command", "exit_code", "stdout",
"stderr", "timed_out", "files_changed": [{"path", "action"}], "files_changed_incomplete"}``; the
files changed come from comparing a bounded snapshot of ``/mnt/user-data`` before and after the
command (see ``snapshot.py``), when the sandbox can take one. The file tools' artifacts name the
file and the action (``created``, ``modified``).

``grep`` is written in Python over the Sandbox protocol (``glob`` + ``read_text``) so it works the
same for every provider and needs no ripgrep in the jail. Its patterns run on RE2 (linear time,
see ``search.py``) and it stops after ``MAX_GREP_BYTES`` or ``GREP_SECONDS``; listings and globs
stop at their own bounds. Each says when it stopped.

``bash`` asks its ``command_env`` (the lead passes :class:`herdsman.skills.command_env.SkillCommandEnv`)
for variables to add to one command: the run's user's secrets of the skills the command runs.
Any of their values that the command prints is hidden (:func:`hide_values`) before the output
reaches the model, the artifact, the trace or a checkpoint.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import re
import threading
import time
import warnings
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Annotated, Any

from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool, ToolException

from herdsman import pools
from herdsman.config.schema import SandboxConfig
from herdsman.logs import get_logger
from herdsman.sandbox.base import (
    OUTPUTS,
    SKILLS_ROOT,
    UPLOADS,
    WORKSPACE,
    CommandNotAllowedError,
    ExecResult,
    HostBackedSandbox,
    Sandbox,
    SandboxError,
    SandboxProvider,
)
from herdsman.sandbox.file_servers import served_folder
from herdsman.sandbox.fs import NotFoundError
from herdsman.sandbox.grep_hint import explain_no_match, no_match_hint
from herdsman.sandbox.path_hint import command_note, where_note
from herdsman.sandbox.paths import normalize_virtual
from herdsman.sandbox.search import compile_regex
from herdsman.sandbox.snapshot import FileSnapshot, diff_snapshots
from herdsman.sandbox.virtual_folders import rewrite_command
from herdsman.tool_schemas import structured_tool

log = get_logger(__name__)

MAX_LINE_CHARS = 2_000
MAX_LISTED_ENTRIES = 500
MAX_GREP_MATCHES = 200
MAX_GREP_LINE_CHARS = 300
MAX_GREP_BYTES = 200 * 1024 * 1024  # text a grep reads before it stops
GREP_SECONDS = 15.0  # time a grep may take before it stops
CANCEL_WAIT_SECONDS = 10.0  # how long a cancelled bash call keeps killing a command that starts late

_PATHS_NOTE = (
    f"Paths are virtual: {WORKSPACE} (your working directory; relative paths start here), "
    f"{UPLOADS} (files the user uploaded), {OUTPUTS} (put deliverables for the user here) and "
    f"{SKILLS_ROOT} (read-only skills)."
)


# -- plumbing -------------------------------------------------------------------------------


def thread_id_of(runtime: ToolRuntime | None) -> str:
    """The thread id from the run config, or a ToolException saying how to pass one."""
    config: dict[str, Any] = dict(getattr(runtime, "config", None) or {})
    thread_id = (config.get("configurable") or {}).get("thread_id")
    if not thread_id:
        raise ToolException(
            "no thread id in this run: invoke the agent with config={'configurable': {'thread_id': '<id>'}}"
        )
    return str(thread_id)


class _EditLocks:
    """One lock per (thread, virtual path) so read-modify-write edits do not interleave."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: weakref.WeakValueDictionary[tuple[str, str], Any] = weakref.WeakValueDictionary()

    def get(self, thread_id: str, path: str) -> Any:
        """The lock of ``path`` in ``thread_id``'s sandbox (one per file, shared while in use)."""
        key = (thread_id, normalize_virtual(path))
        with self._guard:
            lock = self._locks.get(key)
            if lock is None:
                lock = _Lock()
                self._locks[key] = lock
            return lock


class _Lock:
    __slots__ = ("_lock", "__weakref__")

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


def _tool_exception(name: str, exc: Exception) -> ToolException:
    if isinstance(exc, ToolException):
        return exc
    if isinstance(exc, SandboxError):
        return ToolException(str(exc))
    log.error("sandbox_tool_failed", tool=name, exc_info=exc)
    return ToolException(f"{name} failed because of an internal error (details are in the server log)")


def _as_tool_errors(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn sandbox errors into ToolException; hide unexpected errors' details from the model."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            raise _tool_exception(name, exc) from None

    return wrapper


def _as_async_tool_errors(name: str, fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """The coroutine version of :func:`_as_tool_errors`."""

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return await fn(*args, **kwargs)
        except Exception as exc:
            raise _tool_exception(name, exc) from None

    return wrapper


def _on_file_pool(fn: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    """The coroutine of a file tool: ``fn`` on the file pool, on a slot of the run's user."""

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        user = pools.user_of(getattr(kwargs.get("runtime"), "config", None))
        return await pools.run(pools.FILES, user, fn, *args, **kwargs)

    return wrapper


def _display(path: str) -> str:
    try:
        return normalize_virtual(path)
    except SandboxError:
        return path


def _with_sizes(sandbox: Sandbox, entries: list[str]) -> list[str]:
    """``entries`` with each file's size in bytes after it (asked which file is the largest,
    a small model given names only picked one). Sizes come from one bounded walk of the
    thread's files; entries outside them (skills) stay as they are."""
    snapshot = _snapshot(sandbox)  # none (no host-side files, or it failed): no sizes is still a listing
    if snapshot is None:
        return entries
    sizes = snapshot.entries
    return [f"{e}  ({sizes[e][0]} bytes)" if e in sizes else e for e in entries]


def _cap_lines(lines: list[str], limit: int, what: str, hint: str) -> str:
    if len(lines) <= limit:
        return "\n".join(lines)
    shown = "\n".join(lines[:limit])
    return f"{shown}\n... [{len(lines) - limit} more {what} not shown; {hint}]"


_GUTTER = re.compile(r"^ *(\d{1,6})\t")


def numbered_line(number: int, line: str) -> str:
    """A line as read_file shows it: its number right-aligned in six columns, a tab, the line."""
    return f"{number:>6}\t{line}"


def strip_line_numbers(text: str) -> tuple[str, bool]:
    """``text`` without read_file's line numbers when every line carries them, numbered one by
    one (a small model copied a listing into write_file, gutter and all, and broke the
    script); anything else comes back unchanged. Returns the text and whether it was cut."""
    lines = text.split("\n")
    trailing = lines[-1] == ""
    body = lines[:-1] if trailing else lines
    matches = [_GUTTER.match(line) for line in body]
    if len(body) < 2 or any(m is None or len(m.group(0)) != 7 for m in matches):
        return text, False
    numbers = [int(m.group(1)) for m in matches]  # type: ignore[union-attr]  # the check above returned when any match was None
    if numbers != list(range(numbers[0], numbers[0] + len(numbers))):
        return text, False
    cut = [line[7:] for line in body]
    return "\n".join(cut + ([""] if trailing else [])), True


MAX_PARSED_CHARS = 1_000_000


def parse_error(shown: str, text: str) -> str | None:
    """Why a Python or JSON file does not parse ("SyntaxError: invalid syntax (line 1)", "not
    valid JSON: ..."), or None when it does, is another kind, or is too big to check here. Python
    is compiled, never run; JSON is decoded."""
    if len(text) > MAX_PARSED_CHARS:
        return None
    if shown.endswith(".py"):
        try:
            with warnings.catch_warnings():  # "invalid escape sequence" and the like are not problems here
                warnings.simplefilter("ignore")
                compile(text, shown, "exec", dont_inherit=True)
        except SyntaxError as exc:
            return f"SyntaxError: {exc.msg} (line {exc.lineno})"
        except (ValueError, RecursionError, MemoryError):  # null bytes, nesting too deep to check
            return None
    elif shown.endswith(".json") and text.strip():
        try:
            json.loads(text)
        except ValueError as exc:
            return f"not valid JSON: {exc}"
    return None


def parse_problem(shown: str, text: str) -> str:
    """A note when a Python or JSON file no longer parses (empty when it does, see
    :func:`parse_error`): a small model wrote ``.replace('\\n', ' ')`` through JSON, the ``\\n``
    became a real line break, and the script died on a SyntaxError only when run."""
    error = parse_error(shown, text)
    if error is None:
        return ""
    if error.startswith("SyntaxError"):
        return (
            f". Warning: {shown} does not parse now: {error}. "
            "Read those lines and fix them (a line break inside quotes is written \\n)"
        )
    why = error.removeprefix("not valid JSON: ")
    return f". Warning: {shown} is not valid JSON now: {why}. Write it again as valid JSON"


def unescape_python(shown: str, text: str) -> tuple[str, bool]:
    """A Python file's text with ``\\n`` turned into line breaks when it came as one line of
    escaped code: it has no line break, does not compile, and compiles once unescaped (from the
    benchmark: write_file got "import json\\n\\nconfig = ..." escaped twice, and the script was
    one line). Anything else comes back unchanged; returns the text and whether it changed."""
    if not shown.endswith(".py") or "\n" in text or "\\n" not in text or len(text) > MAX_PARSED_CHARS:
        return text, False
    candidate = text.replace("\\n", "\n").replace("\\t", "\t")
    if parse_problem(shown, text) and not parse_problem(shown, candidate):
        return candidate, True
    return text, False


def _same_text(sandbox: Any, path: str, content: str) -> bool:
    """Whether the text file at ``path`` already holds ``content`` (a final newline aside)."""
    try:
        return bool(sandbox.read_text(path).rstrip() == content.rstrip())
    except Exception:  # noqa: BLE001 - unreadable (binary, too large): not the same text
        return False


def _read_or_where(sandbox: Sandbox, path: str) -> str:
    """The text at ``path``; when it does not exist, the error says where a file of its name
    is (:mod:`~herdsman.sandbox.path_hint`)."""
    try:
        return sandbox.read_text(path)
    except NotFoundError as exc:
        raise ToolException(f"{exc}{where_note(sandbox, path)}") from None


def _looks_binary(text: str) -> bool:
    return "\x00" in text[:8192]


def _snapshot(sandbox: Sandbox) -> FileSnapshot | None:
    """A snapshot of the sandbox's files, or None when it cannot take one (or taking it failed)."""
    if not isinstance(sandbox, HostBackedSandbox):
        return None
    try:
        return sandbox.snapshot()
    except Exception:  # noqa: BLE001 - the trace loses its file list; the command still runs
        log.warning("sandbox_snapshot_failed", exc_info=True)
        return None


CommandEnv = Callable[[str, Mapping[str, Any] | None, Mapping[str, Any] | None], Mapping[str, str]]
"""``(command, run state, run config) -> variables`` to add to the command's environment."""
HIDDEN = "[secret hidden]"
MIN_HIDDEN = 4  # shorter values are not hidden in outputs (they would mangle ordinary text)


def hide_values(text: str, values: Iterable[str]) -> str:
    """``text`` with every value of at least :data:`MIN_HIDDEN` characters replaced by ``[secret hidden]``."""
    for value in sorted({v for v in values if len(v) >= MIN_HIDDEN}, key=len, reverse=True):
        text = text.replace(value, HIDDEN)
    return text


def _hidden(result: ExecResult, values: Iterable[str]) -> ExecResult:
    values = list(values)
    return dataclasses.replace(
        result,
        output=hide_values(result.output, values),
        stdout=None if result.stdout is None else hide_values(result.stdout, values),
        stderr=None if result.stderr is None else hide_values(result.stderr, values),
    )


def run_traced(
    sandbox: Sandbox, command: str, cancelled: threading.Event | None = None, env: Mapping[str, str] | None = None
) -> tuple[ExecResult, dict[str, Any]]:
    """Run ``command`` and describe it for a trace: the bash tool's artifact (module docstring).
    A ``cancelled`` event set before the command starts (the worker takes a snapshot first)
    keeps it from starting at all: a late start would outlive the cancelling loop and run its
    whole length. ``env`` adds variables to the command; their values are hidden in what it printed."""
    before = _snapshot(sandbox)
    if cancelled is not None and cancelled.is_set():
        return ExecResult(exit_code=-1, output="cancelled before it started"), {"command": command, "exit_code": -1}
    if env:
        result = _hidden(sandbox.execute(command, env=env), env.values())
    else:
        result = sandbox.execute(command)
    after = _snapshot(sandbox) if before is not None else None
    artifact: dict[str, Any] = {"command": command, "exit_code": result.exit_code}
    if result.stdout is None or result.stderr is None:
        artifact["output"] = result.output  # this provider cannot tell the streams apart
    else:
        artifact["stdout"] = result.stdout
        artifact["stderr"] = result.stderr
    artifact["timed_out"] = result.timed_out
    if before is not None and after is not None:
        artifact["files_changed"], artifact["files_changed_incomplete"] = diff_snapshots(before, after)
    return result, artifact


def _file_artifact(path: str, action: str, **extra: Any) -> dict[str, Any]:
    """The artifact of a file tool: the file, what happened to it, and ``files_changed`` like bash's."""
    return {"path": path, "action": action, **extra, "files_changed": [{"path": path, "action": action}]}


# -- the tools ------------------------------------------------------------------------------

BACKGROUND_ARG = (
    "true: start the command as a background server that keeps running (e.g. python3 -m http.server "
    "8000); the user sees it in the Preview tab. Default false."
)
SERVER_STARTUP_SECONDS = 10.0  # how long bash waits for a background server to listen


_TRAILING_AMPERSAND = re.compile(r"(?<![&|>])&\s*$")  # "cmd &", not "a && b" nor "2>&1"


def sent_to_background(command: str) -> bool:
    """Whether ``command`` ends by sending itself to the background with ``&``."""
    return _TRAILING_AMPERSAND.search(command) is not None


def held_in_foreground(command: str) -> str:
    """``command`` without the ``&`` (or ``nohup``) a model adds to a command it already asked to
    run in the background: the job's shell would start it as a child and end at once, and the
    job with it (``python3 ticker.py &`` with background=true "ended" before writing a line)."""
    held = _TRAILING_AMPERSAND.sub("", command.rstrip()).rstrip()
    return re.sub(r"^nohup\s+", "", held) or command


ENDED_OUTPUT_LINES = 5


def ended_jobs(sandbox: Sandbox) -> list[str]:
    """A line for each background job of ``sandbox`` that ended since a command last said so, with
    the last lines it printed: a model that started a job and must wait for it learns from its
    next command's result that it is over, and how it ended."""
    lines = []
    for job in getattr(sandbox, "background_jobs", list)():
        result = job.end_news()
        if result is None:
            continue
        tail = result.output.rstrip("\n").splitlines()[-ENDED_OUTPUT_LINES:]
        printed = ("; its last lines:\n" + "\n".join(tail)) if tail else ", printing nothing"
        lines.append(
            f"[background job {job.number} ({job.command[:80]}) has ended with exit code {result.exit_code}{printed}]"
        )
    return lines


def _stopped(listing: list[str]) -> str:
    """The note a bounded listing carries when it was cut, as a line for the model."""
    note = getattr(listing, "note", "")
    return f"\n[search {note}; narrow the path or the pattern to see the rest]" if note else ""


class SandboxTools:
    """The seven sandbox tools as methods, bound to ``provider``; limits come from ``config``.

    :meth:`as_tools` turns them into LangChain tools. Each method finds the thread's sandbox
    through the run's ``ToolRuntime``.
    """

    def __init__(self, provider: SandboxProvider, config: SandboxConfig, command_env: CommandEnv | None = None) -> None:
        self.provider = provider
        self.command_env = command_env
        self.locks = _EditLocks()
        self.max_chars = config.max_output_chars
        self.timeout = config.command_timeout_seconds
        self.preview = config.preview

    def sandbox_of(self, runtime: ToolRuntime) -> Sandbox:
        """The sandbox of the run's thread."""
        return self.provider.acquire(thread_id_of(runtime))

    def bash_result(self, result: ExecResult, note: str = "") -> str:
        """What the model reads of a command: its output, the harness's ``note`` on it, then its
        exit code and timeout (the exit code stays the last line: readers look for it there)."""
        lines = [result.output.rstrip("\n") or "(no output)"]
        if note:
            lines.append(note)
        if result.exit_code != 0:
            lines.append(f"[exit code {result.exit_code}]")
        if result.timed_out:
            lines.append(f"[timed out after {self.timeout:g}s, the process tree was killed]")
        return "\n".join(lines)

    def bash(
        self,
        command: Annotated[str, "The bash command line to run."],
        runtime: ToolRuntime[Any, dict[str, Any]],
        background: Annotated[bool, BACKGROUND_ARG] = False,
    ) -> tuple[str, dict[str, Any]]:
        """Run a command (blocking), or start a background server."""
        sandbox = self.sandbox_of(runtime)
        if background:
            answer = self._background(sandbox, command)
        else:
            answer = self._described(sandbox, command, env=self.env_of(command, runtime))
        self.announce(runtime, self.new_previews(sandbox))
        return answer

    def _background(self, sandbox: Sandbox, command: str) -> tuple[str, dict[str, Any]]:
        """Start ``command`` as a background server and say where the user sees it (``background.py``)."""
        start = getattr(sandbox, "start_background", None)
        if start is None:
            raise CommandNotAllowedError(
                "Background servers are not available with this sandbox provider; run the command without background."
            )
        command = rewrite_command(held_in_foreground(command))
        job = start(command)
        listening = job.wait_listening(SERVER_STARTUP_SECONDS)
        ports = [p for p in listening if self.preview.allows(p)]
        artifact: dict[str, Any] = {"command": command, "background": job.number, "ports": listening}
        if not job.running:
            result = job.end_news() or job.result or ExecResult(exit_code=1, output="")  # told here, not again
            artifact["exit_code"] = result.exit_code
            return "The background command has already ended:\n" + self.bash_result(result), artifact
        range_note = f"ports {self.preview.ports}"
        reachable = not job.isolated or getattr(sandbox, "servers_reachable", False)
        served = (served_folder(command) or "").replace("{", "{{").replace("}", "}}")  # reach is formatted below
        reach = (
            "Later bash commands reach it at http://127.0.0.1:{port}/ (curl -s http://127.0.0.1:{port}/...)."
            + (f" It serves the files of {served}: http://127.0.0.1:{{port}}/NAME is {served}/NAME." if served else "")
            if reachable
            else "It runs in a sandbox of its own: other bash commands cannot reach it, so test a server in one "
            "command (start it with &, then curl it)."
        )
        if ports:
            shown = ", ".join(map(str, ports))
            return (
                f"Started in the background (job {job.number}); listening on port {shown} inside the sandbox. "
                f"The user sees it live in the Preview tab (port {shown}). {reach.format(port=ports[0])}"
            ), artifact
        others = [p for p in listening if not self.preview.allows(p)]
        if others:
            shown = ", ".join(map(str, others))
            return (
                f"Started in the background (job {job.number}) and running: it listens on port {shown} inside the "
                f"sandbox. {reach.format(port=others[0])} Port {shown} is outside the previewable {range_note}, so "
                "the user cannot open it in the Preview tab."
            ), artifact
        return (
            f"Started in the background (job {job.number}) and running. It writes its files as usual; nothing "
            f"listens on any of the previewable {range_note} yet, so there is nothing to preview. The result of a "
            "later bash command says when it has ended."
        ), artifact

    def new_previews(self, sandbox: Sandbox) -> list[dict[str, Any]]:
        """The ``preview`` events of the ports that started listening in ``sandbox`` since the
        last bash call (previewable ports only; none for a sandbox without background servers)."""
        listeners = getattr(sandbox, "new_listeners", None)
        if listeners is None:
            return []
        try:
            found = listeners()
        except Exception:  # noqa: BLE001 - an announcement must never fail the command
            log.warning("could not read the sandbox's listening ports", exc_info=True)
            return []
        return [
            {
                "type": "preview",
                "thread_id": sandbox.thread_id,
                "port": port,
                "job": job.number,
                "command": job.command[:200],
            }
            for job, port in found
            if self.preview.allows(port)
        ]

    @staticmethod
    def announce(runtime: ToolRuntime[Any, dict[str, Any]], events: list[dict[str, Any]]) -> None:
        """Write ``events`` on the run's custom stream (where the web UI's Preview tab hears of them)."""
        writer = getattr(runtime, "stream_writer", None)
        for event in events:
            if writer is not None:
                try:
                    writer(event)
                except Exception:  # noqa: BLE001 - outside a graph run there is no stream to write to
                    log.debug("no stream for the preview event", exc_info=True)
            log.info("preview_listening", thread_id=event["thread_id"], port=event["port"])

    def env_of(self, command: str, runtime: ToolRuntime[Any, dict[str, Any]]) -> dict[str, str]:
        """The variables ``command_env`` adds to ``command`` in this run (none when it fails: logged)."""
        if self.command_env is None:
            return {}
        try:
            return dict(self.command_env(command, getattr(runtime, "state", None), getattr(runtime, "config", None)))
        except Exception:  # noqa: BLE001 - a broken secrets file must not stop the command
            log.warning("command_env_failed", consequence="the command runs without the skill's secrets", exc_info=True)
            return {}

    def _described(
        self,
        sandbox: Sandbox,
        command: str,
        cancelled: threading.Event | None = None,
        env: Mapping[str, str] | None = None,
    ) -> tuple[str, dict[str, Any]]:
        """Run ``command``: what the model reads of it (with a note when a search found
        nothing, :mod:`~herdsman.sandbox.grep_hint`) and its artifact; ``outputs/...``-style
        paths in it mean the virtual folders (:func:`~herdsman.sandbox.virtual_folders.rewrite_command`)."""
        command = rewrite_command(command)
        result, artifact = run_traced(sandbox, command, cancelled, env)
        hints = [] if result.timed_out else [no_match_hint(sandbox, command, result.exit_code, result.output)]
        hints.append(command_note(sandbox, result.exit_code, result.output))
        return self.bash_result(result, "\n".join(filter(None, [*hints, *ended_jobs(sandbox)]))), artifact

    async def abash(
        self,
        command: Annotated[str, "The bash command line to run."],
        runtime: ToolRuntime[Any, dict[str, Any]],
        background: Annotated[bool, BACKGROUND_ARG] = False,
    ) -> tuple[str, dict[str, Any]]:
        """Run a command on the command pool, once the run's user has a command slot free
        (``pools.commands_per_user``); a cancelled run kills the command instead of leaving it to
        its timeout in an orphaned thread."""
        sandbox = self.sandbox_of(runtime)
        cancelled, started = threading.Event(), threading.Event()

        def traced() -> tuple[tuple[str, dict[str, Any]], list[dict[str, Any]]]:
            started.set()
            if background:
                answer = self._background(sandbox, command)
            else:
                answer = self._described(
                    sandbox, command, cancelled, self.env_of(command, runtime)
                )  # reads a file: off the loop
            return answer, self.new_previews(sandbox)

        user = pools.user_of(getattr(runtime, "config", None))
        work = asyncio.ensure_future(pools.run(pools.COMMANDS, user, traced))
        try:
            (text, artifact), previews = await asyncio.shield(work)
        except asyncio.CancelledError:
            cancelled.set()  # not started yet: it never starts
            if not started.is_set():
                work.cancel()  # still waiting for the user's command slot: give up the wait
            elif isinstance(sandbox, HostBackedSandbox):
                # The command may not have started yet (the worker takes a snapshot first): keep
                # cancelling until the worker is done, so a late start is killed too (bounded).
                deadline = time.monotonic() + CANCEL_WAIT_SECONDS
                while not work.done() and time.monotonic() < deadline:
                    sandbox.cancel_running()
                    await asyncio.sleep(0.05)
            raise
        self.announce(runtime, previews)
        return text, artifact

    def ls(
        self,
        runtime: ToolRuntime[Any, dict[str, Any]],
        path: Annotated[str, "Directory to list; default the workspace."] = WORKSPACE,
    ) -> str:
        """List a folder two levels deep, each file with its size."""
        sandbox = self.sandbox_of(runtime)
        entries = sandbox.list_dir(path, max_depth=2)
        if not entries:
            return f"{_display(path)} is empty"
        shown = _with_sizes(sandbox, entries[: MAX_LISTED_ENTRIES + 1]) + entries[MAX_LISTED_ENTRIES + 1 :]
        return _cap_lines(shown, MAX_LISTED_ENTRIES, "entries", "ls a subdirectory to see them") + _stopped(entries)

    def read_file(
        self,
        path: Annotated[str, "File to read."],
        runtime: ToolRuntime[Any, dict[str, Any]],
        start_line: Annotated[int | None, "First line to show, 1-based; default 1."] = None,
        end_line: Annotated[int | None, "Last line to show, inclusive; default the last line."] = None,
    ) -> str:
        """Read a text file, numbered, cut to the output budget."""
        sandbox = self.sandbox_of(runtime)
        text = _read_or_where(sandbox, path)
        shown = _display(path)
        if _looks_binary(text):
            raise ToolException(f"{shown} looks like a binary file; inspect it with bash (file, xxd | head)")
        lines = text.splitlines()
        total = len(lines)
        if total == 0:
            return f"{shown} is empty"
        start = 1 if start_line is None else start_line
        end = total if end_line is None else min(end_line, total)
        if start < 1 or (end_line is not None and end_line < start):
            raise ToolException(
                f"invalid line range {start_line}-{end_line}: lines are numbered from 1 and "
                "end_line must not be smaller than start_line"
            )
        if start > total:
            raise ToolException(f"start_line {start} is past the end of {shown}, which has {total} lines")
        out: list[str] = []
        used = 0
        for number in range(start, end + 1):
            line = lines[number - 1]
            if len(line) > MAX_LINE_CHARS:
                line = line[:MAX_LINE_CHARS] + f" ... [{len(line) - MAX_LINE_CHARS} characters cut from this line]"
            row = numbered_line(number, line)
            if out and used + len(row) + 1 > self.max_chars:
                out.append(
                    f"... [output cut: lines {number}-{end} not shown; "
                    f"call read_file with start_line={number} to continue]"
                )
                return "\n".join(out)
            out.append(row)
            used += len(row) + 1
        if start != 1 or end != total:
            out.append(f"[lines {start}-{end} of {total}]")
        return "\n".join(out)

    def write_file(
        self,
        path: Annotated[str, "File to write; parent directories are created."],
        content: Annotated[str, "The full text to write."],
        runtime: ToolRuntime[Any, dict[str, Any]],
        append: Annotated[bool, "Add to the end of the file instead of replacing it."] = False,
    ) -> tuple[str, dict[str, Any]]:
        """Create, overwrite or append to a file."""
        tid = thread_id_of(runtime)
        sandbox = self.provider.acquire(tid)
        content, cut = strip_line_numbers(content)
        content, unescaped = unescape_python(_display(path), content)
        with self.locks.get(tid, path):
            existed = sandbox.exists(path)
            same = existed and not append and _same_text(sandbox, path, content)
            written = sandbox.write_text(path, content, append=append)
        verb = "Appended" if append else "Wrote"
        shown = _display(path)
        artifact = _file_artifact(shown, "modified" if existed else "created", bytes=written, append=append)
        note = " (without the line numbers read_file shows: they are not part of the file)" if cut else ""
        if unescaped:
            note += " (with real line breaks where the text had \\n: as written it was one line that does not parse)"
        if same:
            # a small model asked to fix a file wrote back what it had read, was told "Wrote 60
            # bytes", and answered that the bug was fixed
            note += f". Nothing changed: {shown} already held this text. If it needs a fix, write the changed text"
        if not append:
            note += parse_problem(shown, content)
        return f"{verb} {written} bytes to {shown}{note}", artifact

    def str_replace(
        self,
        path: Annotated[str, "File to edit."],
        old: Annotated[str, "Exact text to find, including whitespace and indentation."],
        new: Annotated[str, "Text to put in its place."],
        runtime: ToolRuntime[Any, dict[str, Any]],
        replace_all: Annotated[bool, "Replace every occurrence instead of exactly one."] = False,
    ) -> tuple[str, dict[str, Any]]:
        """Replace an exact piece of text in a file."""
        if not old:
            raise ToolException("old is empty; give the exact text to replace")
        if old == new:
            raise ToolException("old and new are the same text, so nothing would change; put the changed text in new")
        tid = thread_id_of(runtime)
        sandbox = self.provider.acquire(tid)
        shown = _display(path)
        escaped_note = ""
        with self.locks.get(tid, path):
            content = _read_or_where(sandbox, path)
            if _looks_binary(content):
                raise ToolException(f"{shown} looks like a binary file; str_replace edits text only")
            count = content.count(old)
            if count == 0:
                raise ToolException(
                    f"old text not found in {shown}; read the file and copy the exact text, "
                    "including whitespace and indentation"
                )
            if count > 1 and not replace_all:
                raise ToolException(
                    f"old text found {count} times in {shown}; include more surrounding lines to "
                    "make it unique, or set replace_all=true to replace all of them"
                )
            updated = content.replace(old, new) if replace_all else content.replace(old, new, 1)
            was_broken = bool(parse_problem(shown, content))
            if "\n" not in old and "\n" in new and not was_broken and parse_problem(shown, updated):
                # one line edited into several that break the code: the model's "\n" inside quotes came
                # through JSON as a real line break (from the benchmark: .replace('<break>', ' '))
                mended = content.replace(old, new.replace("\n", "\\n"), -1 if replace_all else 1)
                if not parse_problem(shown, mended):
                    updated, new = mended, new.replace("\n", "\\n")
                    escaped_note = " (the line break in new was written as \\n: as a real break the code did not parse)"
            sandbox.write_text(path, updated)
        replaced = count if replace_all else 1
        problem = parse_problem(shown, updated) if not was_broken else ""  # one this edit made
        return (
            f"Replaced {replaced} occurrence(s) in {shown}{escaped_note}{problem}",
            _file_artifact(shown, "modified", replacements=replaced),
        )

    def glob(
        self,
        pattern: Annotated[str, "Glob pattern, e.g. **/*.py or src/*.md; ** spans directories."],
        runtime: ToolRuntime[Any, dict[str, Any]],
        path: Annotated[str, "Directory to search from; default the workspace."] = WORKSPACE,
    ) -> str:
        """Find paths by glob pattern, with their count; a pattern for one folder level says how
        many more match in subfolders (a model asked to count "including subfolders" wrote
        ``*.py``; given the 7 paths, it answered 10)."""
        sandbox = self.sandbox_of(runtime)
        matches = sandbox.glob(pattern, path)
        deeper = ""
        if "/" not in pattern and "**" not in pattern:
            extra = len(sandbox.glob(f"**/{pattern}", path)) - len(matches)
            if extra > 0:
                deeper = f"\n[{extra} more in subfolders: the pattern **/{pattern} includes them]"
        if not matches:
            return f"no paths match {pattern!r} under {_display(path)}" + deeper + _stopped(matches)
        count = f"\n[{len(matches)} matches]" if len(matches) > 1 else ""  # a small model cannot count lines
        return (
            _cap_lines(matches, MAX_LISTED_ENTRIES, "matches", "use a narrower pattern")
            + count
            + deeper
            + _stopped(matches)
        )

    def grep(
        self,
        pattern: Annotated[str, "Regular expression (RE2 syntax) to search for."],
        runtime: ToolRuntime[Any, dict[str, Any]],
        path: Annotated[str, "File or directory to search; default the workspace."] = WORKSPACE,
        glob: Annotated[str | None, "Only search files matching this glob, e.g. *.py or src/**/*.ts."] = None,
        ignore_case: Annotated[bool, "Match without regard to case."] = False,
    ) -> str:
        """Search file contents (linear-time RE2, bounded in files, bytes and time)."""
        try:
            regex = compile_regex(pattern, ignore_case)
        except SandboxError as exc:
            raise ToolException(str(exc)) from None
        sandbox = self.sandbox_of(runtime)
        file_glob = "**/*" if not glob else (glob if "/" in glob else f"**/{glob}")
        listed = sandbox.glob(file_glob, path)
        files = [f for f in listed if not f.endswith("/") and "/.git/" not in f]
        if not files and sandbox.exists(path):
            files = [_display(path)]
        hits: list[str] = []
        total = 0
        files_with_hits = 0
        scanned = 0
        stopped = getattr(listed, "note", "")
        deadline = time.monotonic() + GREP_SECONDS
        for file in files:
            if scanned > MAX_GREP_BYTES or time.monotonic() > deadline:
                stopped = (
                    f"stopped after {scanned // (1024 * 1024)} MB"
                    if scanned > MAX_GREP_BYTES
                    else f"stopped after {GREP_SECONDS:g} seconds"
                )
                break
            try:
                text = sandbox.read_text(file)
            except SandboxError:
                continue
            scanned += len(text)
            if _looks_binary(text):
                continue
            found_here = False
            for number, line in enumerate(text.splitlines(), 1):
                if regex.search(line):
                    total += 1
                    found_here = True
                    if len(hits) < MAX_GREP_MATCHES:
                        if len(line) > MAX_GREP_LINE_CHARS:
                            line = line[:MAX_GREP_LINE_CHARS] + " ..."
                        hits.append(f"{file}:{number}: {line}")
            files_with_hits += found_here
        note = f"\n[search {stopped}; narrow the path, the glob or the pattern to search the rest]" if stopped else ""
        if not hits:
            where = _display(path) + (f" (files matching {glob})" if glob else "")
            hint = explain_no_match(sandbox, pattern, files) if len(files) == 1 else ""
            return f"no matches for {pattern!r} in {where}" + note + (f"\n{hint}" if hint else "")
        out = "\n".join(hits)
        if total > len(hits):
            out += (
                f"\n... [{total - len(hits)} more matches not shown ({total} in {files_with_hits} files); "
                "narrow the pattern, the path or the glob]"
            )
        elif total > 1:
            out += f"\n[{total} matching lines in {files_with_hits} files]"
        if len(out) > self.max_chars:
            cut = len(out) - self.max_chars
            out = out[: self.max_chars] + f"\n... [{cut} characters cut; narrow the search]"
        return out + note

    def descriptions(self) -> dict[str, str]:
        """What each tool tells the model about itself."""
        return {
            "bash": "Run a bash command and get its output (stdout and stderr together). "
            f"It starts in {WORKSPACE}; each call is a fresh shell, so use cd within one command "
            f"if you need another directory. {_PATHS_NOTE} Commands are stopped after "
            f"{self.timeout:g} seconds and every process they started is killed, so a server started with & "
            "dies with its command. Long output is cut in the middle. A non-zero exit code is reported on the "
            "last line. To run a server (a web app or site), set background=true: the command keeps running, "
            "later commands reach it at 127.0.0.1:PORT, and one that listens on one of the ports "
            f"{self.preview.ports} shows live in the user's Preview tab.",
            "ls": f"List a directory two levels deep, files with their sizes; directories end with '/'. {_PATHS_NOTE}",
            "read_file": "Read a text file; lines come numbered (the numbers are not part of the file). "
            "Use start_line and end_line (1-based, inclusive) to read part of a long file. "
            f"Long output is cut and says where to continue. {_PATHS_NOTE}",
            "write_file": "Create or overwrite a text file with content, or add content to its end with "
            f"append=true. Parent directories are created. {_PATHS_NOTE} {SKILLS_ROOT} is read-only.",
            "str_replace": "Edit a file by replacing an exact piece of text. old must match exactly, including "
            "whitespace, and must occur once unless replace_all=true; otherwise the tool says how "
            f"many times it was found. Read the file first. {_PATHS_NOTE}",
            "glob": "Find files and directories by glob pattern (e.g. **/*.py, data/*.csv); directories end "
            f"with '/'. {_PATHS_NOTE}",
            "grep": "Search file contents with a regular expression (RE2 syntax: no backreferences or "
            "lookaround); prints path:line: text for each match. Give a directory (searched "
            "recursively) or one file, and optionally a glob filter such as *.py. .git directories "
            f"and binary files are skipped. {_PATHS_NOTE}",
        }

    def as_tools(self) -> list[BaseTool]:
        """The LangChain tools, in a fixed order; errors reach the model as tool errors. ``bash``
        runs on the command pool, the others on the file pool (never asyncio's default pool)."""
        coroutines: dict[str, Callable[..., Awaitable[Any]]] = {
            name: _on_file_pool(getattr(self, name)) for name in self.descriptions() if name != "bash"
        }
        coroutines["bash"] = self.abash
        with_artifact = {"bash", "write_file", "str_replace"}
        tools: list[BaseTool] = []
        for name, description in self.descriptions().items():
            coroutine = coroutines.get(name)
            tools.append(
                structured_tool(
                    func=_as_tool_errors(name, getattr(self, name)),
                    coroutine=_as_async_tool_errors(name, coroutine) if coroutine else None,
                    name=name,
                    description=description,
                    handle_tool_error=True,
                    response_format="content_and_artifact" if name in with_artifact else "content",
                )
            )
        return tools


def make_sandbox_tools(
    provider: SandboxProvider, config: SandboxConfig, command_env: CommandEnv | None = None
) -> list[BaseTool]:
    """The seven sandbox tools, bound to ``provider``; limits come from ``config``; ``command_env``
    adds variables to bash's commands (see the module docstring)."""
    return SandboxTools(provider, config, command_env).as_tools()
