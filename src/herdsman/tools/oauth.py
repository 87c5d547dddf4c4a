"""OAuth 2.0 client credentials for MCP servers over HTTP (``mcp.servers[].oauth``).

:class:`ClientCredentialsAuth` is an ``httpx.Auth``: before the first request it asks the token
endpoint for an access token (``grant_type=client_credentials``, client id and secret sent with
HTTP Basic, as RFC 6749 prefers), sends it as ``Authorization: Bearer``, reuses it until shortly
before it expires, and fetches a new one once when the server answers 401. A token endpoint that
refuses raises :class:`OAuthError` saying to check the client id and secret.

Written by hand because the flow is a dozen lines over httpx's generator-based auth (which
works for the sync and async clients alike), and the MCP SDK's OAuth provider implements the
interactive authorization-code flow, not this machine-to-machine one.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Callable, Generator

import httpx

EXPIRY_MARGIN_SECONDS = 30.0


class OAuthError(Exception):
    """The token endpoint refused or sent something unusable."""


class ClientCredentialsAuth(httpx.Auth):
    """Bearer tokens from an OAuth 2.0 token endpoint, by the client credentials grant."""

    def __init__(
        self,
        token_url: str,
        client_id: str,
        client_secret: str,
        scope: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.token_url, self.client_id, self.client_secret, self.scope = token_url, client_id, client_secret, scope
        self._clock = clock
        self._token: str | None = None
        self._expires_at = 0.0

    def _token_request(self) -> httpx.Request:
        form = {"grant_type": "client_credentials"}
        if self.scope:
            form["scope"] = self.scope
        basic = httpx.BasicAuth(self.client_id, self.client_secret)
        request = httpx.Request("POST", self.token_url, data=form, headers={"Accept": "application/json"})
        return next(basic.auth_flow(request))

    def _take(self, response: httpx.Response) -> None:
        if response.status_code >= 400:
            raise OAuthError(
                f"the token endpoint {self.token_url} answered HTTP {response.status_code}; "
                "check oauth.client_id, oauth.client_secret and oauth.scope"
            )
        try:
            data = response.json()
            token = str(data["access_token"])
        except (ValueError, KeyError, TypeError):
            raise OAuthError(
                f"the token endpoint {self.token_url} sent no access_token; check oauth.token_url"
            ) from None
        lifetime = float(data.get("expires_in") or 3600)
        self._token, self._expires_at = token, self._clock() + max(0.0, lifetime - EXPIRY_MARGIN_SECONDS)

    def _valid(self) -> bool:
        return self._token is not None and self._clock() < self._expires_at

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        """Get a token when there is none (or it expired), send the request, retry once on 401."""
        if not self._valid():
            token_response = yield self._token_request()
            token_response.read()
            self._take(token_response)
        request.headers["Authorization"] = f"Bearer {self._token}"
        response = yield request
        if response.status_code == 401:
            token_response = yield self._token_request()
            token_response.read()
            self._take(token_response)
            request.headers["Authorization"] = f"Bearer {self._token}"
            yield request

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        """The same as :meth:`sync_auth_flow` for async clients (only token bodies are read, so
        the server's streamed responses stay streams)."""
        if not self._valid():
            token_response = yield self._token_request()
            await token_response.aread()
            self._take(token_response)
        request.headers["Authorization"] = f"Bearer {self._token}"
        response = yield request
        if response.status_code == 401:
            token_response = yield self._token_request()
            await token_response.aread()
            self._take(token_response)
            request.headers["Authorization"] = f"Bearer {self._token}"
            yield request
