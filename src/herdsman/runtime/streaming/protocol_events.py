"""One run's stream events as the events of LangGraph's thread streaming protocol.

The run manager publishes a run's events the way ``/runs/stream`` sends them (``values``,
``updates``, ``messages`` tuples, ``custom``, ``tasks``; ``<mode>|<namespace>`` inside
subgraphs). ``POST /threads/{id}/stream/events`` (``client.threads.stream()`` in
``langgraph-sdk``) wants each as a protocol event ``{method, params: {namespace, data, node?}}``
on a channel, as LangGraph's server (langgraph-api's ``event_streaming``) shapes them:

- ``lifecycle``: ``running`` for the root when the run starts; ``started`` for a subgraph
  namespace the first time it is seen (a sub-agent runs under ``tools:<tool_call_id>``, so its
  ``cause`` is that tool call) and ``completed`` / ``failed`` when its tool call ends; at the
  end of the run ``completed``, ``failed`` (with the error), or ``interrupted`` (stopped at an
  ``interrupt()`` or cancelled).
- ``input.requested`` ``{interrupt_id, payload}`` for each interrupt (``value`` too: the SDK
  reads that name), followed by the root's ``interrupted``.
- ``messages``: each AI message as content-block events (:mod:`herdsman.runtime.streaming.message_events`).
- ``tools``: ``tool-started`` when the model asks for a tool call, ``tool-finished`` (or
  ``tool-error``) when its result comes back.
- ``values`` (without ``__interrupt__``), ``updates`` (``params.node`` is the node),
  ``custom`` ``{payload}``, ``tasks``.

Written by hand: the reference does this inside its server (no library exposes it), and our
source events are the API's own, not LangGraph's internal stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from herdsman.runtime.runs.run_events import INTERRUPT_KEY
from herdsman.runtime.streaming.message_events import StreamedMessage, message_of, whole_message_events

# What a run started with ``run.start`` streams: everything the protocol's channels need.
PROTOCOL_STREAM_MODES = ["values", "updates", "messages-tuple", "custom", "tasks"]
CHANNELS = ("values", "updates", "messages", "tools", "lifecycle", "input", "checkpoints", "tasks", "custom")
# A run's final status -> the root's last lifecycle event.
FINAL_LIFECYCLE = {"success": "completed", "error": "failed", "interrupted": "interrupted", "timeout": "failed"}


@dataclass(frozen=True)
class ProtocolEvent:
    """One protocol event before the thread's log numbers it."""

    method: str
    namespace: tuple[str, ...]
    data: Any
    node: str | None = None


def supported_channel(channel: Any) -> bool:
    """Whether ``channel`` names a protocol channel (``custom:<name>`` included)."""
    return isinstance(channel, str) and (channel in CHANNELS or (channel.startswith("custom:") and len(channel) > 7))


def split_event_name(name: str) -> tuple[str, tuple[str, ...]]:
    """``values|tools:c1`` -> (``values``, (``tools:c1``,))."""
    mode, *namespace = name.split("|")
    return mode, tuple(namespace)


def _interrupt_requests(values: Any) -> list[dict[str, Any]]:
    """``{interrupt_id, payload, value}`` for each ``{id, value}`` in ``__interrupt__``."""
    found = values.get(INTERRUPT_KEY) if isinstance(values, dict) else None
    requests = []
    for entry in found if isinstance(found, list) else ():
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            requests.append({"interrupt_id": entry["id"], "payload": entry.get("value"), "value": entry.get("value")})
    return requests


def _messages_in(update: Any) -> list[dict[str, Any]]:
    """The message dicts of a node's update."""
    messages = update.get("messages") if isinstance(update, dict) else None
    if isinstance(messages, dict):
        messages = [messages]
    return [m for m in messages or () if isinstance(m, dict)]


class RunProtocolTranslator:
    """Stateful translation of one run's events (open messages, namespaces, interrupts)."""

    def __init__(self, graph_name: str) -> None:
        """``graph_name``: the root's name in lifecycle events (the run's assistant)."""
        self.graph_name = graph_name
        self.interrupt_ids: dict[str, tuple[str, ...]] = {}
        self.namespaces: dict[tuple[str, ...], str] = {}  # seen subgraph namespaces -> their status
        self.root_status = "running"
        self._messages: dict[str, tuple[tuple[str, ...], StreamedMessage]] = {}  # by namespace and id
        self._tools_started: set[str] = set()

    def start(self) -> list[ProtocolEvent]:
        """The root's ``running`` lifecycle event."""
        return [ProtocolEvent("lifecycle", (), {"event": "running", "graph_name": self.graph_name})]

    def translate(self, name: str, data: Any) -> list[ProtocolEvent]:
        """The protocol events of one stream event (``name`` as the bridge has it)."""
        mode, namespace = split_event_name(name)
        if mode == "metadata":
            return []
        if mode == "error":
            message = data.get("message", str(data)) if isinstance(data, dict) else str(data)
            return self._finish_open() + [self._root("failed", error=message)]
        events = self._enter(namespace)
        if mode == "values":
            events += self._inputs(namespace, _interrupt_requests(data))
            if isinstance(data, dict):
                data = {k: v for k, v in data.items() if k != INTERRUPT_KEY}
            if data:
                events.append(ProtocolEvent("values", namespace, data))
        elif mode == "updates":
            events += self._updates(namespace, data)
        elif mode == "messages":
            events += self._message(namespace, data)
        elif mode == "custom":
            events.append(ProtocolEvent("custom", namespace, {"payload": data}))
        elif mode in ("tasks", "checkpoints"):
            events.append(ProtocolEvent(mode, namespace, data))
        return events

    def finish(self, status: str, error: str | None = None) -> list[ProtocolEvent]:
        """The events closing the run: open messages and namespaces, then the root's last
        lifecycle event (``interrupted`` when it stopped at an interrupt)."""
        event = FINAL_LIFECYCLE.get(status, "completed")
        if event == "completed" and self.interrupt_ids:
            event = "interrupted"
        events = self._finish_open()
        if not (event == "interrupted" and self.interrupt_ids):  # already sent with the interrupt
            events.append(self._root(event, error=error))
        return events

    # -- helpers ----------------------------------------------------------------------------

    def _root(self, event: str, error: str | None = None) -> ProtocolEvent:
        self.root_status = event
        data: dict[str, Any] = {"event": event, "graph_name": self.graph_name}
        if error is not None:
            data["error"] = error
        return ProtocolEvent("lifecycle", (), data)

    def _enter(self, namespace: tuple[str, ...]) -> list[ProtocolEvent]:
        """``started`` for each level of ``namespace`` not seen before."""
        events = []
        for depth in range(1, len(namespace) + 1):
            path = namespace[:depth]
            if path in self.namespaces:
                continue
            self.namespaces[path] = "started"
            graph, _, task = path[-1].partition(":")
            data: dict[str, Any] = {"event": "started", "graph_name": graph}
            if graph == "tools" and task:
                data["cause"] = {"type": "toolCall", "tool_call_id": task}
            events.append(ProtocolEvent("lifecycle", path, data))
        return events

    def _leave(self, path: tuple[str, ...], event: str, error: str | None = None) -> list[ProtocolEvent]:
        """``completed`` / ``failed`` for a subgraph namespace and the ones below it still open."""
        events = []
        for other in sorted(self.namespaces, key=len, reverse=True):
            if other[: len(path)] == path and self.namespaces[other] == "started":
                self.namespaces[other] = event
                data: dict[str, Any] = {"event": event, "graph_name": other[-1].partition(":")[0]}
                if error is not None and other == path:
                    data["error"] = error
                events.append(ProtocolEvent("lifecycle", other, data))
        return events

    def _finish_open(self) -> list[ProtocolEvent]:
        """Finish every message still streaming and complete every namespace still open."""
        events = [ProtocolEvent("messages", ns, e) for ns, m in self._messages.values() for e in m.finish()]
        for path in sorted(self.namespaces, key=len):
            events += self._leave(path, "completed")
        return events

    def _inputs(self, namespace: tuple[str, ...], requests: list[dict[str, Any]]) -> list[ProtocolEvent]:
        """``input.requested`` for each new interrupt, then the root's ``interrupted``."""
        fresh = [r for r in requests if r["interrupt_id"] not in self.interrupt_ids]
        for request in fresh:
            self.interrupt_ids[request["interrupt_id"]] = namespace
        if not fresh:
            return []
        return [ProtocolEvent("input.requested", namespace, r) for r in fresh] + [self._root("interrupted")]

    def _updates(self, namespace: tuple[str, ...], data: Any) -> list[ProtocolEvent]:
        if not isinstance(data, dict):
            return []
        if INTERRUPT_KEY in data:
            return self._inputs(namespace, _interrupt_requests(data))
        events: list[ProtocolEvent] = []
        for node, update in data.items():
            events += self._close_messages(namespace, update)
            if update:  # a node that changed nothing (a middleware hook) has no update to send
                events.append(ProtocolEvent("updates", namespace, update, node=node))
            events += self._tool_events(namespace, node, update)
        return events

    def _close_messages(self, namespace: tuple[str, ...], update: Any) -> list[ProtocolEvent]:
        """Finish the streamed messages a node's update holds whole (the model call ended)."""
        events = []
        for message in _messages_in(update):
            if (held := self._messages.get(self._key(namespace, message.get("id")))) is not None:
                events += [ProtocolEvent("messages", namespace, e) for e in held[1].finish()]
        return events

    def _tool_events(self, namespace: tuple[str, ...], node: str, update: Any) -> list[ProtocolEvent]:
        """``tool-started`` for the tool calls of an AI message, ``tool-finished`` / ``tool-error``
        for a tool result (closing the namespace of a sub-agent that ran under the call)."""
        events = []
        for message in _messages_in(update):
            if message.get("type") == "ai":
                for call in message.get("tool_calls") or ():
                    call_id = call.get("id") if isinstance(call, dict) else None
                    if call_id and call_id not in self._tools_started:
                        self._tools_started.add(call_id)
                        data = {
                            "event": "tool-started",
                            "tool_call_id": call_id,
                            "tool_name": call.get("name"),
                            "input": call.get("args"),
                        }
                        events.append(ProtocolEvent("tools", namespace, data, node=node))
            elif message.get("type") == "tool" and message.get("tool_call_id"):
                call_id = message["tool_call_id"]
                failed = message.get("status") == "error"
                if failed:
                    data = {"event": "tool-error", "tool_call_id": call_id, "message": str(message.get("content"))}
                else:
                    data = {"event": "tool-finished", "tool_call_id": call_id, "output": message.get("content")}
                events.append(ProtocolEvent("tools", namespace, data, node=node))
                error = str(message.get("content")) if failed else None
                events += self._leave((*namespace, f"tools:{call_id}"), "failed" if failed else "completed", error)
        return events

    @staticmethod
    def _key(namespace: tuple[str, ...], message_id: Any) -> str:
        return f"{'|'.join(namespace)}\x00{message_id}"

    def _message(self, namespace: tuple[str, ...], data: Any) -> list[ProtocolEvent]:
        """Content-block events for an AI message chunk (or a whole AI message)."""
        payload = data[0] if isinstance(data, list) and data else None
        message = message_of(payload)
        if message is None:
            return []  # tool results go out on the tools channel
        key = self._key(namespace, message.id)
        if message.type == "ai":
            if key in self._messages:
                return []  # the whole message after its chunks: already streamed
            done = StreamedMessage()
            done.finished = True
            self._messages[key] = (namespace, done)
            return [ProtocolEvent("messages", namespace, e) for e in whole_message_events(message)]
        streamed = self._messages.setdefault(key, (namespace, StreamedMessage()))[1]
        if streamed.finished:
            return []
        events = streamed.feed(message)  # type: ignore[arg-type]  # the message is an AIMessageChunk here (checked by the caller); feed is typed for the chunk
        if getattr(message, "chunk_position", None) == "last":
            events += streamed.finish()
        return [ProtocolEvent("messages", namespace, e) for e in events]
