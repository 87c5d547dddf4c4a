"""Human in the loop through the API: a tool that calls LangGraph ``interrupt()`` (``ask_user``,
served by the ``hitl_gateway`` fixture), the thread waits (status interrupted, ``__interrupt__``
in values), and ``command.resume`` answers it."""

from __future__ import annotations

from langgraph_sdk import get_client

from tests.gateway.gateway_support import user_message


async def test_interrupt_and_resume(hitl_gateway) -> None:
    sdk = get_client(url=hitl_gateway.url, api_key=None)
    try:
        tid = (await sdk.threads.create())["thread_id"]
        parts = [
            p
            async for p in sdk.runs.stream(
                tid, "lead_agent", input=user_message("ask shall I deploy"), stream_mode=["values", "updates"]
            )
        ]
        interrupted = [p.data for p in parts if p.event == "values" and "__interrupt__" in p.data]
        assert interrupted, "a values event carries __interrupt__"
        pending = interrupted[-1]["__interrupt__"][0]
        assert pending["value"] == {"question": "shall I deploy", "choices": ["yes", "no"]} and pending["id"]
        assert any("__interrupt__" in p.data for p in parts if p.event == "updates")
        thread = await sdk.threads.get(tid)
        assert thread["status"] == "interrupted"
        assert [i["value"]["question"] for v in thread["interrupts"].values() for i in v] == ["shall I deploy"]
        state = await sdk.threads.get_state(tid)
        assert state["next"] == ["tools"] and state["interrupts"][0]["id"] == pending["id"]

        resumed = await sdk.runs.wait(tid, "lead_agent", command={"resume": "yes"})
        assert resumed["messages"][-1]["content"] == "done: the user said yes"
        assert "__interrupt__" not in resumed
        assert (await sdk.threads.get(tid))["status"] == "idle"
    finally:
        await sdk.aclose()


async def test_interrupt_before_a_node_pauses_the_run(hitl_gateway) -> None:
    sdk = get_client(url=hitl_gateway.url, api_key=None)
    try:
        tid = (await sdk.threads.create())["thread_id"]
        values = await sdk.runs.wait(
            tid, "lead_agent", input=user_message("write a.txt hi"), interrupt_before=["tools"]
        )
        assert values["messages"][-1]["tool_calls"][0]["name"] == "write_file"
        assert (await sdk.threads.get_state(tid))["next"] == ["tools"]
        assert (await sdk.threads.get(tid))["status"] == "interrupted"
        finished = await sdk.runs.wait(tid, "lead_agent", input=None)
        assert finished["messages"][-1]["content"].startswith("done: ")
        assert (await sdk.threads.get(tid))["status"] == "idle"
    finally:
        await sdk.aclose()
