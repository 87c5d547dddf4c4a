"""Prometheus metrics of the gateway, served at ``/metrics``.

Each app gets its own registry, so several apps (tests, restarts) in one process never clash.
The run manager reports to :class:`GatewayMetrics` as a run listener.

Label values are bounded: a tool call's name is the model's to invent (a call to a tool that does
not exist still returns, as an error), and every new label value is a new series the registry
keeps forever. So ``tool`` is a name of the lead agent's tools (``known_tools``), at most
``MAX_TOOL_LABELS`` of them, and ``other`` for anything else; ``model`` is bounded the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection

from fastapi import APIRouter, Depends, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from herdsman.logs import get_logger
from herdsman.runtime.runs.runs import Run
from herdsman_gateway.auth import metrics_access

log = get_logger(__name__)


OTHER = "other"
MAX_TOOL_LABELS = 200
MAX_MODEL_LABELS = 50


class BoundedLabel:
    """The label value of a name: the name itself when ``known`` holds it and fewer than ``cap``
    names were labelled so far, else :data:`OTHER`."""

    def __init__(self, known: Callable[[], Collection[str]] | None, cap: int) -> None:
        """``known`` gives the names allowed as they are now (None: any name, up to ``cap``)."""
        self.known = known
        self.cap = cap
        self.seen: set[str] = set()

    def __call__(self, name: str) -> str:
        """``name`` while the cap allows it (and, with a known list, it is on it), else the overflow label."""
        if name in self.seen:
            return name
        if len(self.seen) >= self.cap or (self.known is not None and name not in self.known()):
            return OTHER
        self.seen.add(name)
        return name


class GatewayMetrics:
    """Counters of runs, tokens and streams; also a :class:`~herdsman.runtime.runs.runs.RunListener`."""

    def __init__(self, known_tools: Callable[[], Collection[str]] | None = None) -> None:
        """``known_tools`` gives the names of the lead agent's tools now (they change with MCP
        servers): other tool names are counted as ``other``."""
        self.tool_label = BoundedLabel(known_tools or (lambda: ()), MAX_TOOL_LABELS)
        self.model_label = BoundedLabel(None, MAX_MODEL_LABELS)
        self.registry = CollectorRegistry()
        self.runs_started = Counter("herdsman_runs_started", "Runs that began executing.", registry=self.registry)
        self.runs_finished = Counter(
            "herdsman_runs_finished", "Runs that ended, by final status.", ["status"], registry=self.registry
        )
        self.runs_failed = Counter("herdsman_runs_failed", "Runs that ended with an error.", registry=self.registry)
        self.run_duration = Histogram(
            "herdsman_run_duration_seconds",
            "Wall time of runs, from start of execution to end.",
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900),
            registry=self.registry,
        )
        self.tokens = Counter(
            "herdsman_model_tokens",
            "Tokens used by model calls, by model and direction.",
            ["model", "direction"],
            registry=self.registry,
        )
        self.tool_calls = Counter(
            "herdsman_tool_calls",
            "Tool calls that returned, by tool and outcome (bash: sandbox commands; task: sub-agents).",
            ["tool", "outcome"],
            registry=self.registry,
        )
        self.sandbox_commands = Counter(
            "herdsman_sandbox_commands",
            "Shell commands run in sandboxes (bash tool calls), by outcome.",
            ["outcome"],
            registry=self.registry,
        )
        self.subagents = Counter(
            "herdsman_subagents",
            "Sub-agents that ended, by outcome (completed, failed, timed_out, cancelled).",
            ["outcome"],
            registry=self.registry,
        )
        self.active_streams = Gauge(
            "herdsman_active_streams", "SSE streams open to clients right now.", registry=self.registry
        )
        self.runs_waiting = Gauge(
            "herdsman_runs_waiting",
            "Runs in the run queue that no live process holds, over every gateway and worker sharing it "
            "(read at each scrape; -1 when the queue could not be read). Scale workers on it.",
            registry=self.registry,
        )

    def run_started(self, run: Run) -> None:
        """Count a started run."""
        self.runs_started.inc()

    def run_finished(self, run: Run, seconds: float) -> None:
        """Count a finished run by status and observe its duration."""
        self.runs_finished.labels(status=run.status).inc()
        if run.status == "error":
            self.runs_failed.inc()
        self.run_duration.observe(seconds)

    def model_tokens(self, run: Run, model: str, input_tokens: int, output_tokens: int) -> None:
        """Count the tokens of one model call."""
        model = self.model_label(model)
        self.tokens.labels(model=model, direction="input").inc(input_tokens)
        self.tokens.labels(model=model, direction="output").inc(output_tokens)

    def tool_finished(self, run: Run, tool: str, failed: bool) -> None:
        """Count one tool call by name and outcome."""
        outcome = "error" if failed else "ok"
        self.tool_calls.labels(tool=self.tool_label(tool), outcome=outcome).inc()
        if tool == "bash":
            self.sandbox_commands.labels(outcome=outcome).inc()

    def subagent_finished(self, run: Run, outcome: str) -> None:
        """Count one sub-agent by how it ended."""
        self.subagents.labels(outcome=outcome).inc()


router = APIRouter(tags=["metrics"])


@router.get("/metrics", response_class=Response, summary="Prometheus metrics", dependencies=[Depends(metrics_access)])
async def metrics(request: Request) -> Response:
    """Counters of runs, run durations and open streams, and the run queue's depth, in the
    Prometheus text format."""
    gw = request.app.state.gateway
    try:
        gw.metrics.runs_waiting.set(await gw.runs.queue.waiting(time.time()))
    except Exception as exc:  # noqa: BLE001 - the other metrics are still worth serving
        log.warning("metrics_queue_unreadable", error=f"{type(exc).__name__}: {exc}")
        gw.metrics.runs_waiting.set(-1)
    return Response(generate_latest(gw.metrics.registry), media_type=CONTENT_TYPE_LATEST)
