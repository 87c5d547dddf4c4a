"""Token usage and cost: per agent, rolled up for the thread, and a budget shared by a run.

Usage lives in the thread state under ``usage`` as ``{agent_key: {input_tokens, output_tokens,
total_tokens, cost_usd, model, ...}}`` plus a ``total`` entry; the reducer adds deltas, so the
lead and parallel sub-agents can report at the same time without losing counts.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage

TOTAL = "total"
_COUNTERS = ("input_tokens", "output_tokens", "total_tokens", "cost_usd", "model_calls")


def usage_delta(message: AIMessage, pricing: tuple[float, float] | None = None) -> dict[str, float]:
    """The usage one model reply adds: tokens from ``usage_metadata`` and cost from ``pricing``."""
    meta: Mapping[str, Any] = message.usage_metadata or {}
    inp = int(meta.get("input_tokens", 0) or 0)
    out = int(meta.get("output_tokens", 0) or 0)
    total = int(meta.get("total_tokens", 0) or 0) or inp + out
    cost = (inp * pricing[0] + out * pricing[1]) / 1_000_000 if pricing else 0.0
    return {"input_tokens": inp, "output_tokens": out, "total_tokens": total, "cost_usd": cost, "model_calls": 1}


def add_usage(a: Mapping[str, Any] | None, b: Mapping[str, Any]) -> dict[str, Any]:
    """``a`` plus ``b``: counters are summed, other keys (model, type) taken from ``b``."""
    out = dict(a or {})
    for key, value in b.items():
        if key in _COUNTERS:
            out[key] = round(out.get(key, 0) + value, 8) if key == "cost_usd" else out.get(key, 0) + value
        else:
            out[key] = value
    return out


def merge_usage(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> dict[str, Any]:
    """State reducer: add each agent's delta in ``new`` to ``old`` and keep ``total`` in step."""
    merged = {k: dict(v) for k, v in (old or {}).items()}
    for agent, delta in (new or {}).items():
        if agent == TOTAL:
            continue
        merged[agent] = add_usage(merged.get(agent), delta)
        counters = {k: v for k, v in delta.items() if k in _COUNTERS}
        merged[TOTAL] = add_usage(merged.get(TOTAL), counters)
    return merged


BUDGET_SPENT = "The run's token budget is spent"


@dataclass
class TokenBudget:
    """Tokens one run may spend, shared by the lead and all its sub-agents (thread-safe)."""

    limit: int | None
    spent: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def add(self, tokens: int) -> None:
        """Count ``tokens`` as spent."""
        with self._lock:
            self.spent += tokens

    @property
    def exhausted(self) -> bool:
        """Whether the budget is spent (never, without a limit)."""
        return self.limit is not None and self.spent >= self.limit

    def message(self) -> str:
        """What the user and the model are told when the budget is spent."""
        return (
            f"{BUDGET_SPENT} ({self.spent:,} of {self.limit:,} tokens). "
            "Stopping here; raise subagents.token_budget in config.yaml to allow more."
        )
