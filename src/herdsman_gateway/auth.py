"""API-key auth and per-user ownership of threads.

With ``gateway.api_keys`` empty, auth is off and every request is the anonymous user (the
server then only binds to loopback, see ``serve.py``). With keys, each request must send one as
``x-api-key`` or ``Authorization: Bearer <key>``; each key is a user, identified by a hash of
the key. Threads record their owner in ``metadata.owner``; another user's thread answers 404,
exactly like a thread that does not exist.
"""

from __future__ import annotations

import hashlib
import hmac

from fastapi import HTTPException, Request

OWNER_KEY = "owner"


def user_id_for_key(key: str) -> str:
    """The stable user id of an API key (never the key itself)."""
    return "user-" + hashlib.sha256(key.encode()).hexdigest()[:16]


def _presented_key(request: Request) -> str | None:
    key = request.headers.get("x-api-key")
    if key:
        return key
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


async def current_user(request: Request) -> str | None:
    """The user making the request (None when auth is off); 401 for a missing or wrong key.

    ``async`` though it awaits nothing: FastAPI runs a sync dependency in a worker thread, a
    hop that cost more than the check itself on every request.
    """
    keys = request.app.state.gateway.config.gateway.api_keys
    if not keys:
        return None
    presented = _presented_key(request)
    if presented is None:
        raise HTTPException(401, "Missing API key: send it as the x-api-key header or Authorization: Bearer <key>")
    for key in keys:
        if hmac.compare_digest(presented.encode(), key.encode()):
            return user_id_for_key(key)
    raise HTTPException(401, "Invalid API key: check the key against gateway.api_keys in config.yaml")


def owns(metadata: dict | None, user: str | None) -> bool:
    """Whether ``user`` may see a thread with this metadata (always, when auth is off)."""
    return user is None or (metadata or {}).get(OWNER_KEY) == user


def with_owner(metadata: dict | None, user: str | None) -> dict:
    """``metadata`` with the owner set to ``user`` (and no client-sent owner when auth is on)."""
    data = dict(metadata or {})
    if user is not None:
        data[OWNER_KEY] = user
    return data
