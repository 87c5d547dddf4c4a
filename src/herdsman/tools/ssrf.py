"""The SSRF guard of ``web_fetch``: a URL may only lead to public internet addresses.

:func:`resolve_public` resolves the host and refuses the URL when any of its addresses is
loopback, private, link-local, multicast, reserved or unspecified (IPv4-mapped IPv6 addresses
are judged as the IPv4 address they carry), unless it falls in a network of
``web.allow_networks``. The caller then connects to the address that was checked (not to a
second DNS answer), so a host that resolves to a public address once and to 127.0.0.1 the next
time cannot slip through; redirects are checked hop by hop.

Written by hand because it is a few lines over ``ipaddress`` and ``getaddrinfo``, and the
libraries that do it wrap requests or urllib, not httpx.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Sequence
from dataclasses import dataclass

import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class BlockedURLError(ValueError):
    """A URL that the guard refuses; the message says why and what to do."""


@dataclass(frozen=True)
class Target:
    """A checked URL: its host and port and the address to connect to."""

    url: httpx.URL
    host: str
    address: IPAddress


def networks(allowed: Sequence[str]) -> list[IPNetwork]:
    """``web.allow_networks`` as network objects."""
    return [ipaddress.ip_network(n, strict=False) for n in allowed]


def why_blocked(address: IPAddress) -> str | None:
    """What kind of non-public address ``address`` is, or None for a public one."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    for kind, flag in (
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("unspecified", address.is_unspecified),
        ("reserved", address.is_reserved),
        ("private", address.is_private),
        ("non-global", not address.is_global),
    ):
        if flag:
            return kind
    return None


def check_address(address: IPAddress, host: str, allowed: Sequence[IPNetwork]) -> None:
    """Raise :class:`BlockedURLError` unless ``address`` is public or in an allowed network."""
    kind = why_blocked(address)
    if kind is None or any(address in n for n in allowed if n.version == address.version):
        return
    raise BlockedURLError(
        f"refused to fetch {host}: it resolves to {address}, a {kind} address, and web_fetch only "
        "reaches public internet addresses (an operator can allow a network with web.allow_networks)"
    )


async def _addresses(host: str, port: int) -> list[IPAddress]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise BlockedURLError(f"cannot resolve host {host!r} ({exc.strerror}); check the URL") from None
    found: list[IPAddress] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if address not in found:
            found.append(address)
    if not found:
        raise BlockedURLError(f"host {host!r} has no address; check the URL")
    return found


async def resolve_public(url: str | httpx.URL, allowed: Sequence[IPNetwork] = ()) -> Target:
    """Check ``url`` (http or https, a host, every address public or allowed) and pick its address."""
    try:
        parsed = httpx.URL(str(url))
    except (httpx.InvalidURL, TypeError) as exc:
        raise BlockedURLError(f"{url!r} is not a valid URL ({exc}); give a full http:// or https:// URL") from None
    if parsed.scheme not in ("http", "https"):
        raise BlockedURLError(f"only http:// and https:// URLs can be fetched, not {parsed.scheme or 'a bare'}:// ones")
    host = parsed.host
    if not host:
        raise BlockedURLError(f"{url!r} has no host; give a full URL such as https://example.com/page")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    addresses = await _addresses(host, port)
    for address in addresses:
        check_address(address, host, allowed)
    return Target(parsed, host, addresses[0])


def pinned_request(client: httpx.AsyncClient, target: Target, headers: dict[str, str]) -> httpx.Request:
    """A GET request for ``target.url`` that connects to ``target.address``, keeping Host and TLS SNI."""
    ip = target.address.compressed
    request = client.build_request(
        "GET",
        target.url.copy_with(host=ip),
        headers={**headers, "Host": target.url.netloc.decode("ascii")},
        extensions={"sni_hostname": target.host},
    )
    return request
