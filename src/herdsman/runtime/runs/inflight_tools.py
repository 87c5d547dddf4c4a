"""Tool calls that were in flight when the process executing a run died, settled before it resumes.

A run taken over by another worker goes on from its thread's last checkpoint, so the tools step
that was executing starts again: every tool call of the last AI message that has no result yet
would run a second time ("at least once"). That is harmless for a call whose second run changes
nothing more than the first (reading a file, listing, searching, fetching a page, writing a
whole file), and wrong for a command: ``bash`` in flight may have half done its work, and doing
it again silently can append twice, send twice, or undo what the first run did.

:func:`settle_inflight_tool_calls` is called on the checkpoint before the run resumes: each
unanswered call that is not known to be safe to repeat gets a ``ToolMessage`` (status error)
that tells the model the call was interrupted when the worker stopped and was not run again, so
it checks its effects and runs it again if needed; the calls safe to repeat are left unanswered,
and LangGraph runs them again. It writes with LangGraph's ``update_state`` as the node that
sent the tool calls (its edge then dispatches only the calls still unanswered), or as the tools
node when none is left (the agent goes on to the model). Results of calls that finished before
the crash (pending writes of the interrupted step) are written too, so they are not run again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from herdsman.logs import get_logger

log = get_logger(__name__)

TOOLS_NODE = "tools"
# tools whose second run with the same arguments leaves things as one run does (ask_clarification
# asks again, or takes the answer a resumed run brought: answering it as interrupted would lose it)
REPEATABLE_TOOLS = frozenset(
    {"read_file", "ls", "glob", "grep", "web_fetch", "web_search", "view_image", "ask_clarification"}
)
INTERRUPTED_NOTICE = (
    "The {tool} call was interrupted: the worker executing this run stopped while it was running, "
    "and the run was resumed by another worker, which did NOT run it again. It may have done part or "
    "all of its work. Check its effects (files it writes, output it leaves) and run it again if needed."
)


def is_repeatable(call: Mapping[str, Any]) -> bool:
    """Whether running the tool call a second time is safe: a read-only tool, or ``write_file``
    that replaces a whole file (appending twice is not)."""
    name = call.get("name")
    if name == "write_file":
        return not (call.get("args") or {}).get("append")
    return name in REPEATABLE_TOOLS


def interrupted_message(call: Mapping[str, Any]) -> ToolMessage:
    """The result given to a call that was in flight and is not run again."""
    return ToolMessage(
        content=INTERRUPTED_NOTICE.format(tool=call.get("name") or "tool"),
        tool_call_id=call["id"],
        name=call.get("name"),
        status="error",
    )


def _last_ai(messages: list[BaseMessage]) -> AIMessage | None:
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            return message
    return None


def _finished_results(snapshot: Any) -> list[ToolMessage]:
    """Results of tool calls of the interrupted step that finished before it stopped (their
    writes were saved with the checkpoint)."""
    results: list[ToolMessage] = []
    for task in snapshot.tasks:
        if task.name == TOOLS_NODE and isinstance(task.result, Mapping):
            results += [m for m in task.result.get("messages") or () if isinstance(m, ToolMessage)]
    return results


async def settle_inflight_tool_calls(graph: Any, config: dict[str, Any]) -> list[str]:
    """Answer the in-flight tool calls of the thread in ``config`` (the run's graph config) that
    are not safe to repeat (see the module docstring); returns their tool call ids (empty when the thread was not in
    the middle of a tools step)."""
    snapshot = await graph.aget_state(config)
    if TOOLS_NODE not in snapshot.next:
        return []
    messages = list((snapshot.values or {}).get("messages") or ())
    ai = _last_ai(messages)
    if ai is None or not ai.tool_calls:
        return []
    finished = _finished_results(snapshot)
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)} | {m.tool_call_id for m in finished}
    unanswered = [c for c in ai.tool_calls if c.get("id") and c["id"] not in answered]
    interrupted = [c for c in unanswered if not is_repeatable(c)]
    if not interrupted:
        return []  # every call left is safe to repeat: LangGraph runs them again as it resumes
    rerun = len(unanswered) - len(interrupted)
    update = {"messages": [*finished, *(interrupted_message(c) for c in interrupted)]}
    # with calls left to re-run: as the node that sent the calls (inferred by LangGraph), whose
    # edge sends the unanswered ones again; with none left: as the tools step, which goes on to the model
    # on the head, with the run's own config, so the new checkpoint is the run's (its run_id) as the loop's are
    head = {**config, "configurable": {**config["configurable"], **snapshot.config["configurable"]}}
    await graph.aupdate_state(head, update, as_node=None if rerun else TOOLS_NODE)
    ids = [c["id"] or "" for c in interrupted]
    log.warning("tool_calls_interrupted", tool_call_ids=ids, tools=[c.get("name") for c in interrupted], rerun=rerun)
    return ids
