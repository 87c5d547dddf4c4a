"""The reference filesystem MCP server from npm (@modelcontextprotocol/server-filesystem).

``make test`` installs it (npm, into .venv/npm) and names it in MCP_FILESYSTEM_SERVER; run alone,
the test is skipped unless that variable or ``mcp-server-filesystem`` on PATH points at it.
Tests never download it themselves (no network but loopback in tests).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from herdsman.client import HerdsmanClient, ToolResult
from herdsman.models.scripted import ScriptedChatModel
from herdsman.tools.mcp import mcp_status
from tests.support import make_config

SERVER = os.environ.get("MCP_FILESYSTEM_SERVER") or shutil.which("mcp-server-filesystem")
pytestmark = pytest.mark.skipif(
    not SERVER or not Path(SERVER).exists(),
    reason="@modelcontextprotocol/server-filesystem is not installed (set MCP_FILESYSTEM_SERVER)",
)


def call(name: str, **args: object) -> dict:
    return {"tool_calls": [{"name": name, "args": args}]}


async def test_agent_reads_through_filesystem_server_and_is_kept_inside(home: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "herd.txt").write_text("12 goats, 3 sheep\n")
    config = make_config(
        home,
        mcp={"servers": [
            {"name": "fs", "command": SERVER, "args": [str(shared)], "tool_prefix": "fs_",
             "allow": ["read_text_file", "list_directory"]},
            {"name": "fs_raw", "command": SERVER, "args": [str(shared)], "allow": ["read_file", "list_directory"],
             "timeout_seconds": 30},
        ]},
    )  # fmt: skip
    model = ScriptedChatModel(
        responses=[
            call("fs_read_text_file", path=str(shared / "herd.txt")),
            call("fs_read_text_file", path="/etc/passwd"),
            "There are 12 goats.",
        ]
    )
    async with HerdsmanClient(config, model=model) as client:
        events = [e async for e in client.stream("count the herd", thread_id="t-fs")]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert not results[0].is_error and "12 goats, 3 sheep" in results[0].content
    assert results[1].is_error and "outside allowed directories" in results[1].content
    assert {"fs_read_text_file", "fs_list_directory"} <= set(model.calls[0].tools)
    # unprefixed, the server's read_file would shadow the sandbox's: the built-in wins, and status says so
    status = {s.name: s for s in mcp_status(config)}
    assert any(s.startswith("read_file: name already used") for s in status["fs_raw"].skipped)
    assert "list_directory" in model.calls[0].tools
