"""What every route needs, built once per app: config, graph, run manager, records, sandbox.

Routes get it with ``Depends(get_gateway)``; the app's lifespan creates it (see ``app.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import Request

from herdsman.config.schema import HerdsmanConfig
from herdsman.runtime.runs import RunManager
from herdsman.runtime.stream_bridge import StreamBridge
from herdsman.runtime.threads import ThreadStore
from herdsman.sandbox.base import SandboxProvider
from herdsman_gateway.metrics import GatewayMetrics


@dataclass
class Gateway:
    """The services behind the HTTP routes of one app."""

    config: HerdsmanConfig
    graph: Any
    runs: RunManager
    threads: ThreadStore
    bridge: StreamBridge
    sandbox: SandboxProvider
    metrics: GatewayMetrics


def get_gateway(request: Request) -> Gateway:
    """The app's :class:`Gateway` (a FastAPI dependency)."""
    return request.app.state.gateway
