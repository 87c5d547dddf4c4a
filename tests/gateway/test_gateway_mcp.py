"""An MCP server that is down when the gateway starts joins the agent once it is up."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
from langgraph_sdk import get_client

from herdsman.models.scripted import ScriptedChatModel
from tests.gateway.gateway_support import running_gateway, user_message
from tests.support import make_config
from tests.tools.conftest import flaky_stdio_server


async def _state_of(http: httpx.AsyncClient, server: str) -> str:
    servers = (await http.get("/api/mcp/status")).json()["servers"]
    return next(s["state"] for s in servers if s["name"] == server)


async def test_a_server_down_at_start_is_retried_and_its_tools_reach_new_runs(home: Path, tmp_path: Path) -> None:
    flag = tmp_path / "up"
    server = flaky_stdio_server(tmp_path, "later", flag, allow=["echo"], tool_prefix="later_")
    config = make_config(home, mcp={"retry_after_seconds": 0.2, "servers": [server]}, title={"enabled": False})
    model = ScriptedChatModel(
        respond=lambda messages: (
            {"tool_calls": [{"name": "later_echo", "args": {"text": "back"}}]}
            if messages[-1].type == "human"
            else "done"
        )
    )
    with running_gateway(config, model=model) as served:
        async with httpx.AsyncClient(base_url=served.url) as http:
            assert await _state_of(http, "later") == "failed"
            flag.touch()  # the server comes up
            for _ in range(300):
                if await _state_of(http, "later") == "ready":
                    break
                await asyncio.sleep(0.05)
            assert await _state_of(http, "later") == "ready"
        client = get_client(url=served.url, api_key=None)
        try:
            for _ in range(100):  # the rebuilt agent is swapped in right after the server loads
                tid = (await client.threads.create())["thread_id"]
                values = await client.runs.wait(tid, "lead_agent", input=user_message("say back"))
                result = next(m for m in values["messages"] if m["type"] == "tool")
                if "echo: back" in str(result["content"]):
                    break
                await asyncio.sleep(0.05)
            assert "echo: back" in str(result["content"])  # the tool now exists for the lead
        finally:
            await client.aclose()
