"""API-key auth, roles, and per-user ownership of threads.

With ``gateway.api_keys`` empty, auth is off and every request is the one local user, who is an
admin (the server then only binds to loopback, see ``serve.py``). With keys, each request must
send one as ``x-api-key`` or ``Authorization: Bearer <key>``. Each key acts as a user (its
``user:``, or a hash of the key) with a role:

- ``user`` (a plain string in ``api_keys``): its own threads, runs, files, uploads, traces and
  memory, and the read-only views every user shares (models, skills, MCP status, info);
- ``admin``: also the settings every user shares (``require_admin``: skills on/off).

Threads record their owner in ``metadata.owner``; another user's thread answers 404, exactly
like a thread that does not exist. The CLI and the embedded client act as the host's owner: the
user of the first admin key (``GatewayConfig.host_owner``), so a thread made by ``herdsman run``
is that admin's in the web UI. ``/metrics`` needs a key of any role unless
``gateway.metrics_require_key`` is false.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fastapi import HTTPException, Request

from herdsman.config.schema import ApiKeyConfig, user_id_for_key
from herdsman.runtime.storage.threads import OWNER_KEY  # noqa: F401 - one key for the harness and the gateway


@dataclass(frozen=True)
class Caller:
    """Who makes a request: the user id (None when auth is off) and the role."""

    user: str | None
    role: str


def presented_key(headers: Mapping[str, str]) -> str | None:
    """The key a request presents: ``x-api-key``, else ``Authorization: Bearer``. ``headers`` is
    Starlette's ``Headers``, whose ``get`` reads the first of repeated headers: every check that
    reads a key must read this one (the rate limit counted a repeated header's last value)."""
    key = headers.get("x-api-key")
    if key:
        return key
    scheme, _, token = headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def matching_key(keys: Sequence[ApiKeyConfig], presented: str) -> ApiKeyConfig | None:
    """The configured key equal to ``presented`` (constant-time comparison), or None."""
    found = None
    for entry in keys:
        if hmac.compare_digest(presented.encode(), entry.key.encode()) and found is None:
            found = entry
    return found


def identify(request: Request) -> Caller:
    """The caller of ``request``; 401 for a missing or wrong key (constant-time comparison)."""
    keys = request.app.state.gateway.config.gateway.keys()
    if not keys:
        return Caller(None, "admin")
    presented = presented_key(request.headers)
    if presented is None:
        raise HTTPException(401, "Missing API key: send it as the x-api-key header or Authorization: Bearer <key>")
    found = matching_key(keys, presented)
    if found is None:
        raise HTTPException(401, "Invalid API key: check the key against gateway.api_keys in config.yaml")
    return Caller(found.user or user_id_for_key(found.key), found.role)


async def current_user(request: Request) -> str | None:
    """The user making the request (None when auth is off); 401 for a missing or wrong key.

    ``async`` though it awaits nothing: FastAPI runs a sync dependency in a worker thread, a
    hop that cost more than the check itself on every request.
    """
    return identify(request).user


async def require_admin(request: Request) -> None:
    """Let only admin keys through (403 otherwise): for settings every user shares."""
    if identify(request).role != "admin":
        raise HTTPException(
            403,
            "This changes a setting for every user and needs an admin key: add an entry "
            "{key: ..., role: admin} under gateway.api_keys in config.yaml, or change it there",
        )


async def metrics_access(request: Request) -> None:
    """``/metrics`` needs a key when auth is on, unless ``gateway.metrics_require_key`` is false."""
    if request.app.state.gateway.config.gateway.metrics_require_key:
        identify(request)


def owns(metadata: dict | None, user: str | None) -> bool:
    """Whether ``user`` may see a thread with this metadata (always, when auth is off)."""
    return user is None or (metadata or {}).get(OWNER_KEY) == user


def with_owner(metadata: dict | None, user: str | None) -> dict:
    """``metadata`` with the owner set to ``user`` (and no client-sent owner when auth is on)."""
    data = dict(metadata or {})
    if user is not None:
        data[OWNER_KEY] = user
    return data
