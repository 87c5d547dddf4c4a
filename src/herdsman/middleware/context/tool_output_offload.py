"""Save a long tool result to a file in the workspace; keep only its head, its tail and the path.

A 20 KB build log read once stays in every later model request. Past
``context.offload_tool_output_chars`` characters, the full text is written to
``/mnt/user-data/workspace/.tool-outputs/<tool>-<call id>.txt`` through the thread's sandbox and
the conversation keeps a preview: the first ``preview_head_chars``, the last
``preview_tail_chars``, and how to read the rest (read_file with line ranges, grep). Reading such
a file back is previewed again but not saved a second time. When the file cannot be written the
preview says so, and the run goes on.

Costs one length check per tool call below the threshold.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest

from herdsman import pools
from herdsman.logs import get_logger
from herdsman.sandbox.base import WORKSPACE, SandboxProvider
from herdsman.sandbox.paths import normalize_virtual
from herdsman.sandbox.tools import thread_id_of

log = get_logger(__name__)

OFFLOAD_DIR = f"{WORKSPACE}/.tool-outputs"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def offload_path(tool: str, call_id: str) -> str:
    """The virtual path where one tool call's full result is kept."""
    stem = _UNSAFE.sub("_", f"{tool}-{call_id}")[:120] or "result"
    return f"{OFFLOAD_DIR}/{stem}.txt"


def preview(text: str, head: int, tail: int, note: str) -> str:
    """``text`` cut to its first ``head`` and last ``tail`` characters, at line ends when close, with ``note``."""
    start = text[:head]
    cut = start.rfind("\n")
    if cut > head // 2:
        start = start[:cut]
    end = text[len(text) - tail :] if tail else ""
    nl = end.find("\n")
    if 0 <= nl < tail // 2:
        end = end[nl + 1 :]
    omitted = len(text) - len(start) - len(end)
    middle = f"\n\n[... {omitted} characters omitted. {note}]\n\n"
    return f"{start}{middle}{end}" if end else f"{start}{middle}".rstrip("\n")


def _text(message: ToolMessage) -> str:
    return message.content if isinstance(message.content, str) else message.text


def _reads_offloaded(request: ToolCallRequest) -> bool:
    path = (request.tool_call.get("args") or {}).get("path")
    if request.tool_call.get("name") != "read_file" or not isinstance(path, str):
        return False
    try:
        return normalize_virtual(path).startswith(OFFLOAD_DIR + "/")
    except Exception:  # noqa: BLE001 - an invalid path is the tool's to report
        return False


class ToolOutputOffloadMiddleware(AgentMiddleware):
    """Replace tool results longer than ``threshold`` by a preview and a file (see module docstring)."""

    def __init__(self, provider: SandboxProvider | None, threshold: int, head: int = 2_000, tail: int = 1_000) -> None:
        """``provider`` gives the thread's sandbox to save into (None: preview without a file)."""
        super().__init__()
        self.provider = provider
        self.threshold = threshold
        self.head = head
        self.tail = tail

    def _needs(self, result: Any) -> bool:
        return isinstance(result, ToolMessage) and len(_text(result)) > self.threshold

    def _save(self, request: ToolCallRequest, text: str) -> str | None:
        """Write ``text`` to the thread's workspace; the virtual path, or None when it failed."""
        if self.provider is None:
            return None
        call = request.tool_call
        path = offload_path(call.get("name") or "tool", call.get("id") or "call")
        try:
            self.provider.acquire(thread_id_of(request.runtime)).write_text(path, text)
        except Exception as exc:  # noqa: BLE001 - a failed save must not fail the tool call
            log.warning("tool_output_offload_failed", tool=call.get("name"), error=str(exc))
            return None
        return path

    def _shrink(self, result: ToolMessage, path: str | None, reread: bool) -> ToolMessage:
        text = _text(result)
        lines = text.count("\n") + 1
        if reread:
            note = "This is a saved tool output; read a smaller range with read_file start_line/end_line, or grep it"
        elif path:
            note = (
                f"The full output ({len(text)} characters, {lines} lines) is saved in {path}; read parts of "
                "it with read_file start_line/end_line, or search it with grep"
            )
        else:
            note = "The full output could not be saved; run the tool again with a narrower request"
        return result.model_copy(update={"content": preview(text, self.head, self.tail, note)})

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Any]) -> Any:
        """Run the tool; shrink its result when it is too long."""
        result = handler(request)
        if not self._needs(result):
            return result
        reread = _reads_offloaded(request)
        path = None if reread else self._save(request, _text(result))
        return self._shrink(result, path, reread)

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[Any]]
    ) -> Any:
        """Async twin of :meth:`wrap_tool_call` (the file is written on the file pool, on the run's user's slots)."""
        result = await handler(request)
        if not self._needs(result):
            return result
        reread = _reads_offloaded(request)
        path = (
            None
            if reread
            else await pools.run(
                pools.FILES, pools.user_of(getattr(request.runtime, "config", None)), self._save, request, _text(result)
            )
        )
        return self._shrink(result, path, reread)
