"""What a stopped run had already said: the streamed words of the lead model's unfinished answer.

A run cancelled with ``action=interrupt`` while the model is streaming its answer would lose
those words: the model node never returns, so nothing is checkpointed. :class:`PartialAnswer`
watches the root graph's ``messages`` chunks and, on a stop, writes the words so far into the
thread as the agent's message, as the last node before the end, so the thread is left settled
(nothing pending) and the next turn sees what the user saw. LangGraph's own server drops them
(langgraph issue 5672); nothing in LangGraph does this, hence the small module.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.runnables import RunnableConfig
from langgraph.constants import END
from langgraph.graph.state import CompiledStateGraph

STOPPED = "stopped"  # response_metadata["finish_reason"] of a kept partial answer
_CALL_STARTS = ("{", "```json", "<tool_call", "<function")  # how small models begin a call as text


def last_node(graph: CompiledStateGraph) -> str | None:
    """The node with a plain edge to the end (the lead agent's last ``after_agent`` step)."""
    ends = [start for start, end in getattr(graph.builder, "edges", ()) if end == END]
    return ends[0] if len(ends) == 1 else None


class PartialAnswer:
    """The text of the root model call in progress; reset when a node of the root graph returns."""

    def __init__(self) -> None:
        self._id: str | None = None
        self._text: list[str] = []

    def see(self, namespace: tuple[str, ...], mode: str, chunk: Any) -> None:
        """Take one graph chunk (``astream`` with ``subgraphs=True``)."""
        if namespace:
            return
        if mode == "updates":
            self._id, self._text = None, []  # a node returned: what it said is checkpointed
        elif mode == "messages":
            message = chunk[0]
            if isinstance(message, AIMessageChunk) and not message.tool_call_chunks:
                if message.id != self._id:
                    self._id, self._text = message.id, []
                self._text.append(message.text)

    def message(self) -> AIMessage | None:
        """The words so far as an AI message, or None when there are none worth keeping (nothing,
        blank, or the start of a tool call written as text)."""
        text = "".join(self._text)
        if not text.strip() or text.lstrip().startswith(_CALL_STARTS):
            return None
        return AIMessage(content=text, id=self._id, response_metadata={"finish_reason": STOPPED})

    async def keep(self, graph: CompiledStateGraph, thread_id: str) -> bool:
        """Write the words so far into the thread; whether there were any to keep."""
        message = self.message()
        node = last_node(graph)
        if message is None or node is None:
            return False
        config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        await graph.aupdate_state(config, {"messages": [message]}, as_node=node)
        return True
