"""Short-lived signed preview tokens: the only credential the preview origin accepts.

A token says "user U may see thread T's previews until time E": ``<payload>.<mac>``, the
payload URL-safe base64 of ``T\\nU\\nE`` and the mac an HMAC-SHA256 of it under the secret of
the gateway's home (:func:`home_secret`: ``<home>/preview.key``, 32 random bytes made once, mode
0600), so every gateway process of one home (several gateways behind one address, a restarted
one) accepts the links another issued, until they expire
(``gateway.preview_origin.token_seconds``). Removing the file (and restarting the gateways)
invalidates every link at once. The token rides in the URL path, so a page's
relative links carry it; it is no API key: it opens one thread's previews and nothing else.
Written with the standard library (``hmac``) because a payload of three fields needs no JWT
library, and a fixed format leaves no algorithm to choose.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from herdsman.logs import get_logger

log = get_logger(__name__)

MAX_TOKEN_CHARS = 512
SECRET_BYTES = 32
SECRET_FILE = "preview.key"
"""The file in the gateway's home that holds the secret the tokens are signed with."""


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


class PreviewKeyError(RuntimeError):
    """The preview secret of a home cannot be used (unreadable, the wrong size, not a file)."""


def home_secret(home: Path) -> bytes:
    """The preview secret of the gateway home ``home``: read from ``home/preview.key``, or made
    there (32 random bytes, mode 0600, created exclusively so two gateways starting at once agree
    on one). A key file readable by others is made private again; one that is not a regular file
    of 32 bytes is refused with what to do."""
    path = home / SECRET_FILE
    home.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        pass
    else:
        secret = secrets.token_bytes(SECRET_BYTES)
        tmp = path.with_name(f".{SECRET_FILE}.{os.getpid()}")
        try:  # written beside it and renamed over the empty file: a reader never sees half a key
            with os.fdopen(
                os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600), "wb"
            ) as fh:
                fh.write(secret)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        finally:
            os.close(fd)
            tmp.unlink(missing_ok=True)
        log.info("preview_key_created", path=str(path))
        return secret
    return _read_secret(path)


def _read_secret(path: Path, attempts: int = 50) -> bytes:
    """The secret in ``path``, waiting briefly while another gateway is still writing it."""
    for _ in range(attempts):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            raise PreviewKeyError(
                f"{path}: cannot be read ({exc.strerror}); remove it and restart the gateway"
            ) from None
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fh.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise PreviewKeyError(f"{path} is not a regular file; remove it and restart the gateway")
            if info.st_mode & 0o077:
                os.fchmod(fh.fileno(), 0o600)
                log.warning("preview_key_made_private", path=str(path))
            secret = fh.read(SECRET_BYTES + 1)
        if len(secret) == SECRET_BYTES:
            return secret
        if secret:
            break
        time.sleep(0.02)  # created by another gateway a moment ago, not written yet
    raise PreviewKeyError(
        f"{path} does not hold a {SECRET_BYTES}-byte preview key; remove it and restart the gateway "
        "(open preview links stop working)"
    )


class PreviewTokens:
    """Issues and checks preview tokens under one secret (by default a fresh one, for tests;
    the gateway passes its home's, :func:`home_secret`)."""

    def __init__(self, seconds: int, secret: bytes | None = None) -> None:
        self.seconds = seconds
        self._secret = secret or secrets.token_bytes(SECRET_BYTES)

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
            raise InvalidToken("preview token not issued by this gateway (or its preview key was replaced)")
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
