"""``tools.max_parallel_calls``: the calls of one model reply run at most that many at once."""

from __future__ import annotations

import asyncio

from langchain.agents import create_agent
from langchain_core.tools import tool

from herdsman.middleware.parallel_calls import ParallelCallsMiddleware
from herdsman.models.scripted import ScriptedChatModel


async def test_eight_calls_of_one_reply_run_three_at_a_time_and_all_answer() -> None:
    now, most = [0], [0]

    @tool
    async def work(n: int) -> str:
        """Work a moment."""
        now[0] += 1
        most[0] = max(most[0], now[0])
        await asyncio.sleep(0.05)
        now[0] -= 1
        return f"done {n}"

    calls = [{"name": "work", "args": {"n": n}} for n in range(8)]
    model = ScriptedChatModel(responses=[{"tool_calls": calls}, "finished"])
    agent = create_agent(model, tools=[work], middleware=[ParallelCallsMiddleware(3)])
    result = await agent.ainvoke({"messages": [{"role": "user", "content": "go"}]})
    answers = [m.content for m in result["messages"] if m.type == "tool"]
    assert sorted(answers) == sorted(f"done {n}" for n in range(8))
    assert most[0] == 3
    assert result["messages"][-1].content == "finished"


def test_the_sync_path_is_bounded_too() -> None:
    import threading
    import time

    lock, now, most = threading.Lock(), [0], [0]

    @tool
    def work(n: int) -> str:
        """Work a moment."""
        with lock:
            now[0] += 1
            most[0] = max(most[0], now[0])
        time.sleep(0.05)
        with lock:
            now[0] -= 1
        return f"done {n}"

    calls = [{"name": "work", "args": {"n": n}} for n in range(6)]
    model = ScriptedChatModel(responses=[{"tool_calls": calls}, "finished"])
    agent = create_agent(model, tools=[work], middleware=[ParallelCallsMiddleware(2)])
    result = agent.invoke({"messages": [{"role": "user", "content": "go"}]})
    assert len([m for m in result["messages"] if m.type == "tool"]) == 6
    assert 1 <= most[0] <= 2
