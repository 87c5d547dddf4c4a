"""Run the gateway with uvicorn: ``serve(config)`` is what ``herdsman serve`` calls.

Without ``gateway.api_keys`` anyone who can reach the port can drive the agent, so the server
then refuses any address but loopback (unless ``gateway.open_without_keys`` says otherwise) and
says so when it starts. Web pages the user visits are kept out by ``browser_guard.py``.
"""

from __future__ import annotations

import ipaddress
import socket
import sys

import uvicorn

from herdsman.config.schema import HerdsmanConfig
from herdsman.logs import get_logger
from herdsman_gateway.app import create_app, web_ui_built

log = get_logger(__name__)


class UnsafeBindError(Exception):
    """A non-loopback address without API keys."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) only resolves to loopback addresses: an empty
    host, a wildcard (0.0.0.0, ::) and a name that also (or only) resolves elsewhere are not."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    if not host.strip():
        return False
    try:
        infos = socket.getaddrinfo(host, None)
    except (socket.gaierror, UnicodeError):
        return False
    return bool(infos) and all(ipaddress.ip_address(str(i[4][0]).split("%")[0]).is_loopback for i in infos)


def check_bind(config: HerdsmanConfig, host: str) -> str:
    """The note to print at start; raises UnsafeBindError for an open bind without keys."""
    if config.gateway.api_keys:
        return f"API keys required ({len(config.gateway.api_keys)} configured)."
    if is_loopback(host):
        return (
            "No API keys configured: auth is off, so the gateway only listens on loopback and only answers "
            "requests addressed to it there (Host) that no other web page sent (Origin)."
        )
    if not config.gateway.open_without_keys:
        raise UnsafeBindError(
            f"gateway.host is {host!r}, not a loopback address, but gateway.api_keys is empty: anyone who reaches "
            "the port would drive the agent and its sandbox. Add api_keys under gateway: in config.yaml, or bind "
            "to 127.0.0.1 (or ::1); to serve without keys anyway, set gateway.open_without_keys: true."
        )
    return (
        f"WARNING: no API keys and gateway.open_without_keys is true: anyone who reaches {host} on this port "
        "drives the agent and its sandbox. Names other than this machine's address (a published container "
        "port, a proxy) must be listed in gateway.allowed_hosts."
    )


def banner(host: str, port: int, web_ui: bool) -> str:
    """The first line ``herdsman serve`` prints: where to point a browser when the web UI is
    served at ``/`` (the LangGraph API's routes are beside it, and all of them under
    ``/api/langgraph``), else that no UI was built and the API is at ``/``."""
    shown = f"[{host}]" if ":" in host else host
    if host in ("0.0.0.0", "::"):  # a wildcard is no address a browser can open: this machine's loopback is
        shown = "127.0.0.1"
    url = f"http://{shown}:{port}"
    if web_ui:
        return (
            f"Herdsman is running: open {url} in a browser for the web UI "
            f"(LangGraph API at {url}/api/langgraph and at its usual paths, /threads, /runs...; API docs at {url}/docs)"
        )
    return (
        f"Herdsman gateway on {url}: LangGraph API at / and /api/langgraph, API docs at /docs "
        "(no web UI here: it is built by `make web`, or `make run`)"
    )


def serve(config: HerdsmanConfig, *, host: str | None = None, port: int | None = None, log_level: str = "info") -> None:
    """Start the gateway and block until it is stopped (Ctrl-C)."""
    host = host or config.gateway.host
    port = config.gateway.port if port is None else port
    note = check_bind(config, host)
    print(banner(host, port, web_ui_built()), file=sys.stderr)
    print(note, file=sys.stderr)
    uvicorn.run(
        create_app(config, freeze_gc=True), host=host, port=port, log_level=log_level, timeout_graceful_shutdown=5
    )
