"""A scripted agent for crash-recovery tests, usable from a ``herdsman serve`` child process
(named in config.yaml as ``use: tests.gateway.recovery_model:StepsModel``).

``steps N`` makes N bash calls one after another, each appending ``stepK`` to a log in the
thread's workspace and printing the whole log, then answers ``finished``. Every model call
first appends ``<pid> <tool messages seen>`` to ``calls_file`` (so a test sees which process made
which call, and whether a step was called twice), then, while ``hold_file`` exists and the call
has seen ``hold_at`` tool results, waits (a run held mid-way, for a ``kill -9``); it touches
``hold_file + ".held"`` when it starts waiting.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from herdsman.models.scripted import ScriptedChatModel

LOG = "/mnt/user-data/workspace/steps.log"


def steps_reply(messages: list[BaseMessage]) -> Any:
    """The next bash step while fewer than N tool results are in, then the final answer."""
    human = [m for m in messages if m.type == "human"][-1].text.split()
    wanted = int(human[1]) if human[:1] == ["steps"] and len(human) > 1 else 0
    done = sum(1 for m in messages if m.type == "tool")
    if done < wanted:
        return {"tool_calls": [{"name": "bash", "args": {"command": f"echo step{done + 1} >> {LOG} && cat {LOG}"}}]}
    return "finished"


class StepsModel(ScriptedChatModel):
    """The scripted steps agent, logging and holding across processes through files."""

    calls_file: str | None = None
    hold_file: str | None = None
    hold_at: int = 2

    def model_post_init(self, __context: Any) -> None:
        """Answer with :func:`steps_reply`."""
        super().model_post_init(__context)
        self.respond = steps_reply

    async def _log_and_hold(self, messages: list[BaseMessage]) -> None:
        seen = sum(1 for m in messages if m.type == "tool")
        if self.calls_file:
            with open(self.calls_file, "a", encoding="utf-8") as fh:
                fh.write(f"{os.getpid()} {seen}\n")
        if self.hold_file and seen == self.hold_at and os.path.exists(self.hold_file):
            Path(self.hold_file + ".held").touch()
            while os.path.exists(self.hold_file):
                await asyncio.sleep(0.05)

    async def _astream(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[override]
        await self._log_and_hold(messages)
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            yield chunk

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[override]
        await self._log_and_hold(messages)
        return await super()._agenerate(messages, stop, run_manager, **kwargs)
