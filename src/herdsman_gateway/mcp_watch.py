"""Bring back MCP servers that were down when the gateway started.

The lead agent's tool list is fixed when the agent is built. A server that failed then (still
starting, a network blip) would stay missing until a restart; :func:`watch_mcp_servers` tries
the failed ones again every ``mcp.retry_after_seconds`` and, when one loads, builds the agent
again (runs in progress keep theirs; runs that start afterwards get the server's tools).
"""

from __future__ import annotations

import asyncio

from herdsman.logs import get_logger
from herdsman_gateway.container import Gateway

log = get_logger(__name__)

MIN_INTERVAL = 0.1  # seconds; retry_after_seconds: 0 must not spin


async def watch_mcp_servers(gw: Gateway) -> None:
    """Retry failed MCP servers and rebuild the agent when one comes back (runs until cancelled)."""
    config = gw.config
    if not any(s.enabled for s in config.mcp.servers) or gw.build_agent is None:
        return
    from herdsman.tools.mcp import registry_for  # the MCP client, imported only where servers are configured

    registry = registry_for(config)
    interval = max(config.mcp.retry_after_seconds, MIN_INTERVAL)
    while True:
        await asyncio.sleep(interval)
        if not registry.failed():
            continue
        try:
            back = await registry.retry_failed()
            if back:
                await gw.rebuild_agent()
                log.info("mcp_servers_back", servers=back)
        except Exception as exc:  # noqa: BLE001 - the watcher must outlive one bad attempt
            log.warning("mcp_retry_failed", error=str(exc))
