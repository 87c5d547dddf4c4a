"""How long a model step takes on this machine: the recent model calls of a user's threads, read
back from their replies (each AI message's ``response_metadata["step_timing"]``, stamped by
:class:`~herdsman.middleware.usage.UsageMiddleware`, and the embedded model's
``output_tokens_per_second``), summed up as a median.

The figures live in the threads' checkpoints, so an estimate survives a page reload and a restart
and covers a new thread's first step; no separate record is kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from statistics import median
from typing import Any

from pydantic import BaseModel, Field

RECENT = 8
"""Model steps an estimate is made from (the newest)."""


class StepSample(BaseModel):
    """One model call: its model, how long it took, and its output pace when known."""

    model: str | None = None
    seconds: float
    output_tokens_per_second: float | None = None


class StepEstimate(BaseModel):
    """How long a model step takes here, from the newest ``samples`` steps of the model."""

    model: str | None = Field(None, description="The model (its name in config.yaml), or null for every model.")
    samples: int = Field(0, description="Model steps the estimate is made from (0: nothing measured yet).")
    seconds: float | None = Field(None, description="The median duration of those steps, in seconds.")
    output_tokens_per_second: float | None = Field(
        None, description="The median output pace of those steps, where the model reports it (the embedded model)."
    )


def _field(message: Any, name: str) -> Any:
    return message.get(name) if isinstance(message, Mapping) else getattr(message, name, None)


def step_samples(messages: Iterable[Any]) -> list[StepSample]:
    """The timed model steps among ``messages`` (LangChain messages or their JSON), in order."""
    samples = []
    for message in messages:
        if _field(message, "type") not in ("ai", "AIMessage", "AIMessageChunk"):
            continue
        meta = _field(message, "response_metadata") or {}
        timing = meta.get("step_timing") if isinstance(meta, Mapping) else None
        if not isinstance(timing, Mapping) or not isinstance(timing.get("seconds"), int | float):
            continue
        pace = meta.get("output_tokens_per_second")
        samples.append(
            StepSample(
                model=timing.get("model"),
                seconds=float(timing["seconds"]),
                output_tokens_per_second=float(pace) if isinstance(pace, int | float) and pace > 0 else None,
            )
        )
    return samples


def estimate(samples: Iterable[StepSample], model: str | None = None, recent: int = RECENT) -> StepEstimate:
    """The estimate from the last ``recent`` of ``samples`` (oldest first) of ``model`` (any, if None)."""
    mine = [s for s in samples if model is None or s.model == model][-recent:]
    paces = [s.output_tokens_per_second for s in mine if s.output_tokens_per_second]
    return StepEstimate(
        model=model,
        samples=len(mine),
        seconds=round(median(s.seconds for s in mine), 2) if mine else None,
        output_tokens_per_second=round(median(paces), 2) if paces else None,
    )
