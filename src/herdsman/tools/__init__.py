"""Built-in tools that are not sandbox tools: MCP servers' tools, web fetch and search, images.

:func:`build_tools` is what the lead agent calls; each tool lives in its own module.
"""

from herdsman.tools.builtin import build_tools

__all__ = ["build_tools"]
