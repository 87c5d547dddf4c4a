"""Structured logs: structlog events routed through the standard ``logging`` module.

As a library, Herdsman prints nothing by itself and configures nothing on import: each module's
logger comes from :func:`get_logger`, a structlog logger wired to the stdlib logger of the same
name (``herdsman.*``) with its own processors, so structlog's global configuration is left to the
application, and the events go to stdlib logging, where the application decides what to show.
The entry points (the CLI, and with it ``herdsman serve`` and ``herdsman worker``; the gateway app)
call :func:`configure_logging` or :func:`route_to_stdlib`.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog
from structlog.typing import Processor

_SHARED: list[Processor] = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso"),
]

# filter_by_level first: an event below the logger's level costs one check, not the timestamp
# and the other processors (runs log on hot paths).
_PROCESSORS: list[Processor] = [
    structlog.stdlib.filter_by_level,
    *_SHARED,
    structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
]


def get_logger(name: str) -> Any:
    """A structlog logger for module ``name`` whose events go to stdlib logging's logger ``name``
    (key-value events: ``log.info("run_started", run_id=...)``); it uses no global structlog
    configuration, so importing Herdsman changes nothing for the application."""
    return structlog.wrap_logger(
        logging.getLogger(name),
        processors=_PROCESSORS,
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )


def route_to_stdlib() -> None:
    """Send every structlog event (not only Herdsman's) to stdlib logging, unless the application
    configured structlog already: for the entry points that own the process (the CLI, the gateway)."""
    if structlog.is_configured():
        return
    structlog.configure(
        processors=_PROCESSORS,
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )


def configure_logging(level: str = "WARNING", fmt: str = "console") -> None:
    """Show logs at ``level`` and above on stderr, as console text or JSON lines (for an entry
    point: it sets the root logger's handler and level, and routes structlog to it)."""
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
    handler._herdsman = True  # type: ignore[attr-defined]  # a marker on our own handler, to find it again
    root.addHandler(handler)
    root.setLevel(getattr(logging, level.upper(), logging.WARNING))
