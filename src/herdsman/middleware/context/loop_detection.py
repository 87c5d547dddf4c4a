"""Notice the model making the same tool call again and again: warn it, then stop the run cleanly.

A model stuck in a loop repeats one call (same tool, same arguments, or arguments that differ
only in spaces, blank lines or a comment: :func:`~herdsman.models.near_repeat.call_key`) after
each identical result.
When the latest ``warn_after`` calls in a row were the same, the next model request carries a
harness note telling the model to change course (in the request only; the thread is unchanged).
When the model still asks for that call, making ``stop_after`` in a row, the reply is replaced by
a plain answer saying the run stopped and why: it has no tool calls, so the run ends and no tool
call is left without a result.

A call that repeats the previous tool call (so normalized), after that call failed, is not run again
(unless the failure said a second try may go through: read before write's refusal that showed the
file, :data:`~herdsman.middleware.read_before_write.RETRY_MAY_SUCCEED`): its
result is the earlier failure and a request to change the call (from the benchmark: a chart
command failed with "no column 'total'; the columns are: date, region, amount", the model said so,
was told to fix the cause, and sent the same command again, twice). Something must differ for a
different outcome, and a call in between (an edit, then the same test) makes it run as usual.

Costs a backwards scan over the last few messages per model call; stops at the first difference.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain.tools.tool_node import ToolCallRequest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

from herdsman.language.user_words import say
from herdsman.logs import get_logger
from herdsman.middleware.completion.rules import failed, failure_detail, tool_results
from herdsman.middleware.read_before_write import RETRY_MAY_SUCCEED
from herdsman.middleware.tool_gate import ToolGateMiddleware
from herdsman.models.near_repeat import call_key
from herdsman.turns.turn import this_run, turn_language

log = get_logger(__name__)


def call_signature(message: AIMessage) -> str | None:
    """A canonical string for the tool calls of ``message`` (order-insensitive; arguments that
    differ only in spaces or comments are the same, see :func:`~herdsman.models.near_repeat.call_key`), or None."""
    if not message.tool_calls:
        return None
    calls = sorted(call_key(c["name"], c["args"]) for c in message.tool_calls)
    return "\n".join(calls)


def repeat_streak(messages: Sequence[AnyMessage]) -> tuple[str | None, int]:
    """``(signature, count)``: how many of the latest model turns made the same tool calls in a row.

    The streak ends at a different call, a plain answer or a message from the user.
    """
    signature: str | None = None
    count = 0
    for message in reversed(messages):
        if isinstance(message, ToolMessage):
            continue
        if not isinstance(message, AIMessage):
            break
        current = call_signature(message)
        if current is None or (signature is not None and current != signature):
            break
        signature = current
        count += 1
    return signature, count


def describe(message: AIMessage) -> str:
    """The repeated call, short, for the warning and the stop message."""
    call = message.tool_calls[0]
    args = json.dumps(call["args"], ensure_ascii=False, default=str)
    if len(args) > 120:
        args = args[:117] + "..."
    more = f" and {len(message.tool_calls) - 1} more" if len(message.tool_calls) > 1 else ""
    return f"{call['name']} {args}{more}"


REFUSED = "Not run again: this exact "
SANDBOX_TOOLS = frozenset({"bash", "read_file", "write_file", "str_replace", "glob", "grep", "ls"})
"""Tools whose failure a repeat reproduces: they act on the sandbox only."""


def repeated_failure(messages: Sequence[AnyMessage], call: dict[str, Any]) -> ToolMessage | None:
    """The failed result of the previous tool call when ``call`` repeats it exactly, else None.

    ``messages`` end with the model turn that makes ``call``; the previous tool call is the
    latest one before that turn in this run (harness notes and answers in between do not count;
    a message from the user does: it may have changed what the call meets, or decided on it).
    When that result was itself a refused repeat, the failure returned is the first one."""
    if call["name"] not in SANDBOX_TOOLS:
        return None  # a network tool may fail once and work the next time
    wanted = call_key(call["name"], call.get("args"))
    _, run = this_run(messages)
    turns = [m for m in run if isinstance(m, AIMessage) and m.tool_calls]
    if len(turns) < 2:
        return None
    results = tool_results(run)
    found: ToolMessage | None = None
    for previous in reversed(turns[:-1]):  # back through refused repeats to the failure itself
        same = [c for c in previous.tool_calls if call_key(c["name"], c.get("args")) == wanted]
        result = next((results[c["id"] or ""] for c in same if c.get("id") in results), None)
        if result is None or not failed(result):
            break
        if isinstance(result.artifact, dict) and result.artifact.get(RETRY_MAY_SUCCEED):
            break  # the failure itself changed what a second try meets
        found = result
        if not result.text.startswith(REFUSED):
            break
    return found


def _last_ai(messages: Sequence[AnyMessage]) -> AIMessage | None:
    return next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)


class LoopDetectionMiddleware(ToolGateMiddleware):
    """Warn after ``warn_after`` identical tool calls in a row; stop at ``stop_after`` (None: never)."""

    def __init__(self, warn_after: int | None = 3, stop_after: int | None = 5) -> None:
        """Thresholds count consecutive identical tool calls; ``None`` turns that step off."""
        super().__init__()
        self.warn_after = warn_after
        self.stop_after = stop_after

    def _prepare(self, request: ModelRequest) -> tuple[ModelRequest, str | None, int]:
        signature, streak = repeat_streak(request.messages)
        if self.warn_after and streak >= self.warn_after:
            last = _last_ai(request.messages)
            what = describe(last) if last is not None else "the same call"
            log.info("tool_call_loop_warning", call=what, times=streak)
            note = HumanMessage(
                content=(
                    f"[harness] You have made the same tool call ({what}) {streak} times in a row and got "
                    "the same kind of result. Do not repeat it: change the arguments, try another "
                    "approach, or answer with what you have."
                )
            )
            request = request.override(messages=[*request.messages, note])
        return request, signature, streak

    def _check(
        self, response: ModelResponse, signature: str | None, streak: int, messages: Sequence[AnyMessage] = ()
    ) -> ModelResponse:
        if not self.stop_after or signature is None or streak + 1 < self.stop_after:
            return response
        reply = next((m for m in response.result if isinstance(m, AIMessage)), None)
        if reply is None or call_signature(reply) != signature:
            return response
        what = describe(reply)
        log.warning("tool_call_loop_stopped", call=what, times=streak + 1)
        text = say("stop.loop", turn_language(messages), what=what, times=streak + 1)  # in the request's language
        return ModelResponse(result=[AIMessage(content=text, id=reply.id, usage_metadata=reply.usage_metadata)])

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        """Warn the model about a loop, and stop it when it goes on."""
        asked = request.messages  # before the warning (a human message of the harness's, in English)
        request, signature, streak = self._prepare(request)
        return self._check(handler(request), signature, streak, asked)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        """Async twin of :meth:`wrap_model_call`."""
        asked = request.messages
        request, signature, streak = self._prepare(request)
        return self._check(await handler(request), signature, streak, asked)

    @staticmethod
    def _refuse_repeat(request: ToolCallRequest) -> ToolMessage | None:
        """The refusal of a call that repeats the previous, failed one, or None to run it."""
        call = request.tool_call
        earlier = repeated_failure((request.state or {}).get("messages") or [], dict(call))
        if earlier is None:
            return None
        log.info("repeated_failed_call_refused", tool=call["name"])
        detail = failure_detail(earlier)
        return ToolMessage(
            content=(
                f"{REFUSED}{call['name']} call just failed with: {detail}. "
                "The same call gives the same failure. Change what the error points at (an argument, a "
                "name, a path), or do something else first."
            ),
            tool_call_id=call["id"],
            name=call["name"],
            status="error",
        )

    def refuse(self, request: ToolCallRequest) -> ToolMessage | None:
        """Refuse to repeat a call that just failed."""
        return self._refuse_repeat(request)
