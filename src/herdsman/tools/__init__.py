"""Built-in tools that are not sandbox tools: MCP servers' tools, web fetch and search, images.

:func:`build_tools` is what the lead agent calls; each tool lives in its own module.
``build_tools`` is imported on first use: a module of this package run on its own (the document
converter's child process, ``python -m herdsman.tools.documents``) does not import the agent's
tools, LangChain and LangGraph with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from herdsman.tools.builtin import build_tools

__all__ = ["build_tools"]


def __getattr__(name: str) -> Any:
    """``build_tools``, imported from :mod:`herdsman.tools.builtin` when first asked for."""
    if name == "build_tools":
        from herdsman.tools.builtin import build_tools

        return build_tools
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
