"""Context budget of a long run: 200 steps, each reading a 20 KB tool output.

The same scripted model drives Herdsman (default config plus summarization with its trigger
below the budget; long tool results are offloaded to files by default) and deepagents (its
defaults). A model call is measured as the approximate token count of every message it receives
(LangChain's ``count_tokens_approximately``, the counter summarization uses); summarization
requests are answered by the same model and counted too.

Prints one JSON line: budget_tokens, peak_prompt_tokens, total_prompt_tokens,
deepagents_total_prompt_tokens (plus deepagents' peak and the ratio). Targets: peak within the
budget; total at most 0.6x deepagents'.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from herdsman.agents.lead import create_lead_agent
from herdsman.config.schema import HerdsmanConfig
from herdsman.models.scripted import ScriptedChatModel

OUTPUT_BYTES = 20_000
SUMMARY = "Summary: pages 1 to N were fetched; each held log lines, nothing unusual was found."


@tool
def fetch_page(n: int) -> str:
    """Fetch page n of the log (about 20 KB of text)."""
    line = f"page {n:04d} entry {{i:04d}}: status=ok latency_ms={{ms}} path=/api/v1/items/{{i}}\n"
    out, i = [], 0
    while sum(len(x) for x in out) < OUTPUT_BYTES:
        out.append(line.format(i=i, ms=(i * 37) % 500))
        i += 1
    return "".join(out)


def is_summary_request(messages: list[BaseMessage]) -> bool:
    """A summarization call: it has no system prompt of an agent."""
    return not messages or messages[0].type != "system"


def long_run_model(steps: int) -> ScriptedChatModel:
    """Calls ``fetch_page`` once per step for ``steps`` steps, then answers; writes summaries when asked."""
    done = [0]

    def respond(messages: list[BaseMessage]) -> Any:
        if is_summary_request(messages):
            return SUMMARY
        done[0] += 1
        if done[0] > steps:
            return f"Read {steps} pages."
        return {"tool_calls": [{"name": "fetch_page", "args": {"n": done[0]}}]}

    return ScriptedChatModel(respond=respond)


def herdsman_config(home: Path, budget: int, steps: int) -> HerdsmanConfig:
    """Default config with summarization triggered at three quarters of the budget."""
    return HerdsmanConfig.model_validate(
        {
            "home": str(home),
            "checkpointer": {"type": "memory"},
            "lead": {"max_steps": steps + 20, "model_retries": 0},
            "summarization": {"enabled": True, "trigger_tokens": budget * 3 // 4, "keep_messages": 20},
            "title": {"enabled": False},
        }
    )


def prompt_figures(model: ScriptedChatModel) -> tuple[int, int]:
    """(peak, total) approximate prompt tokens over every call the model received."""
    sizes = [count_tokens_approximately(call.messages) for call in model.calls]
    return (max(sizes) if sizes else 0), sum(sizes)


async def run_herdsman(steps: int, budget: int) -> tuple[ScriptedChatModel, int]:
    """Run the long task on Herdsman; the model and the number of tool results produced."""
    with tempfile.TemporaryDirectory() as tmp:
        config = herdsman_config(Path(tmp), budget, steps)
        model = long_run_model(steps)
        agent = create_lead_agent(config, model=model, checkpointer=InMemorySaver(), extra_tools=[fetch_page])
        cfg = {"configurable": {"thread_id": uuid.uuid4().hex}, "recursion_limit": steps * 10 + 50}
        await agent.ainvoke({"messages": [HumanMessage("Read every page of the log.")]}, cfg)
    return model, steps


async def run_deepagents(steps: int) -> ScriptedChatModel:
    """Run the same task on deepagents with its defaults."""
    from deepagents import create_deep_agent

    model = long_run_model(steps)
    agent = create_deep_agent(model=model, tools=[fetch_page], checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": uuid.uuid4().hex}, "recursion_limit": steps * 10 + 50}
    await agent.ainvoke({"messages": [HumanMessage("Read every page of the log.")]}, cfg)
    return model


async def main(steps: int, budget: int, compare: bool) -> dict[str, Any]:
    """Both runs; the figures as one dict."""
    herdsman_model, _ = await run_herdsman(steps, budget)
    peak, total = prompt_figures(herdsman_model)
    figures: dict[str, Any] = {
        "benchmark": "context_budget",
        "steps": steps,
        "budget_tokens": budget,
        "peak_prompt_tokens": peak,
        "total_prompt_tokens": total,
    }
    if compare:
        deep_peak, deep_total = prompt_figures(await run_deepagents(steps))
        figures["deepagents_total_prompt_tokens"] = deep_total
        figures["deepagents_peak_prompt_tokens"] = deep_peak
        figures["herdsman_vs_deepagents_total"] = round(total / deep_total, 3) if deep_total else None
    figures["targets"] = {"peak_within_budget": peak <= budget, "total_vs_deepagents_max": 0.6}
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--budget", type=int, default=16_000, help="Context budget in tokens.")
    parser.add_argument("--no-deepagents", action="store_true", help="Skip the deepagents run.")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.steps, args.budget, not args.no_deepagents))))
    sys.stdout.flush()
