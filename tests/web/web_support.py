"""Helpers for the web UI tests: the scripted lead that each browser scenario talks to, and a
gateway serving the built UI on a free port.

The lead reacts to the first word of the user's message:
``hello ...`` streams a long answer slowly; ``fanout`` starts three sub-agents at once;
``ask`` asks a clarifying question with choices; ``approve`` calls ``glob``, which needs approval;
``read NAME`` reads an upload; ``write NAME TEXT`` writes an output; ``slow N`` takes N slow tool
steps (for reloading mid-run); ``fail`` makes the model call fail. Anything else is echoed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from herdsman.models.scripted import ScriptedChatModel
from tests.gateway.gateway_support import FOLDERS, RunningGateway, running_gateway
from tests.support import make_config

REPO = Path(__file__).resolve().parents[2]
WEB = REPO / "web"
GREETING = "Hello from Herdsman! These words arrive as streamed tokens, a few characters at a time, until the answer is complete."
MODELS = [
    {"name": "lead", "use": "herdsman.models.scripted:ScriptedChatModel"},
    {"name": "worker", "use": "herdsman.models.scripted:ScriptedChatModel", "responses": ["report ready"],
     "on_exhausted": "repeat_last", "latency": 2.0},
]


def _task(topic: str) -> dict[str, Any]:
    return {"name": "task", "args": {"description": f"Research {topic}", "prompt": f"research {topic}",
                                     "subagent_type": "general-purpose"}}


def web_reply(messages: list[BaseMessage]) -> Any:
    """What the scripted lead answers (see the module docstring)."""
    last = messages[-1]
    human = [m for m in messages if m.type == "human"][-1].text
    words = human.split()
    first = words[0] if words else ""
    if last.type == "human":
        if first == "hello":
            return GREETING
        if first == "fanout":
            return {"tool_calls": [_task(t) for t in ("alpha", "beta", "gamma")]}
        if first == "ask":
            return {"tool_calls": [{"name": "ask_clarification", "args": {"question": "Which color?", "choices": ["red", "blue"]}}]}
        if first == "approve":
            return {"tool_calls": [{"name": "glob", "args": {"pattern": "*", "path": "/mnt/user-data"}}]}
        if first == "read" and len(words) > 1:
            return {"tool_calls": [{"name": "read_file", "args": {"path": f"/mnt/user-data/uploads/{words[1]}"}}]}
        if first == "write" and len(words) > 2:
            return {"tool_calls": [{"name": "write_file", "args": {"path": f"/mnt/user-data/outputs/{words[1]}",
                                                                   "content": " ".join(words[2:]).replace("|", "\n")}}]}
        if first == "slow":
            return {"tool_calls": [{"name": "ls", "args": {"path": FOLDERS[0]}}], "delay": 1.0}
        if first == "fail":
            return {"error": "the scripted model broke on purpose"}
        return f"echo: {human}"
    if last.type == "tool":
        if first == "slow":
            wanted = int(words[1]) if len(words) > 1 and words[1].isdigit() else 3
            done = sum(1 for m in messages if m.type == "tool")
            if done < wanted:
                return {"tool_calls": [{"name": "ls", "args": {"path": FOLDERS[done % len(FOLDERS)]}}], "delay": 1.0}
            return f"done after {done} slow steps"
        if first == "fanout":
            return "all three sub-agents reported"
        return f"done: {last.text}"
    return "ok"


class SlowStreamModel(ScriptedChatModel):
    """The scripted lead, streaming its content chunks 30 ms apart so a page sees tokens arrive."""

    async def _astream(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[override]
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            if chunk.message.content:
                await asyncio.sleep(0.03)
            yield chunk


@contextmanager
def web_gateway(home: Path, api_keys: list[str] | None = None) -> Iterator[RunningGateway]:
    """A gateway with the scripted lead, a slow scripted sub-agent model, and ``glob`` needing approval
    (and auth on, when ``api_keys`` are given)."""
    config = make_config(
        home,
        models=MODELS,
        subagents={"model": "worker", "max_concurrent": 3},
        tools={"require_approval": ["glob"]},
        gateway={"api_keys": api_keys or []},
    )
    model = SlowStreamModel(respond=web_reply, stream_chunk_chars=6)
    with running_gateway(config, model=model) as served:
        yield served
