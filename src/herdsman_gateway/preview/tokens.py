"""Short-lived signed preview tokens: the only credential the preview origin accepts.

A token says "user U may see thread T's previews until time E": ``<payload>.<mac>``, the
payload URL-safe base64 of ``T\\nU\\nE`` and the mac an HMAC-SHA256 of it under a secret drawn
when the process starts (:func:`secrets.token_bytes`), never written anywhere, so a token is
good only on the gateway process that issued it and only until it expires
(``gateway.preview_origin.token_seconds``). The token rides in the URL path, so a page's
relative links carry it; it is no API key: it opens one thread's previews and nothing else.
Written with the standard library (``hmac``) because a payload of three fields needs no JWT
library, and a fixed format leaves no algorithm to choose.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

MAX_TOKEN_CHARS = 512


class InvalidToken(Exception):
    """A preview token that is malformed, forged, for another thread, or expired."""


@dataclass(frozen=True)
class Grant:
    """What a valid token allows: ``user`` (None when auth is off) sees ``thread_id`` until ``expires``."""

    thread_id: str
    user: str | None
    expires: int


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class PreviewTokens:
    """Issues and checks the tokens of one gateway process."""

    def __init__(self, seconds: int, secret: bytes | None = None) -> None:
        self.seconds = seconds
        self._secret = secret or secrets.token_bytes(32)

    def _mac(self, payload: bytes) -> str:
        return _b64(hmac.new(self._secret, b"herdsman-preview\0" + payload, hashlib.sha256).digest())

    def issue(self, thread_id: str, user: str | None, now: float | None = None) -> tuple[str, int]:
        """A token for ``user`` on ``thread_id`` and the Unix time it expires."""
        expires = int(now if now is not None else time.time()) + self.seconds
        payload = f"{thread_id}\n{user or ''}\n{expires}".encode()
        return f"{_b64(payload)}.{self._mac(payload)}", expires

    def check(self, token: str, thread_id: str, now: float | None = None) -> Grant:
        """The grant of ``token`` for ``thread_id``; InvalidToken saying why when it gives none."""
        body, _, mac = token.partition(".")
        if not body or not mac or len(token) > MAX_TOKEN_CHARS:
            raise InvalidToken("malformed preview token")
        try:
            payload = _unb64(body)
        except ValueError:
            raise InvalidToken("malformed preview token") from None
        if not hmac.compare_digest(mac.encode(), self._mac(payload).encode()):
            raise InvalidToken("preview token not issued by this gateway (or the gateway restarted)")
        try:
            thread, user, expires = payload.decode().split("\n")
            grant = Grant(thread, user or None, int(expires))
        except ValueError:
            raise InvalidToken("malformed preview token") from None
        if grant.thread_id != thread_id:
            raise InvalidToken("preview token is for another thread")
        if grant.expires < (now if now is not None else time.time()):
            raise InvalidToken("preview token expired")
        return grant
