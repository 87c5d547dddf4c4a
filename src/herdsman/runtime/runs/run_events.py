"""Turn LangGraph ``astream`` chunks into the events LangGraph servers send over SSE.

API stream modes map to graph stream modes: ``messages-tuple`` and ``messages`` both read the
graph's ``messages`` mode; the others have the same name. Events of a subgraph are named
``<mode>|<namespace>`` (``values|tools:call_1``). ``messages`` (the older mode) is rebuilt
here as ``messages/metadata``, ``messages/partial`` and ``messages/complete``, as LangGraph's
server does, because LangGraph itself only streams message chunks: the first time a message is
seen its metadata, then the message so far as ``messages/partial`` for each streamed chunk (a
streamed message never gets a ``complete``), or ``messages/complete`` for a whole message (a tool
result). ``debug`` checkpoints carry ``checkpoint`` and ``parent_checkpoint`` as the server adds
them. ``events`` are LangChain's ``astream_events`` (v2), see :func:`stream_with_events`.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterable
from contextlib import aclosing
from typing import Any

from langchain_core.messages import BaseMessage, BaseMessageChunk, message_chunk_to_message

from herdsman.runtime.streaming.serde import JsonText, encoded, to_jsonable

API_STREAM_MODES = (
    "values",
    "updates",
    "messages-tuple",
    "messages",
    "custom",
    "debug",
    "events",
    "tasks",
    "checkpoints",
)
GRAPH_MODE = {"messages-tuple": "messages"}
INTERRUPT_KEY = "__interrupt__"


async def stream_with_events(
    graph: Any, graph_input: Any, config: dict[str, Any], kwargs: dict[str, Any]
) -> AsyncIterator[tuple[tuple[str, ...], str, Any]]:
    """What ``graph.astream(..., subgraphs=True)`` yields, plus ``((), "events", event)`` for each
    other LangChain callback event: how LangGraph's server serves ``stream_mode="events"`` (the
    root graph's own ``on_chain_stream`` events are the stream chunks, not events)."""
    root = uuid.uuid4()
    events = graph.astream_events(graph_input, {**config, "run_id": root}, version="v2", **kwargs)
    async with aclosing(events):  # closed with this one (a stopped run's graph saves what it began to)
        async for event in events:
            if "langsmith:hidden" in (event.get("tags") or ()):
                continue
            if event["event"] == "on_chain_stream" and event["run_id"] == str(root):
                namespace, mode, chunk = event["data"]["chunk"]
                yield tuple(namespace), mode, chunk
            else:
                yield (), "events", event


def checkpoint_of(config: Any) -> dict[str, Any] | None:
    """``{thread_id, checkpoint_ns, checkpoint_id, checkpoint_map}`` of a run config, or None
    when it names no checkpoint."""
    conf = (config.get("configurable") or {}) if isinstance(config, dict) else {}
    if not conf.get("checkpoint_id"):
        return None
    return {
        "thread_id": conf.get("thread_id"),
        "checkpoint_ns": conf.get("checkpoint_ns", ""),
        "checkpoint_id": conf.get("checkpoint_id"),
        "checkpoint_map": conf.get("checkpoint_map") or {},
    }


def debug_payload(chunk: Any) -> Any:
    """A ``debug`` chunk as LangGraph's server sends it: a checkpoint's payload also has
    ``checkpoint`` and ``parent_checkpoint``, and its tasks' ``state`` config is their ``checkpoint``."""
    if not isinstance(chunk, dict) or chunk.get("type") != "checkpoint" or not isinstance(chunk.get("payload"), dict):
        return chunk
    payload = chunk["payload"]
    tasks = []
    for task in payload.get("tasks") or ():
        state = task.get("state") if isinstance(task, dict) else None
        if isinstance(state, dict) and state.get("configurable"):
            task = {**{k: v for k, v in task.items() if k != "state"}, "checkpoint": state["configurable"]}
        tasks.append(task)
    return {
        **chunk,
        "payload": {
            **payload,
            "checkpoint": checkpoint_of(payload.get("config")),
            "parent_checkpoint": checkpoint_of(payload.get("parent_config")),
            "tasks": tasks,
        },
    }


def normalize_modes(stream_mode: str | Iterable[str] | None) -> list[str]:
    """The requested API stream modes as a list without duplicates (default ``["values"]``)."""
    if stream_mode is None:
        return ["values"]
    modes = [stream_mode] if isinstance(stream_mode, str) else list(stream_mode)
    return list(dict.fromkeys(modes)) or ["values"]


SUBAGENT_ENDINGS = {
    "task_completed": "completed",
    "task_failed": "failed",
    "task_timed_out": "timed_out",
    "task_cancelled": "cancelled",
}


def graph_modes(api_modes: Iterable[str]) -> list[str]:
    """Graph stream modes to ask ``astream`` for; ``values``, ``updates`` and ``custom`` always
    (final state, interrupts, sub-agent outcomes; custom events reach clients only when asked for).
    ``messages`` only when asked for: it makes the model stream token by token (a stop then keeps
    the words a client saw; a client that streamed none saw none)."""
    wanted = {"values", "updates", "custom"}
    for mode in api_modes:
        if mode in API_STREAM_MODES and mode != "events":
            wanted.add(GRAPH_MODE.get(mode, mode))
    return sorted(wanted)


def event_name(mode: str, namespace: tuple[str, ...]) -> str:
    """``mode`` alone at the root, ``mode|ns1|ns2`` inside subgraphs."""
    return "|".join((mode, *namespace))


def interrupts_of(update: Any) -> list[Any]:
    """The interrupts in an ``updates`` chunk (``{"__interrupt__": (...)}``), else []."""
    if isinstance(update, dict) and INTERRUPT_KEY in update:
        return list(update[INTERRUPT_KEY] or [])
    return []


def token_usage(update: Any) -> list[tuple[str, int, int]]:
    """(model name, input tokens, output tokens) of each AI message in an ``updates`` chunk."""
    found: list[tuple[str, int, int]] = []
    for node_update in (update or {}).values() if isinstance(update, dict) else ():
        messages = node_update.get("messages", []) if isinstance(node_update, dict) else []
        for message in messages if isinstance(messages, list) else [messages]:
            usage = getattr(message, "usage_metadata", None)
            if getattr(message, "type", None) == "ai" and usage:
                model = (getattr(message, "response_metadata", None) or {}).get("model_name") or "unknown"
                found.append((model, int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))))
    return found


def subagent_outcome(chunk: Any) -> str | None:
    """How a sub-agent ended (completed, failed, timed_out, cancelled) when a ``custom`` chunk is
    a sub-agent's last event, else None (a failed attempt that will be retried has not ended)."""
    if not isinstance(chunk, dict) or chunk.get("will_retry"):
        return None
    return SUBAGENT_ENDINGS.get(str(chunk.get("type")))


def tool_results(update: Any) -> list[tuple[str, bool]]:
    """(tool name, failed) of each tool message in an ``updates`` chunk. A tool fails when it
    raised, and a command (``bash``) also when it exited non-zero or timed out (its artifact says)."""
    found: list[tuple[str, bool]] = []
    for node_update in (update or {}).values() if isinstance(update, dict) else ():
        messages = node_update.get("messages", []) if isinstance(node_update, dict) else []
        for message in messages if isinstance(messages, list) else [messages]:
            if getattr(message, "type", None) == "tool":
                artifact = getattr(message, "artifact", None)
                command_failed = isinstance(artifact, dict) and (
                    artifact.get("exit_code") not in (None, 0) or bool(artifact.get("timed_out"))
                )
                failed = getattr(message, "status", "") == "error" or command_failed
                found.append((getattr(message, "name", None) or "unknown", failed))
    return found


class EventTranslator:
    """Stateful translation of one run's chunks; remembers the last values and interrupts."""

    def __init__(self, api_modes: Iterable[str]) -> None:
        self.modes = set(api_modes)
        self.last_values: dict[str, Any] | None = None
        self.interrupts: list[Any] = []
        self._partial: dict[str, BaseMessageChunk] = {}
        self._seen: set[str] = set()

    def translate(self, namespace: tuple[str, ...], mode: str, chunk: Any) -> list[tuple[str, JsonText]]:
        """The API events (name, JSON text of the data) for one graph chunk."""
        root = not namespace
        if mode == "values":
            if root and isinstance(chunk, dict):
                self.last_values = chunk
            return [(event_name("values", namespace), encoded(chunk))] if "values" in self.modes else []
        if mode == "updates":
            if root:
                self.interrupts += interrupts_of(chunk)
            return [(event_name("updates", namespace), encoded(chunk))] if "updates" in self.modes else []
        if mode == "messages":
            message, metadata = chunk
            events: list[tuple[str, JsonText]] = []
            if "messages-tuple" in self.modes:
                events.append((event_name("messages", namespace), encoded([message, metadata])))
            if "messages" in self.modes:
                events += self._legacy_messages(namespace, message, metadata)
            return events
        if mode == "custom":
            return [(event_name("custom", namespace), encoded(chunk))] if "custom" in self.modes else []
        if mode == "debug" and "debug" in self.modes:
            return [(event_name(mode, namespace), encoded(debug_payload(chunk)))]
        if mode in self.modes:
            return [(event_name(mode, namespace), encoded(chunk))]
        return []

    def _legacy_messages(
        self, namespace: tuple[str, ...], message: BaseMessage, metadata: Any
    ) -> list[tuple[str, JsonText]]:
        """``messages/metadata`` the first time a message id is seen, then the message so far:
        ``messages/partial`` for a chunk, ``messages/complete`` for a whole message."""
        events: list[tuple[str, JsonText]] = []
        msg_id = message.id or ""
        if msg_id not in self._seen:
            self._seen.add(msg_id)
            events.append((event_name("messages/metadata", namespace), encoded({msg_id: {"metadata": metadata}})))
        if isinstance(message, BaseMessageChunk):
            so_far = self._partial.get(msg_id)
            so_far = message if so_far is None else so_far + message
            self._partial[msg_id] = so_far
            events.append((event_name("messages/partial", namespace), encoded([message_chunk_to_message(so_far)])))
            if getattr(message, "chunk_position", None) == "last":
                self._partial.pop(msg_id, None)
        else:
            events.append((event_name("messages/complete", namespace), encoded([message])))
        return events

    def final_values(self) -> dict[str, Any]:
        """The last root state, with ``__interrupt__`` when the run stopped at an interrupt."""
        values = dict(to_jsonable(self.last_values or {}))
        if self.interrupts:
            values[INTERRUPT_KEY] = to_jsonable(self.interrupts)
        return values
