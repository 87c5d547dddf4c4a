"""No web page the user visits can drive a local gateway: Host and Origin checks.

A gateway without API keys trusts whoever reaches its port, and a browser reaches loopback for
any page it shows. Two holes follow, both closed here:

- **DNS rebinding.** A page on ``attacker.example`` has its name re-resolved to 127.0.0.1; its
  requests then reach the gateway, same-origin for the browser, with ``Host: attacker.example:2026``.
  So a request's ``Host`` must be one the gateway answers to (:class:`HostPolicy`): its own
  address (127.0.0.1, localhost or [::1] when the connection is on loopback; no page can put
  these names in a Host, so a local proxy that forwards them with its own port passes too), the
  hosts of ``gateway.cors_origins`` and those listed in ``gateway.allowed_hosts`` (reverse
  proxies, tunnels); anything else gets 421. ``allowed_hosts: ["*"]`` turns the check off.
- **Cross-site requests.** A page can send "simple" requests (a form's ``text/plain``,
  urlencoded or multipart POST) to any address without a CORS preflight; the answer is
  unreadable, but the request is carried out. So without API keys a state-changing request
  (any method but GET, HEAD, OPTIONS) is refused with 403 when its ``Origin`` is neither the
  gateway's own nor one of ``gateway.cors_origins`` (browsers send ``Origin`` on every such
  request), when the browser says it is cross-site (``Sec-Fetch-Site``) without an Origin, and,
  with no Origin at all, when its ``Content-Type`` is one a page may send without a preflight,
  unless it carries the ``X-Herdsman-Client`` header (which no page can add cross-site without a
  preflight). JSON (what the SDKs send), bodiless requests of programs (no Origin, no type)
  and the web UI's own requests (same-origin) pass.

With API keys the cross-site checks are off (a page cannot attach the user's key: the browser
holds none for it, and a custom header needs a preflight that CORS refuses), and the Host check
applies to connections on loopback (a local proxy must list its names) or wherever
``allowed_hosts`` is set; a gateway with keys reached on another address (a container behind a
proxy) answers any Host. The IM channels' webhooks under ``/channels/`` are called by the
platforms' servers, not browsers, with their own content types and signatures: the cross-site
checks leave them alone, the Host check does not.

Written by hand (a pure ASGI middleware, as ``body_limit.py``): Starlette's
``TrustedHostMiddleware`` answers a plain-text 400 that names no config key and cannot follow the
address a connection came in on, and no maintained library checks Origin and content type for
an API without cookies.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

import orjson
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from herdsman.config.schema import GatewayConfig
from herdsman.logs import get_logger

log = get_logger(__name__)

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CLIENT_HEADER = "x-herdsman-client"
# the content types a page may send cross-site without a CORS preflight (the Fetch standard's list)
SIMPLE_TYPES = frozenset({"text/plain", "application/x-www-form-urlencoded", "multipart/form-data"})
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})
WEBHOOKS = "/channels/"


@dataclass(frozen=True)
class HostName:
    """A host and an optional port, as in a Host header or an ``allowed_hosts`` entry."""

    name: str
    port: int | None

    @classmethod
    def parse(cls, value: str) -> HostName | None:
        """``name``, ``name:port``, ``[v6]`` or ``[v6]:port``, lower-cased; None when malformed."""
        value = value.strip().lower()
        if value.startswith("["):
            end = value.find("]")
            name, rest = (value[: end + 1], value[end + 1 :]) if end > 0 else ("", "")
        elif value.count(":") == 1:
            name, rest = value[: value.index(":")], value[value.index(":") :]
        else:
            name, rest = value, ""
        if not name or (rest and not (rest.startswith(":") and rest[1:].isdigit())):
            return None
        return cls(name.rstrip("."), int(rest[1:]) if rest else None)

    def matches(self, other: HostName) -> bool:
        """Whether a request's Host ``other`` is this entry: same name, and the same port unless
        this entry names none (a Host without one stands for 80 or 443)."""
        if other.name != self.name:
            return False
        if self.port is None:
            return True
        return other.port == self.port or (other.port is None and self.port in (80, 443))


def address_name(ip: str) -> str:
    """An address as a Host header writes it (IPv6 in brackets)."""
    return f"[{ip}]" if ":" in ip else ip.lower()


def plain_address(ip: str) -> str:
    """``ip`` with an IPv4-mapped IPv6 address (a dual-stack socket's IPv4 peer) as IPv4."""
    try:
        mapped = getattr(ipaddress.ip_address(ip), "ipv4_mapped", None)
    except ValueError:
        return ip
    return str(mapped) if mapped is not None else ip


def is_loopback_address(ip: str) -> bool:
    """Whether ``ip`` is a loopback address (False for names)."""
    try:
        return ipaddress.ip_address(plain_address(ip)).is_loopback
    except ValueError:
        return False


class HostPolicy:
    """Which Host headers a gateway answers, from ``gateway`` config and the connection's address."""

    def __init__(self, gateway: GatewayConfig) -> None:
        """Read ``allowed_hosts``, ``cors_origins``, ``api_keys``, ``host`` and ``port`` of ``gateway``."""
        self.off = "*" in gateway.allowed_hosts
        self.keys = bool(gateway.api_keys)
        self.listed = bool(gateway.allowed_hosts)
        self.extra = [
            h for h in (HostName.parse(v) for v in [*gateway.allowed_hosts, *origin_hosts(gateway.cors_origins)]) if h
        ]
        self.bind = (gateway.host, gateway.port)

    def allows(self, host: str | None, server: tuple[str, int | None] | None) -> bool:
        """Whether a request with Host ``host`` that came in on local address ``server`` is answered."""
        ip = plain_address((server or self.bind)[0])
        local = is_loopback_address(ip)
        if self.off or (self.keys and not local and not self.listed):
            return True
        if host is None:  # not a browser (they always send Host): nothing to rebind
            return True
        asked = HostName.parse(host)
        if asked is None:
            return False
        # any port: a browser writes the port it connects to, so another port (or none) next to
        # one of these names only comes from a proxy on this machine forwarding its own pages
        own = {address_name(ip), address_name(self.bind[0])} | (LOOPBACK_NAMES if local else set())
        if asked.name in own:
            return True
        return any(entry.matches(asked) for entry in self.extra)

    def refusal(self, host: str | None) -> str:
        """What a client whose Host was refused is told."""
        return (
            f"Host {host!r} is not a name of this gateway, so the request was refused: a web page that reaches the "
            "gateway under another name is a DNS-rebinding attack. Open it as http://127.0.0.1:<port> or "
            "http://localhost:<port>; behind a reverse proxy or a tunnel, add the name it forwards (name or "
            "name:port) to gateway.allowed_hosts in config.yaml"
        )


def origin_hosts(origins: Iterable[str]) -> list[str]:
    """The ``host[:port]`` of each origin in ``origins`` (``*`` and malformed ones left out)."""
    hosts = []
    for origin in origins:
        parts = urlsplit(origin)
        if parts.scheme in ("http", "https") and parts.netloc:
            hosts.append(parts.netloc)
    return hosts


class OriginPolicy:
    """Which state-changing requests a gateway without API keys carries out (see the module docstring)."""

    def __init__(self, gateway: GatewayConfig) -> None:
        """Read ``api_keys`` and ``cors_origins`` of ``gateway``."""
        self.on = not gateway.api_keys
        self.any_origin = "*" in gateway.cors_origins
        self.origins = {o.rstrip("/").lower() for o in gateway.cors_origins}

    def origin_allowed(self, origin: str, host: str | None) -> bool:
        """Whether ``origin`` is the gateway's own (its host is the request's Host) or a listed one."""
        if self.any_origin or origin.rstrip("/").lower() in self.origins:
            return True
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and host is not None and parts.netloc.lower() == host.strip().lower()

    def refusal(self, method: str, path: str, headers: Headers) -> str | None:
        """Why a request must be refused (None: carry it out)."""
        if not self.on or method in SAFE_METHODS or path.startswith(WEBHOOKS):
            return None
        origin = headers.get("origin")
        if origin is not None:
            if self.origin_allowed(origin, headers.get("host")):
                return None
            return (
                f"Cross-site request refused: Origin {origin!r} is neither this gateway's own nor one of "
                "gateway.cors_origins, and a gateway without API keys takes no request a web page sends through "
                "the user's browser. To use a web UI served elsewhere, add its origin to gateway.cors_origins in "
                "config.yaml (or set gateway.api_keys)"
            )
        if headers.get("sec-fetch-site") in ("cross-site", "same-site"):
            return (
                "Cross-site request refused: the browser marks it cross-site (Sec-Fetch-Site) and a gateway without "
                "API keys takes no request a web page sends through the user's browser"
            )
        kind = headers.get("content-type", "").split(";")[0].strip().lower()
        if kind in SIMPLE_TYPES and CLIENT_HEADER not in headers:
            return (
                f"{method} with Content-Type {kind} refused: a gateway without API keys takes state-changing "
                "requests as JSON (Content-Type: application/json), or of other types with the X-Herdsman-Client "
                "header (e.g. curl -H 'X-Herdsman-Client: 1' -F files=@report.pdf ...), so no web page can send "
                "them through the user's browser"
            )
        return None


class BrowserGuard:
    """Pure ASGI middleware: ``app.add_middleware(BrowserGuard, gateway=config.gateway)``."""

    def __init__(self, app: ASGIApp, gateway: GatewayConfig) -> None:
        """Wrap ``app`` with the Host and Origin policies of ``gateway``."""
        self.app = app
        self.hosts = HostPolicy(gateway)
        self.origins = OriginPolicy(gateway)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI app: a request from a foreign origin or host is refused."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host")
        if not self.hosts.allows(host, scope.get("server")):
            log.warning("request_refused_host", host=host, path=scope["path"])
            await _refuse(scope, send, 421, self.hosts.refusal(host))
            return
        method = "WEBSOCKET" if scope["type"] == "websocket" else scope["method"]
        reason = self.origins.refusal(method, scope["path"], headers)
        if reason is not None:
            log.warning(
                "request_refused_cross_site",
                method=method,
                path=scope["path"],
                origin=headers.get("origin"),
                content_type=headers.get("content-type"),
            )
            await _refuse(scope, send, 403, reason)
            return
        await self.app(scope, receive, send)


async def _refuse(scope: Scope, send: Send, status: int, detail: str) -> None:
    """Answer ``status`` with the gateway's JSON error body (a websocket is closed instead)."""
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008, "reason": detail[:120]})
        return
    body = orjson.dumps({"detail": detail})
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
