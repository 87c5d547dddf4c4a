"""Fan-out efficiency: N sub-agents whose model takes a fixed time per call, all at once.

The lead (zero latency) delegates N tasks in one reply, with concurrency N; each sub-agent's
scripted model waits ``--latency`` seconds, then answers. The ideal wall time is one latency, so
``efficiency_N`` = wall time / latency (1.0 is perfect). deepagents runs the same fan-out with the
same scripted models for comparison. ``completion_latency_p50_ms`` is the median time from a
sub-agent's final reply to its ``task_completed`` event reaching the client of the lead's stream
(the result is handed to the lead at that moment; nothing polls).

Prints one JSON line: efficiency_3, efficiency_10, efficiency_30, deepagents_efficiency_10,
completion_latency_p50_ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from herdsman.agents.lead import create_lead_agent, run_config
from herdsman.config import parse_config
from herdsman.models.scripted import ScriptedChatModel


class Clock:
    """Timestamps of sub-agent final replies and of the lead's calls."""

    def __init__(self) -> None:
        self.finished: dict[str, float] = {}
        self.lead_calls: list[float] = []


def sub_model(latency: float, clock: Clock) -> ScriptedChatModel:
    """A sub-agent model: waits ``latency``, then answers (and notes when)."""

    def respond(messages: list[Any]) -> str:
        prompt = next(m.text for m in messages if isinstance(m, HumanMessage))
        clock.finished[prompt.removeprefix("do ")] = time.perf_counter()
        return "part done"

    return ScriptedChatModel(respond=respond, latency=latency)


def lead_model(n: int, subagent_type: str, clock: Clock, deepagents: bool = False) -> ScriptedChatModel:
    """A lead that delegates ``n`` tasks in its first reply and then answers.

    deepagents' task tool takes the instructions as ``description`` and has no ``prompt``.
    """

    def respond(messages: list[Any]) -> Any:
        clock.lead_calls.append(time.perf_counter())
        if any(isinstance(m, ToolMessage) for m in messages):
            return "all parts done"
        if deepagents:
            args = [{"description": f"do part {i}", "subagent_type": subagent_type} for i in range(n)]
        else:
            args = [
                {"description": f"part {i}", "prompt": f"do part {i}", "subagent_type": subagent_type} for i in range(n)
            ]
        calls = [{"name": "task", "args": a} for a in args]
        return {"tool_calls": calls}

    return ScriptedChatModel(respond=respond)


async def herdsman_fanout(n: int, latency: float, home: Path) -> tuple[float, list[float]]:
    """Wall time of one Herdsman fan-out of ``n``, and each sub-agent's completion latency."""
    config = parse_config(
        json.dumps(
            {
                "home": str(home),
                "checkpointer": {"type": "memory"},
                "models": [
                    {"name": "lead", "use": "herdsman.models.scripted:ScriptedChatModel"},
                    {"name": "worker", "use": "herdsman.models.scripted:ScriptedChatModel"},
                ],
                "lead": {"model": "lead", "model_retries": 0},
                "subagents": {"model": "worker", "max_concurrent": n, "max_per_run": max(50, n)},
            }
        ),
        env={},
    )
    clock = Clock()
    agent = create_lead_agent(
        config,
        model=lead_model(n, "general-purpose", clock),
        checkpointer=InMemorySaver(),
        model_overrides={"worker": sub_model(latency, clock)},
    )
    seen: dict[str, float] = {}
    start = time.perf_counter()
    async for event in agent.astream(
        {"messages": [HumanMessage("go")]}, run_config(config, uuid.uuid4().hex), stream_mode="custom"
    ):
        if event.get("type") == "task_completed":
            seen[event["description"]] = time.perf_counter()
    wall = time.perf_counter() - start
    return wall, [(seen[part] - done) * 1000 for part, done in clock.finished.items()]


async def deepagents_fanout(n: int, latency: float) -> float:
    """Wall time of the same fan-out with deepagents."""
    from deepagents import create_deep_agent

    clock = Clock()
    worker = {
        "name": "worker",
        "description": "Does one part.",
        "system_prompt": "Do the part you are given.",
        "model": sub_model(latency, clock),
    }
    agent = create_deep_agent(
        model=lead_model(n, "worker", clock, deepagents=True), subagents=[worker], checkpointer=InMemorySaver()
    )
    start = time.perf_counter()
    result = await agent.ainvoke(
        {"messages": [HumanMessage("go")]},
        {"configurable": {"thread_id": uuid.uuid4().hex}, "recursion_limit": 1000},
    )
    wall = time.perf_counter() - start
    if len(clock.finished) != n or any(getattr(m, "status", "") == "error" for m in result["messages"]):
        raise RuntimeError("deepagents did not run every sub-agent; the comparison would be meaningless")
    return wall


async def main(sizes: list[int], latency: float, compare: int) -> dict[str, Any]:
    """Run each size once (after a warm-up) and the deepagents comparison."""
    figures: dict[str, Any] = {"benchmark": "subagent_fanout", "latency_s": latency}
    latencies: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        await herdsman_fanout(2, 0.01, Path(tmp))  # warm-up: imports and first compilation
        for n in sizes:
            wall, done = await herdsman_fanout(n, latency, Path(tmp))
            figures[f"efficiency_{n}"] = round(wall / latency, 3)
            latencies += done
    if compare:
        await deepagents_fanout(2, 0.01)
        figures[f"deepagents_efficiency_{compare}"] = round(await deepagents_fanout(compare, latency) / latency, 3)
    figures["completion_latency_p50_ms"] = round(statistics.median(latencies), 2)
    figures["targets"] = {
        "efficiency_max_up_to_10": 1.10,
        "efficiency_max_30": 1.25,
        "completion_latency_p50_ms_max": 20,
    }
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="3,10,30", help="comma-separated fan-out sizes")
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per sub-agent model call")
    parser.add_argument("--compare", type=int, default=10, help="fan-out size run with deepagents (0: skip)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    print(json.dumps(asyncio.run(main(sizes, args.latency, args.compare))))
