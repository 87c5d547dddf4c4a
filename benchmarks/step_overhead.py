"""The harness's own overhead per agent step, against deepagents and a bare LangGraph loop.

Each agent gets its own scripted model at zero latency that calls one trivial tool per step
for ``--steps`` steps, then answers. All three use an in-memory checkpointer. Herdsman is the
default lead agent with every middleware the default config turns on. Runs are interleaved
and repeated, and the median is kept, so the three figures are comparable on a noisy machine.

Prints one JSON line: herdsman_ms_per_step, deepagents_ms_per_step, bare_ms_per_step, plus the
ratios against the targets (Herdsman <= 0.5x deepagents, <= 1.5x bare).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from herdsman.agents.lead import create_lead_agent
from herdsman.config.schema import CheckpointerConfig, HerdsmanConfig
from herdsman.models.scripted import ScriptedChatModel


@tool
def step(n: int) -> str:
    """Record step n and return a short acknowledgement."""
    return f"step {n} done"


def stepping_model(steps: int) -> ScriptedChatModel:
    """A scripted model that calls ``step`` once per turn for ``steps`` turns, then answers."""

    def respond(messages: list[Any]) -> Any:
        done = sum(isinstance(m, ToolMessage) for m in messages)
        if done >= steps:
            return f"finished {done} steps"
        return {"tool_calls": [{"name": "step", "args": {"n": done + 1}}]}

    return ScriptedChatModel(respond=respond)


def bare_agent(model: ScriptedChatModel, checkpointer: Any) -> Any:
    """The floor: a hand-built LangGraph ReAct loop, a model node and a ToolNode."""
    bound = model.bind_tools([step])

    async def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode([step]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition, {"tools": "tools", END: END})
    graph.add_edge("tools", "model")
    return graph.compile(checkpointer=checkpointer)


def herdsman_maker(home: Path) -> Callable[[ScriptedChatModel, Any], Any]:
    """Builds the default lead agent (default config, memory checkpointer) with the step tool."""
    config = HerdsmanConfig(home=home, checkpointer=CheckpointerConfig(type="memory"))

    def make(model: ScriptedChatModel, checkpointer: Any) -> Any:
        return create_lead_agent(config, model=model, checkpointer=checkpointer, extra_tools=[step])

    return make


def deep_agent(model: ScriptedChatModel, checkpointer: Any) -> Any:
    """LangChain's deepagents with its defaults and the same tool."""
    from deepagents import create_deep_agent

    return create_deep_agent(model=model, tools=[step], checkpointer=checkpointer)


async def time_run(make: Callable[[ScriptedChatModel, Any], Any], steps: int) -> float:
    """Milliseconds per step for one run of a fresh agent on a fresh thread."""
    model = stepping_model(steps)
    agent = make(model, InMemorySaver())
    config = {"configurable": {"thread_id": uuid.uuid4().hex}, "recursion_limit": steps * 10 + 50}
    start = time.perf_counter()
    result = await agent.ainvoke({"messages": [HumanMessage("go")]}, config)
    elapsed = time.perf_counter() - start
    tool_results = sum(isinstance(m, ToolMessage) for m in result["messages"])
    if tool_results != steps:
        raise RuntimeError(f"an agent ran {tool_results} steps, expected {steps}")
    return elapsed * 1000 / steps


async def main(steps: int, repeats: int) -> dict[str, Any]:
    """Run every agent ``repeats`` times, interleaved; return the medians."""
    with tempfile.TemporaryDirectory() as tmp:
        makers: dict[str, Callable[[ScriptedChatModel, Any], Any]] = {
            "herdsman": herdsman_maker(Path(tmp)),
            "deepagents": deep_agent,
            "bare": bare_agent,
        }
        for make in makers.values():  # warm-up: imports, graph compilation caches
            await time_run(make, 3)
        samples: dict[str, list[float]] = {name: [] for name in makers}
        for _ in range(repeats):
            for name, make in makers.items():
                samples[name].append(await time_run(make, steps))
    med = {name: statistics.median(values) for name, values in samples.items()}
    return {
        "benchmark": "step_overhead",
        "steps": steps,
        "repeats": repeats,
        "herdsman_ms_per_step": round(med["herdsman"], 3),
        "deepagents_ms_per_step": round(med["deepagents"], 3),
        "bare_ms_per_step": round(med["bare"], 3),
        "herdsman_vs_deepagents": round(med["herdsman"] / med["deepagents"], 3),
        "herdsman_vs_bare": round(med["herdsman"] / med["bare"], 3),
        "targets": {"herdsman_vs_deepagents_max": 0.5, "herdsman_vs_bare_max": 1.5},
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.steps, args.repeats))))
    sys.stdout.flush()
