"""A bash call waiting for a human's approval shows the command that will run.

The bash tool reads ``outputs/...``, ``uploads/...`` and ``workspace/...`` in a command as the
virtual folders and rewrites them to absolute paths before it runs
(:func:`~herdsman.sandbox.virtual_folders.rewrite_command`), whatever directory the command
``cd``s to. Under ``tools.require_approval: [bash]`` the human approved the model's text, so
``cd /tmp/build && rm -rf outputs/*`` read as cleaning a scratch folder and ran as
``rm -rf /mnt/user-data/outputs/*``, the deliverables (a red-team finding). This middleware
rewrites the bash calls of the model's reply before the approval hook reads them (its
``after_model`` runs first: it is placed after ``HumanInTheLoopMiddleware``), so what the human
approves, what the conversation keeps and what runs are one command; the tool's own rewrite then
finds nothing left to change. It is added only when bash needs approval: elsewhere the reply is
kept as the model wrote it and no graph node is added to every step.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage

from herdsman.sandbox.virtual_folders import rewrite_command


def _rewritten(call: dict[str, Any]) -> dict[str, Any]:
    args = call.get("args") or {}
    if call.get("name") != "bash" or not isinstance(args.get("command"), str):
        return call
    return {**call, "args": {**args, "command": rewrite_command(args["command"])}}


class ApprovedCommandMiddleware(AgentMiddleware):
    """Rewrite the virtual-folder paths of the reply's bash calls before they are approved."""

    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """The model's reply with its bash commands as they will run (same id: it replaces the reply)."""
        messages = state.get("messages") or []
        reply = messages[-1] if messages else None
        if not isinstance(reply, AIMessage) or not reply.tool_calls:
            return None
        calls = [_rewritten(dict(c)) for c in reply.tool_calls]
        if calls == reply.tool_calls:
            return None
        return {"messages": [reply.model_copy(update={"tool_calls": calls})]}

    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Async twin of :meth:`after_model`."""
        return self.after_model(state, runtime)
