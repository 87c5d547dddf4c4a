"""Structured logs with structlog: readable on a console, JSON lines for machines.

Logs go to stderr so they never mix with a command's output.
"""

from __future__ import annotations

import logging
import sys

import structlog


def configure_logging(level: str = "WARNING", fmt: str = "console") -> None:
    """Send structlog and stdlib logs to stderr at ``level``, as console text or JSON lines."""
    numeric = getattr(logging, level.upper(), logging.WARNING)
    renderer = structlog.processors.JSONRenderer() if fmt == "json" else structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.processors.format_exc_info if fmt == "json" else structlog.processors.StackInfoRenderer(),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    logging.basicConfig(level=numeric, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
