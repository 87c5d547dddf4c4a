"""MCP servers the tests run as real subprocesses.

python mcp_server.py stdio              FastMCP "calc" over stdio
python mcp_server.py http PORT          the same over streamable HTTP on 127.0.0.1:PORT
python mcp_server.py sse PORT           the same over SSE (legacy HTTP transport)
python mcp_server.py http-auth PORT TOK  streamable HTTP that wants "Authorization: Bearer TOK"
python mcp_server.py malformed          a low-level server: one good tool, one with a bad schema (stdio)
python mcp_server.py crash              exits at once with an error
python mcp_server.py hang               starts and never answers
"""

from __future__ import annotations

import sys
import time


def calc_server(port: int = 0):
    from mcp.server.fastmcp import FastMCP

    server = FastMCP("calc", host="127.0.0.1", port=port or 8000, log_level="WARNING")

    @server.tool()
    def add(a: int, b: int) -> str:
        """Add two integers."""
        return f"{a} + {b} = {a + b}"

    @server.tool()
    def echo(text: str) -> str:
        """Repeat the text back."""
        return f"echo: {text}"

    @server.tool()
    def delete_everything() -> str:
        """A dangerous tool that config should deny."""
        return "deleted"

    @server.tool()
    async def nap(seconds: float) -> str:
        """Sleep, then answer (a tool that hangs when asked to)."""
        import anyio

        await anyio.sleep(seconds)
        return "awake"

    @server.tool()
    def fail(reason: str) -> str:
        """Always fails with the reason."""
        raise ValueError(f"failed on purpose: {reason}")

    return server


def serve_with_token(port: int, token: str) -> None:
    """The calc server over streamable HTTP, answering 401 unless sent ``Bearer <token>``."""
    import uvicorn

    app = calc_server(port).streamable_http_app()
    wanted = f"Bearer {token}".encode()

    async def guarded(scope, receive, send) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != wanted:
            await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning")


def malformed_server() -> None:
    import anyio
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server
    from mcp.types import TextContent, Tool

    server = Server("malformed")

    @server.list_tools()
    async def list_tools() -> list[Tool]:
        return [
            Tool(name="good", description="A fine tool.", inputSchema={"type": "object", "properties": {}}),
            Tool(name="broken", description="Bad schema.", inputSchema={"type": "string"}),
        ]

    @server.call_tool()
    async def call_tool(name: str, arguments: dict) -> list[TextContent]:
        return [TextContent(type="text", text=f"{name} ran")]

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "stdio":
        calc_server().run("stdio")
    elif mode == "http":
        calc_server(int(sys.argv[2])).run("streamable-http")
    elif mode == "sse":
        calc_server(int(sys.argv[2])).run("sse")
    elif mode == "http-auth":
        serve_with_token(int(sys.argv[2]), sys.argv[3])
    elif mode == "malformed":
        malformed_server()
    elif mode == "crash":
        print("calc server: cannot open database /nonexistent", file=sys.stderr)
        sys.exit(3)
    elif mode == "hang":
        time.sleep(600)
