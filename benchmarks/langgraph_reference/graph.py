"""The scripted graph LangGraph's own server runs in ``gateway_load.py --reference``.

It does the work Herdsman's scripted load does, with nothing of Herdsman: a LangChain agent
(``create_agent``, no middleware) whose model calls ``ls`` once on the thread's workspace, then
answers. ``server.py`` copies this file into the reference server's project folder,
where it is loaded by ``langgraph dev`` from its own virtual environment (it must not import
``herdsman``). ``REFERENCE_FILES_ROOT`` names the folder holding each thread's files.

The model is written here because LangChain's fake chat models (``GenericFakeChatModel``) cannot
bind tools and drop tool calls when streaming; this one streams like Herdsman's scripted model
(content in 16-character chunks, the tool calls on the last chunk).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool

WORKSPACE = "/mnt/user-data/workspace"
ANSWER = "All done: the folders are listed."
CHUNK_CHARS = 16


def reply(messages: list[BaseMessage]) -> AIMessage:
    """``ls`` of the workspace when no tool answered since the user's message, else the answer."""
    for message in reversed(messages):
        if message.type == "tool":
            return AIMessage(content=ANSWER, id=f"ref-{uuid.uuid4().hex[:12]}")
        if message.type == "human":
            break
    call = {"name": "ls", "args": {"path": WORKSPACE}, "id": f"call-{uuid.uuid4().hex[:12]}"}
    return AIMessage(content="", tool_calls=[call], id=f"ref-{uuid.uuid4().hex[:12]}")


def chunks(message: AIMessage) -> Iterator[ChatGenerationChunk]:
    """``message`` as stream chunks: the content in pieces, the tool calls on the last one."""
    text = message.text
    pieces = [text[i : i + CHUNK_CHARS] for i in range(0, len(text), CHUNK_CHARS)] or [""]
    calls = [
        tool_call_chunk(name=c["name"], args=json.dumps(c["args"]), id=c["id"], index=n)
        for n, c in enumerate(message.tool_calls)
    ]
    for i, piece in enumerate(pieces):
        last = i == len(pieces) - 1
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content=piece,
                id=message.id,
                tool_call_chunks=calls if last else [],
                chunk_position="last" if last else None,
            )
        )


class ScriptedModel(BaseChatModel):
    """A chat model that lists the workspace once, then answers (see :func:`reply`)."""

    @property
    def _llm_type(self) -> str:
        return "reference-scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        """Accept tools like a real model; the script decides anyway."""
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=reply(messages))])

    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        return self._generate(messages)

    def _stream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        yield from chunks(reply(messages))

    async def _astream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in chunks(reply(messages)):
            if run_manager and chunk.message.content:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk


@tool
def ls(path: str, config: RunnableConfig) -> str:
    """List a folder of the thread's files (created on first use, as Herdsman's sandbox does)."""
    root = Path(os.environ.get("REFERENCE_FILES_ROOT", ".reference-files"))
    folder = root / str(config["configurable"]["thread_id"]) / Path(path).name
    folder.mkdir(parents=True, exist_ok=True)
    return "\n".join(sorted(entry.name for entry in os.scandir(folder))) or "(empty folder)"


graph = create_agent(ScriptedModel(), tools=[ls])
