"""The headers of preview answers: what a page the agent wrote may do in the user's browser.

On the gateway's own origin (``/api/threads/{id}/preview/files/...``) a page is shown with
:data:`GATEWAY_CSP`: no script runs, nothing is fetched but its own images, styles and fonts,
and ``sandbox`` gives it an opaque origin, so it can never act as the gateway's page.

On the preview origin (``origin.py``) scripts run, under :data:`ORIGIN_CSP`: ``sandbox``
without ``allow-same-origin`` gives each page an opaque origin of its own (no cookies, no
storage shared with another thread's page, no reading of another response without CORS),
``'self'`` is the preview origin (never the gateway's, which is another port or host), so
``connect-src``, ``form-action`` and every load stay there, and the answer is no-store and
sends no Referer (the token in its URL does not leak to a link's target).
Answers of a server in the sandbox lose their own ``Set-Cookie`` (cookies ignore ports: one set
on the preview origin's host would reach the gateway's) and their own CSP and CORS headers.
"""

from __future__ import annotations

from collections.abc import Iterable

GATEWAY_CSP = (
    "default-src 'none'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; font-src 'self' data:; "
    "media-src 'self'; form-action 'none'; sandbox"
)
ORIGIN_CSP = (
    "default-src 'self' data: blob:; script-src 'self' 'unsafe-inline' 'unsafe-eval' blob:; "
    "style-src 'self' 'unsafe-inline' data:; connect-src 'self'; form-action 'self'; base-uri 'self'; "
    "frame-src 'self'; worker-src 'self' blob:; object-src 'none'; "
    "sandbox allow-scripts allow-forms allow-modals allow-popups allow-downloads"
)
# the iframe's own sandbox (web UI): the same flags, never allow-same-origin
IFRAME_SANDBOX = "allow-scripts allow-forms allow-modals allow-popups allow-downloads"

_COMMON = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
# hop-by-hop (RFC 9110 7.6.1) and the headers a relayed server may not set
DROPPED_RESPONSE_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "set-cookie",
        "set-cookie2",
        "content-security-policy",
        "content-security-policy-report-only",
        "access-control-allow-origin",
        "access-control-allow-credentials",
        "access-control-allow-methods",
        "access-control-allow-headers",
        "access-control-expose-headers",
        "referrer-policy",
        "x-frame-options",
        "content-length",
        "strict-transport-security",
        "clear-site-data",
        "service-worker-allowed",
    }
)


def gateway_headers() -> dict[str, str]:
    """Headers of a preview shown on the gateway's origin (no script runs)."""
    return {**_COMMON, "content-security-policy": GATEWAY_CSP}


def origin_headers() -> dict[str, str]:
    """Headers of an answer of the preview origin (scripts run, sandboxed, kept to that origin).
    ``access-control-allow-origin: *`` without credentials lets a page's own scripts (an opaque
    origin) read its own files and its server's answers; the token in the path is what opens them."""
    return {**_COMMON, "content-security-policy": ORIGIN_CSP, "access-control-allow-origin": "*"}


def relayed_headers(raw: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """A sandboxed server's response headers, without those it may not set, plus :func:`origin_headers`."""
    kept = [(k, v) for k, v in raw if k.lower() not in DROPPED_RESPONSE_HEADERS and k.lower() not in _COMMON]
    return kept + list(origin_headers().items())
