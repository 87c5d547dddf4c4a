"""``herdsman serve`` and ``herdsman worker``: the gateway's own sub-commands, found by the CLI through an entry point.

The harness never imports the gateway (import-linter keeps it so); the gateway declares this
module under the ``herdsman.commands`` entry-point group in ``pyproject.toml`` and
:func:`herdsman.cli.add_plugin_commands` registers whatever that group holds.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.console import Console

from herdsman.commands.options import ConfigOpt, load_or_exit
from herdsman.terminal_text import escape


def serve(
    config: ConfigOpt = None,
    host: Annotated[Optional[str], typer.Option(help="Address to bind (default gateway.host).")] = None,
    port: Annotated[Optional[int], typer.Option(help="Port (default gateway.port, 2026).")] = None,
) -> None:
    """Start the gateway: the LangGraph API, REST under /api and /metrics, over HTTP."""
    from herdsman_gateway.serve import UnsafeBindError
    from herdsman_gateway.serve import serve as run_server

    loaded = load_or_exit(config)
    try:
        run_server(loaded.config, host=host, port=port, log_level=loaded.config.logging.level.lower())
    except UnsafeBindError as exc:
        Console(stderr=True).print(f"[red]Error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None


def worker(config: ConfigOpt = None) -> None:
    """Execute queued runs (no HTTP): the runs accepted by gateways, and those whose process died."""
    import asyncio

    from herdsman_gateway.worker import WorkerConfigError, work

    loaded = load_or_exit(config)
    try:
        asyncio.run(work(loaded.config))
    except WorkerConfigError as exc:
        Console(stderr=True).print(f"[red]Error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None


def register(app: typer.Typer) -> None:
    """Add ``serve`` and ``worker`` to the ``herdsman`` command."""
    app.command("serve")(serve)
    app.command("worker")(worker)
