"""``GET /info``: what this server is and which optional LangGraph features it has; ``GET /ok``:
LangGraph's health check.

UIs such as agent-chat-ui call ``/info`` as a health check before anything else.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

from fastapi import APIRouter

router = APIRouter(tags=["info"])


def _version(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


@router.get("/info", summary="Server information")
async def info() -> dict[str, Any]:
    """The server's name, versions and feature flags."""
    return {
        "name": "herdsman",
        "version": _version("herdsman"),
        "langgraph_py_version": _version("langgraph"),
        "flags": {"assistants": True, "crons": False, "langsmith": False, "stream_resumable": True},
    }


@router.get("/ok", summary="Health check")
async def ok() -> dict[str, Any]:
    """``{"ok": true}`` while the server answers (LangGraph's health check)."""
    return {"ok": True}
