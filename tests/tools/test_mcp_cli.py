"""``herdsman mcp status`` in a new process, against real stdio MCP servers."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.support import run_cli
from tests.tools.conftest import stdio_server


def write_config(tmp_path: Path, servers: list[dict]) -> Path:
    path = tmp_path / "config.yaml"
    data = {"home": str(tmp_path / "home"), "checkpointer": {"type": "memory"}, "mcp": {"servers": servers}}
    path.write_text(yaml.safe_dump(data))
    return path


def test_status_shows_ready_failed_and_disabled(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        [
            stdio_server("calc", allow=["add", "echo"]),
            stdio_server("crashy", "crash"),
            {"name": "later", "command": "whatever", "enabled": False},
        ],
    )
    done = run_cli("mcp", "status", "--config", str(config), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    out = done.stdout
    assert "calc" in out and "ready" in out and "add, echo" in out
    assert "crashy" in out and "failed" in out and "crashed" in out
    assert "later" in out and "disabled" in out


def test_status_json_and_all_ready_exit_zero(tmp_path: Path) -> None:
    config = write_config(tmp_path, [stdio_server("calc", tool_prefix="c_", deny=["delete_*", "fail", "nap"])])
    done = run_cli("mcp", "status", "--json", "--config", str(config), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [server] = json.loads(done.stdout)
    assert server["state"] == "ready" and sorted(server["tools"]) == ["c_add", "c_echo"]


def test_no_servers_says_how_to_add_them(tmp_path: Path) -> None:
    done = run_cli("mcp", "status", "--config", str(write_config(tmp_path, [])), cwd=tmp_path)
    assert done.returncode == 0 and "mcp.servers" in done.stdout
