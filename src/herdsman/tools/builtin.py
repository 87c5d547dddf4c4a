"""Assemble the built-in tools the config turns on, for the lead agent.

Web tools that cannot work here (no internet, an unreachable search endpoint) are left out unless
``context.hide_unavailable_tools`` is off (see :mod:`herdsman.tools.reachability`).
Order: web tools, ``view_image`` (only for a model with ``supports_vision``), then MCP tools.
A tool whose name is in ``tools.disabled`` or already ``taken`` (by the sandbox tools) is left
out; MCP servers are connected only here, when an agent is built (see :mod:`herdsman.tools.mcp`).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.tools import BaseTool

from herdsman.config.schema import HerdsmanConfig
from herdsman.sandbox.base import SandboxProvider
from herdsman.tools.reachability import any_reachable, endpoint_of, internet_reachable


def supports_vision(config: HerdsmanConfig, model_name: str | None) -> bool:
    """Whether the configured model ``model_name`` accepts images."""
    if not model_name:
        return False
    try:
        return config.model_by_name(model_name).supports_vision
    except KeyError:
        return False


def search_reachable(config: HerdsmanConfig) -> bool:
    """Whether the web search provider's endpoint accepts connections (cached briefly)."""
    from herdsman.tools.web_search import DEFAULT_BASE_URLS

    search = config.web.search
    endpoint = endpoint_of(search.base_url or DEFAULT_BASE_URLS.get(search.provider, ""))
    return endpoint is not None and any_reachable((endpoint,))


def build_tools(
    config: HerdsmanConfig,
    provider: SandboxProvider | None = None,
    model_name: str | None = None,
    taken: Sequence[str] = (),
) -> list[BaseTool]:
    """The built-in non-sandbox tools for an agent using model ``model_name``."""
    tools: list[BaseTool] = []
    hide = config.context.hide_unavailable_tools
    if config.web.fetch.enabled and (not hide or config.web.allow_networks or internet_reachable()):
        from herdsman.tools.web_fetch import make_web_fetch_tool

        tools.append(make_web_fetch_tool(config.web))
    if config.web.search.enabled and (not hide or search_reachable(config)):
        from herdsman.tools.web_search import make_web_search_tool

        tools.append(make_web_search_tool(config.web.search))
    if provider is not None and supports_vision(config, model_name):
        from herdsman.tools.view_image import make_view_image_tool

        tools.append(make_view_image_tool(provider))
    blocked = set(config.tools.disabled) | set(taken)
    tools = [t for t in tools if t.name not in blocked]
    if any(s.enabled for s in config.mcp.servers):
        from herdsman.tools.mcp import mcp_tools

        tools += mcp_tools(config, taken=[*taken, *(t.name for t in tools)])
    return [t for t in tools if t.name not in config.tools.disabled]
