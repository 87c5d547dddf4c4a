"""Read before write: no blind edits or overwrites of a file the agent has not read.

A small model asked to fix one line of a script rewrote it from scratch without reading it,
dropping half of it. So ``write_file`` (replacing) and ``str_replace`` on a file that already
exists are refused unless the agent has read that file in this thread and it has not changed
since; the refusal says to read it first. New and empty files (nothing, or just [], {}, "" or
null) are free (from the benchmark: the model ran ``touch primes.py``, then had to read an empty
file before writing it), appending is free, and a file
the agent wrote or edited itself counts as read (in the state it left it).

What counts as reading: ``read_file`` (any part of it), or a ``bash`` command that prints it
(``cat``, ``head``, ``tail``, ``nl``, ``less``, ``more`` naming the file). A file a ``bash``
command wrote whole (``> file``, ``tee file``) counts as written by the agent: a model that saved
a command's output and then writes the file properly is not sent to read its own output first;
so does a file a command created, and a file a sub-agent (``task``) replaced whole or edited:
the lead's delegate read before it wrote.

Each of those must be something that happened to the file, not words that look like it (a
red-team finding: each of these let a user's file be replaced blindly): a ``>`` inside a quoted
string is no redirection (the command is split as the shell does, :func:`written_paths`), and a
redirection that never ran (``false && cmd > file``) wrote nothing, so where the command's
record lists the files it changed, only those count; an append (by the agent or, first, by a
sub-agent) shows nothing of what was there, so it counts only on a file that held nothing
before; and a file in uploads that appeared while a command ran is the user's (the record
compares the files before and after the command, and lists an upload made meanwhile too).

A refused edit of a small text file (:data:`SHOWN_LINES` lines, :data:`SHOWN_BYTES` bytes at
most) shows the file as read_file would, and that counts as reading it: the model has now seen
what it would replace, and a second try of the same edit goes through. On dev a sub-agent's first
``write_file`` of a two-line ``hello.py`` held the fix; refused with "read it first", the model
answered with instructions to read, edit and save, and never wrote the file again. A longer
file's refusal shows nothing: there a rewrite from memory is the loss this middleware prevents.

Each read records a
fingerprint (size and modification time, taken by descriptor; a hash of the content where the
files are not on this host) in the thread state, so a file changed behind the agent's
back (by a command, a sub-agent, the user) must be read again. The state survives between runs
of a thread, in the checkpoint.
"""

from __future__ import annotations

import hashlib
import operator
import shlex
import stat
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState, ToolCallRequest
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import ToolMessage
from langgraph.types import Command

from herdsman import pools
from herdsman.sandbox.base import UPLOADS, USER_DATA_ROOT, HostBackedSandbox, SandboxError, SandboxProvider
from herdsman.sandbox.paths import normalize_virtual
from herdsman.sandbox.tools import numbered_line, thread_id_of
from herdsman.turns.turn import holds_nothing

READERS = {"cat", "head", "tail", "nl", "less", "more", "bat"}


class ReadState(AgentState):
    """``files_read``: virtual path -> fingerprint of the content the agent last saw (merged with
    ``|``: later fingerprints win, parallel tool calls each add theirs). Private (checkpointed,
    never shown to clients); the reducer stays last, where LangGraph looks for it."""

    files_read: NotRequired[Annotated[dict[str, str], PrivateStateAttr, operator.or_]]


def fingerprint(content: str) -> str:
    """A short hash of a file's content."""
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()[:16]


EMPTY = "empty"
SMALL = 8  # bytes: a file this small is read to see whether it holds anything


def _virtual(path: Any) -> str | None:
    try:
        return normalize_virtual(path) if isinstance(path, str) else None
    except SandboxError:
        return None


def printed_paths(command: str) -> list[str]:
    """Virtual paths a simple ``cat``/``head``/... command prints (relative to the workspace)."""
    paths: list[str] = []
    for part in command.replace("&&", ";").replace("||", ";").replace("|", ";").split(";"):
        try:
            words = shlex.split(part)
        except ValueError:
            continue
        if not words or words[0] not in READERS:
            continue
        for word in words[1:]:
            if not word.startswith("-") and not word.isdigit() and (path := _virtual(word)):
                paths.append(path)
    return paths


_REDIRECTS = {">", ">|"}


def written_paths(command: str) -> list[str]:
    """Virtual paths a ``bash`` command writes whole: the targets of ``>`` (not ``>>``) and of
    ``tee`` without ``-a``, read from the command split as the shell does (a quoted ``>`` is a
    word); a heredoc's body is not read (a ``>`` there is Python, not a redirection)."""
    head: list[str] = []
    for line in command.splitlines():
        head.append(line)
        if "<<" in line:
            break
    lexer = shlex.shlex("\n".join(head), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: nothing is known to be written
        return []
    targets: list[str] = []
    for i, token in enumerate(tokens[:-1]):
        if token in _REDIRECTS:
            targets.append(tokens[i + 1])
        elif token == "tee" and (i == 0 or tokens[i - 1] in {"|", ";", "&&", "||", "&", "(", "\n"}):
            words = []
            for word in tokens[i + 1 :]:
                if word in {"|", ";", "&&", "||", "&", ")", ">", ">>", "<"}:
                    break
                words.append(word)
            options = [w for w in words if w.startswith("-")]
            files = [w for w in words if not w.startswith("-")]
            if files and not any(o in ("-a", "--append") or (not o.startswith("--") and "a" in o) for o in options):
                targets.append(files[0])
    return [p for t in targets if t != "/dev/null" and (p := _virtual(t))]


RETRY_MAY_SUCCEED = "retry_may_succeed"  # a refusal's artifact key: the same call may now go through
SHOWN_LINES = 40  # a refused edit of a file this short shows its content (and counts as reading it)
SHOWN_BYTES = 2000


def refusal(path: str, changed: bool, shown: str | None = None) -> str:
    """What the model reads when an edit is refused; ``shown``: the file's numbered lines, shown
    with the refusal (then reading it again is not needed)."""
    why = "it changed since you last read it" if changed else "you have not read it in this conversation"
    if shown is not None:
        return (
            f"Error: refused to change {path}: the file exists and {why}. Nothing was written. It holds now:\n"
            f"{shown}\nYou have read it now: make your change again from what it holds (str_replace for a part, "
            "or write_file with the whole new content)."
        )
    return (
        f"Error: refused to change {path}: the file exists and {why}. Read it first with "
        f"read_file (path {path!r}), then edit it with str_replace (or write_file with the whole "
        "new content). Nothing was written."
    )


def numbered(text: str) -> str | None:
    """``text`` numbered as read_file shows it, or None when it is too long to show with a
    refusal (:data:`SHOWN_LINES`, :data:`SHOWN_BYTES`) or not text."""
    lines = text.splitlines()
    if len(lines) > SHOWN_LINES or len(text.encode("utf-8", "surrogateescape")) > SHOWN_BYTES or "\x00" in text:
        return None
    return "\n".join(numbered_line(n, line) for n, line in enumerate(lines, 1))


def current_fingerprint(sandbox: Any, path: str) -> str | None:
    """The fingerprint of ``path`` now (size and mtime where the files are on this host, else a
    hash of the content; ``EMPTY`` for a file that holds nothing), or None when it does not exist
    or cannot be read."""
    try:
        if isinstance(sandbox, HostBackedSandbox):
            st = sandbox.files.stat(path, follow=False)
            if st is None or not stat.S_ISREG(st.st_mode):
                return None
            if st.st_size <= SMALL and holds_nothing(sandbox.read_text(path)):
                return EMPTY
            return f"{st.st_size}:{st.st_mtime_ns}"
        if not sandbox.exists(path):
            return None
        text = sandbox.read_text(path)
        return EMPTY if holds_nothing(text) else fingerprint(text)
    except Exception:  # noqa: BLE001 - unreadable (binary, too large): the tool reports it
        return None


def edit_refused(files_read: Mapping[str, str] | None, sandbox: Any, path: str) -> bool:
    """Whether read before write would refuse an edit (``write_file``, ``str_replace``) of the
    virtual ``path`` now: it holds something and the agent has not seen this content of it
    (``files_read``, the state the middleware keeps). The completion check asks this to plan
    a ``read_file`` before an edit, from the same state the refusal comes from."""
    now = current_fingerprint(sandbox, path)
    if now is None or now == EMPTY:
        return False
    return (files_read or {}).get(path) != now


class ReadBeforeWriteMiddleware(AgentMiddleware):
    """Refuse ``write_file``/``str_replace`` on an existing file the agent has not read."""

    state_schema = ReadState

    def __init__(self, provider: SandboxProvider) -> None:
        """``provider`` gives the thread's sandbox, to fingerprint files."""
        super().__init__()
        self.provider = provider

    def _current(self, request: ToolCallRequest, path: str) -> str | None:
        """The fingerprint of ``path`` now in the run's sandbox (see :func:`current_fingerprint`)."""
        try:
            sandbox = self.provider.acquire(thread_id_of(request.runtime))
        except Exception:  # noqa: BLE001 - no sandbox: the tool reports it
            return None
        return current_fingerprint(sandbox, path)

    @staticmethod
    def _edited(request: ToolCallRequest) -> str | None:
        """The virtual path a replacing edit (``write_file`` without ``append``, ``str_replace``)
        is about to change under ``/mnt/user-data``, or None (no file to look at: decided from the
        call alone, without touching a file)."""
        call = request.tool_call
        args = call.get("args") or {}
        if call["name"] not in ("write_file", "str_replace") or (call["name"] == "write_file" and args.get("append")):
            return None
        path = _virtual(args.get("path"))
        if path is None or not path.startswith(USER_DATA_ROOT + "/"):
            return None  # skills are read-only: the tool itself says so
        return path

    def _check(self, request: ToolCallRequest) -> ToolMessage | Command | None:
        """A refusal for a blind edit (with the file's content and its reading recorded, for a
        short file), or None to let the call run."""
        path = self._edited(request)
        if path is None:
            return None
        call = request.tool_call
        now = self._current(request, path)
        if now is None or now == EMPTY:
            return None  # new or empty: nothing to lose
        seen = (request.state or {}).get("files_read", {}).get(path)
        if seen == now:
            return None
        shown = self._small_text(request, path, now)
        refused = ToolMessage(
            content=refusal(path, changed=seen is not None, shown=shown),
            tool_call_id=call["id"],
            name=call["name"],
            status="error",
            artifact={RETRY_MAY_SUCCEED: True} if shown is not None else None,
        )
        if shown is None:
            return refused
        return Command(update={"messages": [refused], "files_read": {path: now}})

    def _small_text(self, request: ToolCallRequest, path: str, now: str) -> str | None:
        """``path`` numbered (:func:`numbered`) when it is short text that still has the
        fingerprint ``now`` once read (so what is shown is what counts as read), else None."""
        try:
            sandbox = self.provider.acquire(thread_id_of(request.runtime))
            text = sandbox.read_text(path)
        except Exception:  # noqa: BLE001 - unreadable (binary, gone): the refusal says to read it
            return None
        shown = numbered(text)
        return shown if shown is not None and current_fingerprint(sandbox, path) == now else None

    def _touched(self, request: ToolCallRequest, artifact: Any = None) -> list[str]:
        """Paths whose content the agent has now seen (read, printed, written or edited): for a
        command also the files it created (its artifact's ``files_changed``), for a sub-agent
        (``task``) the files it wrote (its own read before write made it read what it edited)."""
        call = request.tool_call
        args = call.get("args") or {}
        if call["name"] in ("read_file", "write_file", "str_replace"):
            path = _virtual(args.get("path"))
            return [path] if path else []
        if call["name"] == "bash" and isinstance(args.get("command"), str):
            changed = artifact.get("files_changed") if isinstance(artifact, dict) else None
            changes = [
                (p, c.get("action")) for c in changed or () if isinstance(c, dict) and (p := _virtual(c.get("path")))
            ]
            written = written_paths(args["command"])
            if isinstance(changed, list) and not artifact.get("files_changed_incomplete"):  # type: ignore[union-attr]  # artifact is a dict when changed is a list (read from it above)
                made = {p for p, action in changes if action in ("created", "modified")}
                written = [p for p in written if p in made]  # a redirection that ran
            created = [p for p, action in changes if action == "created" and not p.startswith(UPLOADS + "/")]
            return printed_paths(args["command"]) + written + created
        if call["name"] == "task" and isinstance(artifact, dict):
            seen = [w for r in artifact.get("results") or () if isinstance(r, dict) for w in r.get("files_seen") or ()]
            return [p for w in seen if (p := _virtual(w))]
        return []

    @staticmethod
    def _appended(request: ToolCallRequest) -> str | None:
        """The virtual path an append (``write_file`` with ``append``) writes to, or None."""
        args = request.tool_call.get("args") or {}
        if request.tool_call["name"] != "write_file" or not args.get("append"):
            return None
        return _virtual(args.get("path"))

    def _unseen_append(self, request: ToolCallRequest) -> str | None:
        """The path of an append (``write_file`` with ``append``) to a file that holds something
        now: after it the agent still has not seen what was there."""
        path = self._appended(request)
        return path if path and self._current(request, path) not in (None, EMPTY) else None

    def _shown(self, request: ToolCallRequest, result: Any, unseen: str | None = None) -> list[str]:
        """The paths whose fingerprints :meth:`_record` takes after ``result`` (not ``unseen``):
        none for a failed call or one that showed or changed no file (decided without a file)."""
        if not isinstance(result, ToolMessage) or result.status == "error":
            return []
        return [p for p in self._touched(request, result.artifact) if p != unseen]

    def _record(
        self, request: ToolCallRequest, result: Any, unseen: str | None = None, shown: list[str] | None = None
    ) -> Any:
        """``result`` plus the fingerprints of the files it showed or changed (not ``unseen``);
        ``shown``: those paths, when :meth:`_shown` already listed them."""
        shown = self._shown(request, result, unseen) if shown is None else shown
        seen = {p: f for p in shown if (f := self._current(request, p))}
        if not seen:
            return result
        return Command(update={"messages": [result], "files_read": seen})

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Any]) -> Any:
        """Refuse a blind edit; otherwise run the tool and record what it showed."""
        refused = self._check(request)
        if refused is not None:
            return refused
        unseen = self._unseen_append(request)
        return self._record(request, handler(request), unseen)

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[Any]]
    ) -> Any:
        """Async twin of :meth:`wrap_tool_call`. File checks run on the file pool, on the run's
        user's slots, and only for calls that have a file to look at: which ones is decided from
        the call and its result on the event loop (a call such as ``ls`` took three trips to the
        pool that found nothing to do)."""
        user = pools.user_of(getattr(request.runtime, "config", None))
        if self._edited(request) is not None:
            refused = await pools.run(pools.FILES, user, self._check, request)
            if refused is not None:
                return refused
        unseen = await pools.run(pools.FILES, user, self._unseen_append, request) if self._appended(request) else None
        result = await handler(request)
        shown = self._shown(request, result, unseen)
        if not shown:
            return result
        return await pools.run(pools.FILES, user, self._record, request, result, unseen, shown)
