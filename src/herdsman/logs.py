"""Structured logs: structlog events routed through the standard ``logging`` module.

As a library, Herdsman prints nothing by itself: its structlog events go to stdlib logging
(``herdsman.*`` loggers), where the application decides what to show. The CLI and the gateway
call :func:`configure_logging` to render them on stderr, as console text or JSON lines.
"""

from __future__ import annotations

import logging
import sys

import structlog

_SHARED = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso"),
]


def route_to_stdlib() -> None:
    """Send structlog events to stdlib logging (done on import of ``herdsman``, once)."""
    if structlog.is_configured():
        return
    structlog.configure(
        # filter_by_level first: an event below the logger's level costs one check, not the
        # timestamp and the other processors (runs log on hot paths).
        processors=[structlog.stdlib.filter_by_level, *_SHARED, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )


def configure_logging(level: str = "WARNING", fmt: str = "console") -> None:
    """Show logs at ``level`` and above on stderr, as console text or JSON lines."""
    route_to_stdlib()
    renderer = structlog.processors.JSONRenderer() if fmt == "json" else structlog.dev.ConsoleRenderer(colors=False)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=_SHARED,
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    root = logging.getLogger()
    root.handlers = [h for h in root.handlers if not getattr(h, "_herdsman", False)]
    handler._herdsman = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(getattr(logging, level.upper(), logging.WARNING))
