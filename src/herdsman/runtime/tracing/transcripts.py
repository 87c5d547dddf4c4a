"""Sub-agent transcripts: what each sub-agent did, kept beside its thread for the trace.

A sub-agent runs in its own context without checkpoints, so its messages are gone once it has
answered; the lead's thread only keeps the result. When a sub-agent ends (completed, failed,
timed out or cancelled), the executor writes its steps, in the trace's own shape, to
``<home>/threads/<thread_id>/subagents/<task_id>.json``. The trace reads them back for the
``task`` and ``run_plan`` steps that started them (:func:`transcript_loader`).

Keeping a transcript never fails a sub-agent: a write that fails is logged and skipped.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from herdsman.config.schema import HerdsmanConfig
from herdsman.logs import get_logger
from herdsman.runtime.tracing.trace import CheckpointMessages, TraceStep, build_trace
from herdsman.sandbox.paths import thread_dir

log = get_logger(__name__)


def transcript_path(config: HerdsmanConfig, thread_id: str, task_id: str) -> Path:
    """The transcript file of sub-agent ``task_id`` (its id reduced to a safe file name) under
    ``config``'s home, resolved like every other path of the home (``~``, relative paths)."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "-", task_id)[:128]
    return thread_dir(config.resolve_home(), thread_id) / "subagents" / f"{name}.json"


def save_transcript(config: HerdsmanConfig, thread_id: str, task_id: str, messages: Sequence[Any]) -> None:
    """Keep a sub-agent's messages as trace steps (replacing an earlier attempt's); never raises."""
    try:
        steps = build_trace(thread_id, [CheckpointMessages(list(messages))]).steps
        path = transcript_path(config, thread_id, task_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".json.partial")
        partial.write_text(json.dumps([s.model_dump(mode="json") for s in steps], ensure_ascii=False), encoding="utf-8")
        os.replace(partial, path)
    except Exception as exc:  # noqa: BLE001 - a transcript is never worth failing a sub-agent
        log.warning("subagent_transcript_not_saved", task_id=task_id, thread_id=thread_id, error=str(exc))


def transcript_loader(config: HerdsmanConfig, thread_id: str) -> Callable[[str], list[TraceStep] | None]:
    """``load(task_id)``: the kept steps of a sub-agent of ``thread_id``, or None."""

    def load(task_id: str) -> list[TraceStep] | None:
        path = transcript_path(config, thread_id, task_id)
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning("subagent_transcript_unreadable", task_id=task_id, thread_id=thread_id, error=str(exc))
            return None
        return [TraceStep.model_validate(step) for step in raw]

    return load
