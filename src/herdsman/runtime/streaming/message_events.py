"""An AI message as the content-block events of the thread streaming protocol.

``message-start``, then for each content block ``content-block-start``, ``content-block-delta``
per streamed slice and ``content-block-finish``, then ``message-finish``: the ``messages``
channel of ``POST /threads/{id}/stream/events``. LangChain converts messages itself
(``langchain_core.language_models._compat_bridge``): :func:`whole_message_events` is its
``message_to_events``; :class:`StreamedMessage` drives the same steps as its
``chunks_to_events`` one chunk at a time, because the chunks of a run reach us one by one
from the stream bridge while that function pulls them from an iterator it owns.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import _compat_bridge as lc
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage


def message_of(data: Any) -> BaseMessage | None:
    """The AI message (or chunk) a ``messages`` stream event carries as JSON, else None."""
    if not isinstance(data, dict):
        return None
    if data.get("type") == "AIMessageChunk":
        return AIMessageChunk.model_validate(data)
    if data.get("type") == "ai":
        return AIMessage.model_validate(data)
    return None


def whole_message_events(message: BaseMessage) -> list[dict[str, Any]]:
    """The events of a message that arrived whole (not streamed)."""
    return [dict(event) for event in lc.message_to_events(message)]


class StreamedMessage:
    """The events of one AI message streamed chunk by chunk."""

    def __init__(self) -> None:
        self.started = False
        self.finished = False
        self._blocks: dict[Any, tuple[int, Any]] = {}
        self._usage: Any = None
        self._response_metadata: dict[str, Any] = {}

    def feed(self, chunk: AIMessageChunk) -> list[dict[str, Any]]:
        """The events one more chunk adds (``message-start`` first)."""
        events: list[dict[str, Any]] = []
        self._response_metadata.update(chunk.response_metadata or {})
        if not self.started:
            self.started = True
            events.append(dict(lc._build_message_start(chunk, None)))
        for key, block in lc._iter_protocol_blocks(chunk):
            if key not in self._blocks:
                index = len(self._blocks)
                self._blocks[key] = (index, dict(block))
                events.append({"event": "content-block-start", "index": index, "content": lc._start_skeleton(block)})
            else:
                index, so_far = self._blocks[key]
                self._blocks[key] = (index, lc._accumulate(so_far, block))
            delta = lc._to_content_delta(block)
            if delta is not None:
                events.append({"event": "content-block-delta", "index": index, "delta": delta})
        if chunk.usage_metadata:
            self._usage = lc._accumulate_usage(self._usage, chunk.usage_metadata)
        return events

    def finish(self) -> list[dict[str, Any]]:
        """``content-block-finish`` for each block, then ``message-finish`` (nothing twice)."""
        if not self.started or self.finished:
            return []
        self.finished = True
        events = [dict(lc._finalize_and_build_finish(index, block)) for index, block in self._blocks.values()]
        events.append(dict(lc._build_message_finish(usage=self._usage, response_metadata=self._response_metadata)))
        return events
