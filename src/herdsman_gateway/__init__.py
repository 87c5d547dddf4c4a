"""Herdsman gateway: the FastAPI app serving the LangGraph API, REST under /api and /metrics.

``create_app(config)`` builds the app; ``serve(config)`` runs it with uvicorn (``herdsman serve``).
``create_app`` is imported on first use, so the ``herdsman`` command, which loads
:mod:`herdsman_gateway.command` for every invocation, does not import FastAPI and the whole app
unless it serves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from herdsman_gateway.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    """``create_app``, imported from :mod:`herdsman_gateway.app` when first asked for."""
    if name == "create_app":
        from herdsman_gateway.app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
