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
so does a file a command created, and a file a sub-agent (``task``) wrote: the lead's delegate
read before it wrote. Each read records a
fingerprint (size and modification time, taken by descriptor; a hash of the content where the
files are not on this host) in the thread state, so a file changed behind the agent's
back (by a command, a sub-agent, the user) must be read again. The state survives between runs
of a thread, in the checkpoint.
"""

from __future__ import annotations

import hashlib
import operator
import re
import shlex
import stat
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ToolCallRequest
from langchain_core.messages import ToolMessage
from langgraph.types import Command
from typing_extensions import NotRequired

from herdsman import pools
from herdsman.middleware.turn import holds_nothing
from herdsman.sandbox.base import USER_DATA_ROOT, HostBackedSandbox, SandboxError, SandboxProvider
from herdsman.sandbox.paths import normalize_virtual
from herdsman.sandbox.tools import thread_id_of

READERS = {"cat", "head", "tail", "nl", "less", "more", "bat"}


class ReadState(AgentState):
    """``files_read``: virtual path -> fingerprint of the content the agent last saw (merged with
    ``|``: later fingerprints win, parallel tool calls each add theirs)."""

    files_read: NotRequired[Annotated[dict[str, str], operator.or_]]


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


_REDIRECT = re.compile(r"(?<![>&\d])>\|?\s*([^\s;&|<>()]+)")
_TEE = re.compile(r"\btee\s+((?:-[^\s]+\s+)*)([^\s;&|<>()-][^\s;&|<>()]*)")


def written_paths(command: str) -> list[str]:
    """Virtual paths a ``bash`` command writes whole: the targets of ``>`` (not ``>>``) and of
    ``tee`` without ``-a``; a heredoc's body is not read (a ``>`` there is Python, not a
    redirection)."""
    head: list[str] = []
    for line in command.splitlines():
        head.append(line)
        if "<<" in line:
            break
    text = "\n".join(head)
    targets = [m.group(1) for m in _REDIRECT.finditer(text)]
    targets += [m.group(2) for m in _TEE.finditer(text) if "a" not in m.group(1).replace("--", "")]
    return [p for t in targets if t != "/dev/null" and (p := _virtual(t))]


def refusal(path: str, changed: bool) -> str:
    """What the model reads when an edit is refused."""
    why = "it changed since you last read it" if changed else "you have not read it in this conversation"
    return (
        f"Error: refused to change {path}: the file exists and {why}. Read it first with "
        f"read_file (path {path!r}), then edit it with str_replace (or write_file with the whole "
        "new content). Nothing was written."
    )


class ReadBeforeWriteMiddleware(AgentMiddleware):
    """Refuse ``write_file``/``str_replace`` on an existing file the agent has not read."""

    state_schema = ReadState

    def __init__(self, provider: SandboxProvider) -> None:
        """``provider`` gives the thread's sandbox, to fingerprint files."""
        super().__init__()
        self.provider = provider

    def _current(self, request: ToolCallRequest, path: str) -> str | None:
        """The fingerprint of ``path`` now (size and mtime where the files are on this host,
        else a hash of the content), or None when it does not exist or cannot be read."""
        try:
            sandbox = self.provider.acquire(thread_id_of(request.runtime))
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

    def _check(self, request: ToolCallRequest) -> ToolMessage | None:
        """A refusal for a blind edit, or None to let the call run."""
        call = request.tool_call
        args = call.get("args") or {}
        if call["name"] not in ("write_file", "str_replace") or (call["name"] == "write_file" and args.get("append")):
            return None
        path = _virtual(args.get("path"))
        if path is None or not path.startswith(USER_DATA_ROOT + "/"):
            return None  # skills are read-only: the tool itself says so
        now = self._current(request, path)
        if now is None or now == EMPTY:
            return None  # new or empty: nothing to lose
        seen = (request.state or {}).get("files_read", {}).get(path)
        if seen == now:
            return None
        return ToolMessage(content=refusal(path, changed=seen is not None), tool_call_id=call["id"], name=call["name"], status="error")

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
            created = [c["path"] for c in changed or () if isinstance(c, dict) and c.get("action") == "created"]
            return printed_paths(args["command"]) + written_paths(args["command"]) + [p for c in created if (p := _virtual(c))]
        if call["name"] == "task" and isinstance(artifact, dict):
            written = [w for r in artifact.get("results") or () if isinstance(r, dict) for w in r.get("files_written") or ()]
            return [p for w in written if (p := _virtual(w))]
        return []

    def _record(self, request: ToolCallRequest, result: Any) -> Any:
        """``result`` plus the fingerprints of the files it showed or changed."""
        if not isinstance(result, ToolMessage) or result.status == "error":
            return result
        seen = {p: f for p in self._touched(request, result.artifact) if (f := self._current(request, p))}
        if not seen:
            return result
        return Command(update={"messages": [result], "files_read": seen})

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Any]) -> Any:
        """Refuse a blind edit; otherwise run the tool and record what it showed."""
        refused = self._check(request)
        if refused is not None:
            return refused
        return self._record(request, handler(request))

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[Any]]
    ) -> Any:
        """Async twin of :meth:`wrap_tool_call` (file checks run on the file pool, on the run's user's slots)."""
        user = pools.user_of(getattr(request.runtime, "config", None))
        refused = await pools.run(pools.FILES, user, self._check, request)
        if refused is not None:
            return refused
        result = await handler(request)
        return await pools.run(pools.FILES, user, self._record, request, result)
