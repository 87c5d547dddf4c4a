"""A scripted chat model: replies and tool calls given in advance, for tests and demos.

Use it to test agents and skills without a real model::

    from herdsman.models.scripted import ScriptedChatModel

    model = ScriptedChatModel(responses=[
        {"tool_calls": [{"name": "write_file", "args": {"path": "a.txt", "content": "hi"}}]},
        "Done: wrote a.txt",
    ])

or from config.yaml::

    models:
      - name: scripted
        use: herdsman.models.scripted:ScriptedChatModel
        script: tests/scripts/demo.yaml     # a YAML or JSON list of responses
        latency: 0.2                        # seconds per call
        record_file: calls.jsonl            # each call it receives, as a JSON line
        follow: thread                      # one script cursor per thread (run, shared)
        on_exhausted: cycle                 # start the script again (error, repeat_last)

Each thread follows the script from its first response (``follow: thread``, the default), so
concurrent runs on different threads never take each other's replies; ``follow: run`` starts
every run at the top, ``follow: shared`` is one cursor for every caller. Outside a LangGraph run
(no thread in the config) the shared cursor is used. With ``on_exhausted: cycle`` a script
serves any number of turns, so one deterministic agent can serve many concurrent users.

A response is a string (a final answer), a mapping ``{content, tool_calls: [{name, args, id?}],
delay?}`` (``delay``: extra seconds this reply takes), an ``AIMessage``, or ``{error: "..."}`` to
make the call raise. ``respond=`` takes a function of
the messages instead of a fixed list. Calls are recorded in ``model.calls``: the latest
``keep_calls`` (10,000) of them, so a model serving a long load test stays small.

LangChain's own fake chat models drop tool calls when streaming and cannot bind tools, which
is why this one is written here.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.config import get_config
from pydantic import ConfigDict, Field, PrivateAttr

from herdsman.models.call_drafts import CallDrafts


class ScriptExhaustedError(RuntimeError):
    """The model was called more times than its script has responses."""


class ScriptedModelError(RuntimeError):
    """A scripted ``{error: ...}`` response: the call fails with this message."""


@dataclass
class RecordedCall:
    """One call the model received: the messages, the names of the bound tools, extra kwargs."""

    messages: list[BaseMessage]
    tools: list[str] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)


def _approx_tokens(text: str) -> int:
    """A cheap token estimate (about four characters a token), for usage metadata."""
    return max(1, len(text) // 4) if text else 0


def to_ai_message(response: Any) -> AIMessage:
    """Turn one script entry into an ``AIMessage`` (or raise for an ``{error: ...}`` entry)."""
    if isinstance(response, AIMessage):
        return response
    if isinstance(response, str):
        return AIMessage(content=response)
    if isinstance(response, dict):
        if "error" in response:
            raise ScriptedModelError(str(response["error"]))
        unknown = set(response) - {"content", "tool_calls", "delay"}
        if unknown:
            raise ValueError(
                f"script entry has unknown keys {sorted(unknown)}; use content, tool_calls, delay or error"
            )
        calls = []
        for call in response.get("tool_calls") or []:
            if "name" not in call:
                raise ValueError(f"script tool call {call!r} has no name")
            calls.append(
                {
                    "name": call["name"],
                    "args": dict(call.get("args") or {}),
                    "id": call.get("id") or f"call_{uuid.uuid4().hex[:12]}",
                    "type": "tool_call",
                }
            )
        return AIMessage(content=response.get("content") or "", tool_calls=calls)
    raise TypeError(f"cannot use {type(response).__name__} as a scripted response")


def load_script(path: str | Path) -> list[Any]:
    """Read a YAML or JSON file holding a list of responses."""
    text = Path(path).read_text(encoding="utf-8")
    data = json.loads(text) if str(path).endswith(".json") else yaml.safe_load(text)
    if isinstance(data, dict) and "responses" in data:
        data = data["responses"]
    if not isinstance(data, list):
        raise ValueError(f"{path}: a script is a list of responses (or a mapping with 'responses:')")
    return data


class ScriptedChatModel(BaseChatModel):
    """A chat model that plays back scripted responses and records every call it gets."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    responses: list[Any] = Field(default_factory=list, description="Responses played in order.")
    respond: Callable[[list[BaseMessage]], Any] | None = Field(
        None, description="A function of the messages returning a response; used instead of responses."
    )
    script: str | None = Field(None, description="A YAML/JSON file of responses (appended to responses).")
    latency: float = Field(0.0, ge=0, description="Seconds each call waits before answering.")
    on_exhausted: Literal["error", "repeat_last", "cycle"] = Field(
        "error", description="When a cursor passed the last response: fail, repeat the last one, or start again."
    )
    follow: Literal["thread", "run", "shared"] = Field(
        "thread", description="Whose cursor a call advances: its thread's, its run's, or one shared by all."
    )
    keep_calls: int = Field(10_000, ge=1, description="Calls kept in ``calls`` (the oldest are dropped).")
    stream_chunk_chars: int = Field(16, ge=1, description="Characters per streamed content chunk.")
    chunk_delay: float = Field(0.0, ge=0, description="Seconds between streamed chunks (a slow model).")
    stream_call_args: bool = Field(
        False,
        description="Stream each tool call's arguments in stream_chunk_chars pieces after the text, as "
        "providers do (the name and id first); else every call comes whole in the last chunk.",
    )
    stream_call_drafts: bool = Field(
        False,
        description="Before the last chunk, send each call's raw text (``<tool_call>`` JSON, as the embedded "
        "model writes it) growing stream_chunk_chars at a time, chunk_delay apart, as drafts on the run's custom "
        "stream (see herdsman.models.call_drafts); the calls still come whole in the last chunk.",
    )
    record_file: str | None = Field(
        None, description="Append each call as a JSON line (messages and tools) to this file."
    )
    model: str = "scripted"

    _cursors: OrderedDict[str | None, int] = PrivateAttr(default_factory=OrderedDict)
    _calls: deque[RecordedCall] = PrivateAttr(default_factory=deque)
    _lock: threading.RLock = PrivateAttr(default_factory=threading.RLock)
    _bound_tools: list[str] = PrivateAttr(default_factory=list)

    def model_post_init(self, __context: Any) -> None:
        """Load ``script`` once, when given."""
        if self.script:
            self.responses = [*self.responses, *load_script(self.script)]
        self._calls = deque(maxlen=self.keep_calls)

    @property
    def _llm_type(self) -> str:
        return "herdsman-scripted"

    @property
    def calls(self) -> list[RecordedCall]:
        """The calls received so far (the latest ``keep_calls``), oldest first."""
        with self._lock:
            return list(self._calls)

    def _cursor_key(self) -> str | None:
        """The cursor this call advances: its thread's or run's (``follow``), None for the shared one."""
        if self.follow == "shared":
            return None
        try:
            configurable = get_config().get("configurable") or {}
        except RuntimeError:  # not called inside a LangGraph run
            return None
        key = configurable.get("run_id") if self.follow == "run" else None
        key = key or configurable.get("thread_id")
        return None if key is None else str(key)

    def _take_index(self) -> int:
        """The index of the next response for this call's cursor (advanced; under ``_lock``).

        Cursors are kept for the ``keep_calls`` most recent threads or runs, so a long load test
        does not grow them without bound; a forgotten thread starts its script again."""
        key = self._cursor_key()
        index = self._cursors.pop(key, 0)
        self._cursors[key] = index + 1
        while len(self._cursors) > self.keep_calls:
            self._cursors.popitem(last=False)
        return index

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> Any:
        """Accept tools like a real model; their names are recorded with each call."""
        names = [t.name if isinstance(t, BaseTool) else convert_to_openai_tool(t)["function"]["name"] for t in tools]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice  # recorded with the call; the script decides anyway
        return self.bind(tools=names, **kwargs)

    def _append_record(self, call: RecordedCall) -> None:
        line = {
            "messages": [
                {"type": m.type, "content": m.text if hasattr(m, "text") else str(m.content)} for m in call.messages
            ],
            "tools": call.tools,
        }
        with open(self.record_file, "a", encoding="utf-8") as fh:  # type: ignore[arg-type]  # the caller checked record_file is set
            fh.write(json.dumps(line) + "\n")

    # -- core -------------------------------------------------------------------------------

    def _next(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        """The next reply (with the extra ``delay`` of its entry in ``response_metadata``)."""
        with self._lock:
            call = RecordedCall(list(messages), list(kwargs.get("tools") or []), dict(kwargs))
            self._calls.append(call)
            if self.record_file:
                self._append_record(call)
            if self.respond is not None:
                entry = self.respond(list(messages))
            else:
                index = self._take_index()
                if index >= len(self.responses):
                    if self.on_exhausted == "repeat_last" and self.responses:
                        index = len(self.responses) - 1
                    elif self.on_exhausted == "cycle" and self.responses:
                        index %= len(self.responses)
                    else:
                        raise ScriptExhaustedError(
                            f"scripted model called {index + 1} times but its script has "
                            f"{len(self.responses)} responses; add responses or set on_exhausted: "
                            "repeat_last or cycle"
                        )
                entry = self.responses[index]
        message = to_ai_message(entry)
        delay = float(entry.get("delay", 0) or 0) if isinstance(entry, dict) else 0.0
        prompt_chars = sum(len(m.text) if hasattr(m, "text") else len(str(m.content)) for m in messages)
        out_tokens = _approx_tokens(message.text) + sum(
            _approx_tokens(json.dumps(c["args"])) for c in message.tool_calls
        )
        in_tokens = _approx_tokens("x" * prompt_chars)
        usage = {"input_tokens": in_tokens, "output_tokens": out_tokens, "total_tokens": in_tokens + out_tokens}
        # A fresh id each call, so state reducers never merge two replies.
        return AIMessage(
            content=message.content,
            tool_calls=message.tool_calls,
            invalid_tool_calls=message.invalid_tool_calls,
            id=f"scripted-{uuid.uuid4().hex[:12]}",
            usage_metadata=message.usage_metadata or usage,
            response_metadata={"model_name": self.model, **({"scripted_delay": delay} if delay else {})},
        )

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.latency:
            time.sleep(self.latency)
        message = self._next(messages, kwargs)
        time.sleep(message.response_metadata.get("scripted_delay", 0))
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.latency:
            await asyncio.sleep(self.latency)
        message = self._next(messages, kwargs)
        await asyncio.sleep(message.response_metadata.get("scripted_delay", 0))
        return ChatResult(generations=[ChatGeneration(message=message)])

    @staticmethod
    def _call_chunks(message: AIMessage) -> list[Any]:
        """Tool calls as stream chunks; invalid ones keep their raw (unparsable) arguments."""
        raw: list[tuple[Any, Any, Any]] = [(c["name"], json.dumps(c["args"]), c["id"]) for c in message.tool_calls]
        raw += [(c.get("name"), c.get("args") or "", c.get("id")) for c in message.invalid_tool_calls]
        return [tool_call_chunk(name=name, args=args, id=cid, index=n) for n, (name, args, cid) in enumerate(raw)]

    def _call_pieces(self, message: AIMessage) -> list[list[Any]]:
        """The tool call chunks of each streamed piece: whole calls in one piece, or (with
        ``stream_call_args``) each call's name and id, then its arguments a few characters at a time."""
        calls = self._call_chunks(message)
        if not self.stream_call_args:
            return [calls]
        size = self.stream_chunk_chars
        pieces: list[list[Any]] = []
        for call in calls:
            args = call["args"] or ""
            pieces.append([tool_call_chunk(name=call["name"], args="", id=call["id"], index=call["index"])])
            pieces += [
                [tool_call_chunk(name=None, args=args[i : i + size], id=None, index=call["index"])]
                for i in range(0, len(args), size)
            ]
        return pieces or [[]]

    def _draft_texts(self, message: AIMessage) -> list[str]:
        """The raw text of the message's calls as it grows (with ``stream_call_drafts``), as the
        embedded model writes it: ``<tool_call>`` JSON blocks, stream_chunk_chars at a time."""
        if not self.stream_call_drafts or not message.tool_calls:
            return []
        raw = "\n".join(
            f"<tool_call>\n{json.dumps({'name': c['name'], 'arguments': c['args']}, ensure_ascii=False)}\n</tool_call>"
            for c in message.tool_calls
        )
        size = self.stream_chunk_chars
        return [raw[:i] for i in range(size, len(raw) + size, size)]

    def _chunks(self, message: AIMessage) -> Iterator[ChatGenerationChunk]:
        text = message.text
        size = self.stream_chunk_chars
        calls = self._call_pieces(message)
        pieces = [text[i : i + size] for i in range(0, len(text), size)] or [""]
        if len(calls) > 1:  # the text first, then the calls piece by piece
            pieces = [p for p in pieces if p] + [""] * len(calls)
            calls = [[]] * (len(pieces) - len(calls)) + calls
        else:
            calls = [[]] * (len(pieces) - 1) + calls
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            chunk = AIMessageChunk(
                content=piece,
                id=message.id,
                tool_call_chunks=calls[i],
                usage_metadata=message.usage_metadata if last else None,
                response_metadata=message.response_metadata if last else {},
                chunk_position="last" if last else None,
            )
            yield ChatGenerationChunk(message=chunk)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        if self.latency:
            time.sleep(self.latency)
        message = self._next(messages, kwargs)
        time.sleep(message.response_metadata.get("scripted_delay", 0))
        chunks = list(self._chunks(message))
        for i, chunk in enumerate(chunks):
            if i and self.chunk_delay:
                time.sleep(self.chunk_delay)
            if i == len(chunks) - 1 and (texts := self._draft_texts(message)):
                drafts = CallDrafts(interval=0)
                for text in texts:
                    drafts.see(text)
                    time.sleep(self.chunk_delay)
            if run_manager and (chunk.message.content or getattr(chunk.message, "tool_call_chunks", None)):
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        if self.latency:
            await asyncio.sleep(self.latency)
        message = self._next(messages, kwargs)
        await asyncio.sleep(message.response_metadata.get("scripted_delay", 0))
        chunks = list(self._chunks(message))
        for i, chunk in enumerate(chunks):
            if i and self.chunk_delay:
                await asyncio.sleep(self.chunk_delay)
            if i == len(chunks) - 1 and (texts := self._draft_texts(message)):
                drafts = CallDrafts(interval=0)
                for text in texts:
                    drafts.see(text)
                    await asyncio.sleep(self.chunk_delay)
            if run_manager and (chunk.message.content or getattr(chunk.message, "tool_call_chunks", None)):
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk
