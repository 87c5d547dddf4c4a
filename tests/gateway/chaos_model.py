"""A scripted agent for tests that kill workers mid-run, usable from ``herdsman serve`` and
``herdsman worker`` children (named in config.yaml as ``use: tests.gateway.chaos_model:ChaosModel``).

``chaos TAG STEPS SLEEP`` makes STEPS bash calls one after another, then answers
``finished TAG after K interrupted``. Call n of the run first appends a line to
``/mnt/user-data/workspace/ran/<tool call id>`` (one line per execution: a test counts how many
times each call ran), sleeps SLEEP seconds, and prints ``TAG stepN``. A call answered as
interrupted (its worker died while it ran, see ``herdsman.runtime.runs.inflight_tools``) is not a
done step: the model makes it again, with a new id, and counts the notices it saw (K).

Every model call appends ``<pid>`` to ``calls_file`` when set, so a test knows which process
executes a run.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage

from herdsman.models.scripted import ScriptedChatModel

RAN = "/mnt/user-data/workspace/ran"


def is_interrupted(message: BaseMessage) -> bool:
    """Whether a tool result is the harness's notice that the call was interrupted."""
    return isinstance(message, ToolMessage) and message.status == "error" and "interrupted" in str(message.content)


def chaos_reply(messages: list[BaseMessage]) -> Any:
    """The next step of the run the last human message asked for, or its final answer."""
    last_human = max(i for i, m in enumerate(messages) if m.type == "human")
    words = messages[last_human].text.split()
    if words[:1] != ["chaos"] or len(words) < 4:
        return f"echo: {' '.join(words)}"
    tag, wanted, sleep = words[1], int(words[2]), words[3]
    results = [m for m in messages[last_human:] if isinstance(m, ToolMessage)]
    interrupted = sum(1 for m in results if is_interrupted(m))
    done = len(results) - interrupted
    if done < wanted:
        call_id = f"{tag}-{done + 1}-{uuid.uuid4().hex[:8]}"
        command = f"mkdir -p {RAN} && echo ran >> {RAN}/{call_id} && sleep {sleep} && echo {tag} step{done + 1}"
        return {"tool_calls": [{"name": "bash", "args": {"command": command}, "id": call_id}]}
    return f"finished {tag} after {interrupted} interrupted"


class ChaosModel(ScriptedChatModel):
    """The scripted chaos agent, logging the process of each call to ``calls_file``."""

    calls_file: str | None = None

    def model_post_init(self, __context: Any) -> None:
        """Answer with :func:`chaos_reply`."""
        super().model_post_init(__context)
        self.respond = chaos_reply

    def _log(self) -> None:
        if self.calls_file:
            with open(self.calls_file, "a", encoding="utf-8") as fh:
                fh.write(f"{os.getpid()}\n")

    async def _astream(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[override]
        self._log()
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            yield chunk

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[override]
        self._log()
        return await super()._agenerate(messages, stop, run_manager, **kwargs)
