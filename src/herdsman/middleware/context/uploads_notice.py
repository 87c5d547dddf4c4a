"""Tell the model what the user uploaded since the last turn: path, size, and a short preview.

The web UI uploads a file into ``/mnt/user-data/uploads`` and then sends only what the user
typed ("what is the average price?"). Without this the model never learns the file is there: it
invented a URL and tried to fetch it. So at the start of each run the uploads folder is compared
with what earlier runs of the thread already announced (kept in the thread state), and the new
or changed files are described under the user's message, as the model sees it:

    <uploaded_files>
    The user uploaded these files for this message (read them from these paths):
    - /mnt/user-data/uploads/sales.csv (1.2 KB, 41 lines). First lines:
        region,month,amount
        ...
    </uploaded_files>

The stored message is not changed (the UI shows what the user typed); the notice is kept in the
state by message id and added to the model's view of that message on every call, so it stays in
place for the rest of the thread. Files a command of the agent wrote into uploads are announced
too, on the next turn; that is harmless.

The folder is looked at by the first model call of a run (the user's message has no answer yet),
not by a ``before_agent`` hook: a hook is a graph node, a step and a checkpoint that every run
paid even with nothing to announce. What the scan finds goes into the state with the model call's
own update (an ``ExtendedModelResponse`` command); with nothing new it writes nothing.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, NotRequired, cast

from langchain.agents.middleware import AgentState, ExtendedModelResponse, ModelRequest, ModelResponse
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.types import Command

from herdsman import pools
from herdsman.logs import get_logger
from herdsman.middleware.rewrite import RequestRewriteMiddleware
from herdsman.sandbox.base import UPLOADS, HostBackedSandbox, SandboxProvider
from herdsman.sandbox.snapshot import take_snapshot
from herdsman.turns.turn import run_sandbox, run_user, this_run

log = get_logger(__name__)

MAX_FILES = 20
PREVIEW_LINES = 5
PREVIEW_CHARS = 600
COUNT_LINES_BELOW = 2 * 1024 * 1024
TEXT_SUFFIXES = {
    ".csv",
    ".tsv",
    ".txt",
    ".md",
    ".json",
    ".jsonl",
    ".yaml",
    ".yml",
    ".xml",
    ".html",
    ".log",
    ".py",
    ".js",
    ".ts",
    ".sql",
    ".ini",
    ".toml",
    ".cfg",
    ".sh",
    ".r",
    ".tex",
}


class UploadsState(AgentState):
    """``uploads_seen``: path -> [size, mtime] announced; ``upload_notices``: message id -> notice
    (both merged with ``|``: new keys win; private: checkpointed, never shown to clients)."""

    uploads_seen: NotRequired[Annotated[dict[str, list[int]], PrivateStateAttr, operator.or_]]
    upload_notices: NotRequired[Annotated[dict[str, str], PrivateStateAttr, operator.or_]]


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
"""Control characters in a file name (a newline could fake the end of the notice)."""


def human_size(n: int) -> str:
    """``n`` bytes as B, KB or MB."""
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / 1024 / 1024:.1f} MB"


def describe(sandbox: HostBackedSandbox, path: str, size: int) -> str:
    """One file's line in the notice: path, size, line count and first lines for text files."""
    suffix = path[path.rfind(".") :].lower() if "." in path.rsplit("/", 1)[-1] else ""
    line = f"- {_CONTROL.sub('?', path)} ({human_size(size)}"
    if suffix not in TEXT_SUFFIXES or size == 0:
        return line + ")"
    try:
        head = sandbox.files.read_bytes(path, min(size, COUNT_LINES_BELOW)).decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - unreadable now (removed, too large): the path is enough
        return line + ")"
    if size <= COUNT_LINES_BELOW:
        line += f", {head.count(chr(10)) + (0 if head.endswith(chr(10)) else 1)} lines"
    first = head[:PREVIEW_CHARS].splitlines()[:PREVIEW_LINES]
    return line + "). First lines:\n" + "\n".join(f"    {row}" for row in first)


def build_notice(sandbox: HostBackedSandbox, files: dict[str, tuple[int, int]]) -> str:
    """The ``<uploaded_files>`` block for ``files`` (path -> (size, mtime))."""
    names = sorted(files)
    rows = [describe(sandbox, p, files[p][0]) for p in names[:MAX_FILES]]
    if len(names) > MAX_FILES:
        rows.append(f"- ... and {len(names) - MAX_FILES} more in {UPLOADS} (list them with ls)")
    return (
        "<uploaded_files>\nThe user uploaded these files for this message (read them from these paths):\n"
        + "\n".join(rows)
        + "\n</uploaded_files>"
    )


_NOTICE = re.compile(r"<uploaded_files>.*?</uploaded_files>", re.DOTALL)  # from its tag: linear


def without_uploads_notice(text: str) -> str:
    """``text`` without the ``<uploaded_files>`` block the notice put after it (the user's words)."""
    return _NOTICE.sub("", text).rstrip() if "<uploaded_files>" in text else text


def with_notice(message: HumanMessage, notice: str) -> HumanMessage:
    """A copy of ``message`` with ``notice`` after its text (other content blocks kept)."""
    if isinstance(message.content, str):
        content: Any = f"{message.content}\n\n{notice}"
    else:
        content = [*message.content, {"type": "text", "text": notice}]
    return message.model_copy(update={"content": content})


def unanswered(state: dict[str, Any]) -> bool:
    """Whether the user's last message has no reply of the model yet (the run's first model call),
    and no notice: only then is the uploads folder looked at."""
    last, after = this_run(state.get("messages") or [])
    if last is None or not last.id or last.id in (state.get("upload_notices") or {}):
        return False
    return not any(isinstance(m, AIMessage) for m in after)


def with_update(response: ModelResponse | AIMessage, update: dict[str, Any] | None) -> Any:
    """The model call's result, carrying ``update`` into the state when there is one."""
    if update is None:
        return response
    if isinstance(response, AIMessage):
        response = ModelResponse(result=[response])
    return ExtendedModelResponse(model_response=response, command=Command(update=update))


class UploadsNoticeMiddleware(RequestRewriteMiddleware):
    """Announce new uploads under the user's message (see the module docstring)."""

    state_schema = UploadsState

    def __init__(self, provider: SandboxProvider) -> None:
        """``provider`` gives the thread's sandbox, whose uploads folder is read."""
        super().__init__()
        self.provider = provider

    def _scan(self, state: dict[str, Any]) -> dict[str, Any] | None:
        last, _ = this_run(state.get("messages") or [])
        if last is None or not last.id:
            return None
        try:
            sandbox = run_sandbox(self.provider)
            if sandbox is None:
                return None
            snapshot = take_snapshot(sandbox.files, UPLOADS, limit=500)
        except Exception as exc:  # noqa: BLE001 - no notice is better than no run
            log.warning("uploads_scan_failed", error=str(exc))
            return None
        seen = state.get("uploads_seen") or {}
        new = {p: st for p, st in snapshot.entries.items() if list(st) != list(seen.get(p, []))}
        if not new:
            return None
        return {
            "uploads_seen": {p: list(st) for p, st in new.items()},
            "upload_notices": {last.id: build_notice(sandbox, new)},
        }

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        """At the run's first model call: note the files uploaded since the last run; on every
        call, show the notices under their messages."""
        state = cast(dict[str, Any], request.state or {})
        update = self._scan(state) if unanswered(state) else None
        return with_update(handler(self._announce(request, update)), update)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        """Async twin of :meth:`wrap_model_call` (the folder is read on the file pool, on the run's
        user's slots, not on asyncio's shared default pool)."""
        state = cast(dict[str, Any], request.state or {})
        update = await pools.run(pools.FILES, run_user(), self._scan, state) if unanswered(state) else None
        return with_update(await handler(self._announce(request, update)), update)

    def _announce(self, request: ModelRequest, update: dict[str, Any] | None) -> ModelRequest:
        """:meth:`rewrite`, with the notice this call just made (not in the state yet)."""
        if update is None:
            return self.rewrite(request)
        state = cast(dict[str, Any], request.state or {})
        notices = {**(state.get("upload_notices") or {}), **update["upload_notices"]}
        return self.rewrite(request.override(state=cast(Any, {**state, "upload_notices": notices})))

    def rewrite(self, request: ModelRequest) -> ModelRequest:
        """Each human message with a notice, as the model sees it, carries it under its text."""
        notices = cast(dict[str, Any], request.state or {}).get("upload_notices") or {}
        if not notices:
            return request
        messages = [
            with_notice(m, notices[m.id]) if isinstance(m, HumanMessage) and m.id in notices else m
            for m in request.messages
        ]
        return request.override(messages=messages)
