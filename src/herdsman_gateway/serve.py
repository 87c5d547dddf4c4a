"""Run the gateway with uvicorn: ``serve(config)`` is what ``herdsman serve`` calls.

Without ``gateway.api_keys`` anyone who can reach the port can drive the agent, so the server
then refuses any address but loopback and says so when it starts.
"""

from __future__ import annotations

import ipaddress
import socket
import sys

import structlog
import uvicorn

from herdsman.config.schema import HerdsmanConfig
from herdsman_gateway.app import create_app

log = structlog.get_logger(__name__)


class UnsafeBindError(Exception):
    """A non-loopback address without API keys."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) only resolves to loopback addresses."""
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except socket.gaierror:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0]).is_loopback for i in infos)


def check_bind(config: HerdsmanConfig, host: str) -> str:
    """The note to print at start; raises UnsafeBindError for an open bind without keys."""
    if config.gateway.api_keys:
        return f"API keys required ({len(config.gateway.api_keys)} configured)."
    if not is_loopback(host):
        raise UnsafeBindError(
            f"gateway.host is {host} but gateway.api_keys is empty: the agent would be open to the network. "
            "Add api_keys under gateway: in config.yaml, or bind to 127.0.0.1."
        )
    return "No API keys configured: auth is off, so the gateway only listens on loopback."


def serve(config: HerdsmanConfig, *, host: str | None = None, port: int | None = None, log_level: str = "info") -> None:
    """Start the gateway and block until it is stopped (Ctrl-C)."""
    host = host or config.gateway.host
    port = config.gateway.port if port is None else port
    note = check_bind(config, host)
    shown = f"[{host}]" if ":" in host else host
    print(f"Herdsman gateway on http://{shown}:{port}  (LangGraph API at / and /api/langgraph; docs at /docs)", file=sys.stderr)
    print(note, file=sys.stderr)
    uvicorn.run(create_app(config, freeze_gc=True), host=host, port=port, log_level=log_level, timeout_graceful_shutdown=5)
