"""MCP tools against real servers: FastMCP over stdio and streamable HTTP, a crashing, a hanging
and a malformed one. One bad server never stops the others."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from langchain_core.messages import ToolMessage

from herdsman.config.schema import MCPConfig
from herdsman.tools.mcp import MCPToolRegistry
from tests.tools.conftest import flaky_stdio_server, stdio_server


def registry(*servers: dict, **extra: object) -> MCPToolRegistry:
    return MCPToolRegistry(MCPConfig.model_validate({"servers": list(servers), **extra}))


def text_of(result: object) -> str:
    if isinstance(result, ToolMessage):
        result = result.content
    if isinstance(result, list):
        return "\n".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in result)
    return str(result)


async def call(tool, **args: object) -> ToolMessage:
    return await tool.ainvoke({"type": "tool_call", "id": "c1", "name": tool.name, "args": args})


async def test_stdio_server_tools_load_and_run() -> None:
    reg = registry(stdio_server("calc"))
    tools = {t.name: t for t in await reg.aload()}
    assert {"add", "echo", "delete_everything", "fail"} <= set(tools)
    result = await call(tools["add"], a=2, b=40)
    assert "2 + 40 = 42" in text_of(result)
    [status] = reg.status()
    assert status.state == "ready" and "add" in status.tools and status.error is None


async def test_streamable_http_server_with_prefix_allow_and_deny(http_mcp_url: str) -> None:
    reg = registry(
        {
            "name": "remote",
            "transport": "streamable_http",
            "url": http_mcp_url,
            "headers": {"Authorization": "Bearer test"},
            "tool_prefix": "calc_",
            "allow": ["add", "echo", "delete_*"],
            "deny": ["delete_*"],
        }
    )
    tools = {t.name: t for t in await reg.aload()}
    assert set(tools) == {"calc_add", "calc_echo"}
    assert "echo: hi" in text_of(await call(tools["calc_echo"], text="hi"))
    assert tools["calc_add"].metadata["mcp_server"] == "remote"


async def test_tool_error_reaches_model_as_error_result() -> None:
    reg = registry(stdio_server("calc", allow=["fail"]))
    [tool] = await reg.aload()
    result = await call(tool, reason="disk full")
    assert result.status == "error"
    assert "failed on purpose: disk full" in text_of(result)


async def test_crashing_and_hanging_servers_do_not_block_good_one(http_mcp_url: str) -> None:
    reg = registry(
        stdio_server("crashy", "crash"),
        stdio_server("stuck", "hang", timeout_seconds=2),
        {"name": "good", "transport": "streamable_http", "url": http_mcp_url, "allow": ["add"]},
        {"name": "missing", "transport": "stdio", "command": "/no/such/mcp-server"},
        {"name": "off", "transport": "stdio", "command": "whatever", "enabled": False},
    )
    tools = await reg.aload()
    assert [t.name for t in tools] == ["add"]
    status = {s.name: s for s in reg.status()}
    assert status["good"].state == "ready"
    assert status["crashy"].state == "failed" and "crashed" in status["crashy"].error
    assert status["stuck"].state == "failed" and "no answer within 2s" in status["stuck"].error
    assert status["missing"].state == "failed" and "/no/such/mcp-server" in status["missing"].error
    assert status["off"].state == "disabled"


async def test_unreachable_http_server_is_reported() -> None:
    from tests.tools.conftest import free_port

    reg = registry({"name": "gone", "transport": "streamable_http", "url": f"http://127.0.0.1:{free_port()}/mcp"})
    assert await reg.aload() == []
    [status] = reg.status()
    assert status.state == "failed" and "is the server running" in status.error


async def test_malformed_schema_is_skipped_and_named() -> None:
    reg = registry(stdio_server("odd", "malformed"))
    tools = await reg.aload()
    assert [t.name for t in tools] == ["good"]
    [status] = reg.status()
    assert status.state == "ready"
    assert any(s.startswith("broken:") and "'string'" in s for s in status.skipped)


async def test_tools_are_cached_and_failed_server_retried(tmp_path: Path) -> None:
    """A server that failed is retried on a later load; one that loaded is not contacted again."""
    now = [0.0]
    flag = tmp_path / "ready"
    count = tmp_path / "starts"
    counter = tmp_path / "counting.py"
    counter.write_text(
        "import runpy, sys\n"
        f"open({str(count)!r}, 'a').write('x')\n"
        f"sys.argv = ['mcp_server.py', 'stdio']\n"
        f"runpy.run_path({str(Path(__file__).with_name('mcp_server.py'))!r}, run_name='__main__')\n"
    )
    reg = MCPToolRegistry(
        MCPConfig.model_validate(
            {
                "retry_after_seconds": 30,
                "servers": [
                    flaky_stdio_server(tmp_path, "flaky", flag, allow=["echo"], tool_prefix="f_"),
                    {"name": "steady", "command": sys.executable, "args": [str(counter)], "allow": ["add"]},
                ],
            }
        ),
        clock=lambda: now[0],
    )
    assert [t.name for t in await reg.aload()] == ["add"]
    flag.touch()
    now[0] = 10.0  # too early: not retried yet
    assert [t.name for t in await reg.aload()] == ["add"]
    assert {s.name: s.state for s in reg.status()}["flaky"] == "failed"
    now[0] = 31.0
    assert sorted(t.name for t in await reg.aload()) == ["add", "f_echo"]
    assert count.read_text() == "x"  # listed once; the cache served the rest


def test_sync_load_works_inside_a_running_loop() -> None:
    import asyncio

    reg = registry(stdio_server("calc", allow=["echo"]))

    async def inside() -> list[str]:
        return [t.name for t in reg.load()]

    assert asyncio.run(inside()) == ["echo"]
    [echo] = reg.load()  # cached: no new connection
    assert "echo: sync" in text_of(echo.invoke({"text": "sync"}))  # a blocking call works too


def test_config_errors_name_the_fix() -> None:
    with pytest.raises(ValueError, match="has no command"):
        MCPConfig.model_validate({"servers": [{"name": "x", "transport": "stdio"}]})
    with pytest.raises(ValueError, match="has no url"):
        MCPConfig.model_validate({"servers": [{"name": "x", "transport": "sse"}]})
    with pytest.raises(ValueError, match="more than once"):
        MCPConfig.model_validate({"servers": [{"name": "x", "command": "a"}, {"name": "x", "command": "b"}]})


async def test_sse_server(sse_mcp_url: str) -> None:
    reg = registry({"name": "legacy", "transport": "sse", "url": sse_mcp_url, "allow": ["echo"]})
    [tool] = await reg.aload()
    assert "echo: over sse" in text_of(await call(tool, text="over sse"))


async def test_tool_call_that_hangs_is_cut_off_and_server_stays_usable(http_mcp_url: str) -> None:
    reg = registry(
        {
            "name": "calc",
            "transport": "streamable_http",
            "url": http_mcp_url,
            "allow": ["nap"],
            "call_timeout_seconds": 1,
        }
    )
    [nap] = await reg.aload()
    slow = await call(nap, seconds=8)
    assert slow.status == "error" and "did not finish nap within 1s" in text_of(slow)
    assert "awake" in text_of(await call(nap, seconds=0))


async def test_http_server_refusing_credentials_is_reported(web) -> None:
    """An endpoint that answers 401 (here the local Tavily stand-in, which wants a key)."""
    reg = registry({"name": "locked", "transport": "streamable_http", "url": web.url("/tavily/search")})
    assert await reg.aload() == []
    [status] = reg.status()
    assert status.state == "failed" and "401" in status.error and "headers" in status.error


async def test_oauth_client_credentials(web, oauth_mcp_url: str) -> None:
    """The token comes from the token endpoint once and is reused for listing and calling."""
    oauth = {"token_url": web.url("/oauth/token"), "client_id": "herdsman", "client_secret": "s3cret", "scope": "tools"}
    reg = registry(
        {"name": "guarded", "transport": "streamable_http", "url": oauth_mcp_url, "oauth": oauth, "allow": ["echo"]}
    )
    [echo] = await reg.aload()
    assert "echo: authorized" in text_of(await call(echo, text="authorized"))
    token_calls = [r for r in web.requests if r[1] == "/oauth/token"]
    assert len(token_calls) == 1 and b"scope=tools" in token_calls[0][3]

    wrong = registry({"name": "wrong", "transport": "streamable_http", "url": oauth_mcp_url,
                      "oauth": {**oauth, "client_secret": "nope"}})  # fmt: skip
    assert await wrong.aload() == []
    [status] = wrong.status()
    assert status.state == "failed" and "HTTP 401" in status.error and "oauth.client_secret" in status.error

    anonymous = registry({"name": "anon", "transport": "streamable_http", "url": oauth_mcp_url})
    assert await anonymous.aload() == []
    assert "401" in anonymous.status()[0].error


def test_oauth_needs_http_transport() -> None:
    oauth = {"token_url": "http://x/token", "client_id": "a", "client_secret": "b"}
    with pytest.raises(ValueError, match="oauth is for sse and streamable_http"):
        MCPConfig.model_validate({"servers": [{"name": "x", "command": "a", "oauth": oauth}]})
