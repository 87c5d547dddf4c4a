"""What every ``herdsman`` command shares: the ``--config`` option and loading it or exiting.

The sub-apps (``skills``, ``memory``, ``mcp``) live beside their packages and import this, so
``herdsman.cli`` is never imported by them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from herdsman.config.loader import ConfigError, LoadedConfig, load_config
from herdsman.terminal_text import escape

ConfigOpt = Annotated[Optional[Path], typer.Option("--config", "-c", help="Path to config.yaml.")]

_err = Console(stderr=True)


def load_or_exit(path: Path | None) -> LoadedConfig:
    """The config at ``path`` (or found by the lookup order); a bad one is printed, exit code 2."""
    try:
        return load_config(path)
    except ConfigError as exc:
        _err.print(f"[red]{escape(str(exc))}[/red]")
        raise typer.Exit(2) from None
