"""``herdsman mcp status``: connect to each configured MCP server and show what it offers.

A typer sub-app mounted by :mod:`herdsman.cli`. It loads the servers the way the agent does
(each under its own timeout, failures isolated) and prints one row per server: its state, its
tools, and for a failed one the reason. Exit code 1 when an enabled server failed.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from herdsman.commands.options import ConfigOpt, load_or_exit
from herdsman.terminal_text import escape

mcp_app = typer.Typer(help="MCP servers: their state and tools.", no_args_is_help=True)
console = Console()


@mcp_app.command("status")
def mcp_status_command(
    config: ConfigOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Connect to every enabled MCP server and show its state, tools and errors."""
    from herdsman.tools.mcp import registry_for

    cfg = load_or_exit(config).config
    if not cfg.mcp.servers:
        console.print("No MCP servers configured; add them under mcp.servers in config.yaml.")
        return
    registry = registry_for(cfg)
    with console.status("Connecting to MCP servers..."):
        registry.load()
    statuses = registry.status()
    if as_json:
        print(json.dumps([s.as_dict() for s in statuses], indent=2))
    else:
        table = Table("server", "transport", "state", "tools / reason")
        colors = {"ready": "green", "failed": "red", "disabled": "dim", "not_loaded": "yellow"}
        for s in statuses:
            detail = (", ".join(s.tools) or "(no tools)") if s.state == "ready" else (s.error or "")
            if s.skipped:
                detail += "\nskipped: " + "; ".join(s.skipped)
            color = colors.get(s.state, "white")
            table.add_row(escape(s.name), s.transport, f"[{color}]{s.state}[/{color}]", escape(detail))
        console.print(table)
    if any(s.state == "failed" for s in statuses):
        raise typer.Exit(1)
