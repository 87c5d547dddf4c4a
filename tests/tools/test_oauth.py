"""OAuth client credentials (httpx.Auth) against the local token endpoint: one token reused
until it expires, a new one after a 401, a clear error for wrong credentials."""

from __future__ import annotations

import httpx
import pytest

from herdsman.tools.oauth import ClientCredentialsAuth, OAuthError


def token_calls(web) -> int:
    return sum(1 for r in web.requests if r[1] == "/oauth/token")


async def test_token_reused_until_expiry_then_renewed(web) -> None:
    now = [0.0]
    auth = ClientCredentialsAuth(web.url("/oauth/token"), "herdsman", "s3cret", clock=lambda: now[0])
    before = token_calls(web)
    async with httpx.AsyncClient(auth=auth) as client:
        for _ in range(3):
            assert (await client.get(web.url("/data.json"))).status_code == 200
        assert token_calls(web) == before + 1
        assert web.requests[-1][2]["Authorization"] == "Bearer tok-granted"
        now[0] = 3600.0  # past expires_in (minus the margin)
        await client.get(web.url("/data.json"))
        assert token_calls(web) == before + 2


async def test_401_fetches_a_new_token_once(web) -> None:
    auth = ClientCredentialsAuth(web.url("/oauth/token"), "herdsman", "s3cret")
    async with httpx.AsyncClient(auth=auth) as client:
        before = token_calls(web)
        response = await client.post(web.url("/tavily/search"), json={"query": "x"})  # wants another token
        assert response.status_code == 401
        assert token_calls(web) == before + 2  # the first token, then one retry, no loop


def test_sync_client_and_wrong_secret(web) -> None:
    good = ClientCredentialsAuth(web.url("/oauth/token"), "herdsman", "s3cret")
    with httpx.Client(auth=good) as client:
        assert client.get(web.url("/data.json")).status_code == 200
    bad = ClientCredentialsAuth(web.url("/oauth/token"), "herdsman", "wrong")
    with (
        httpx.Client(auth=bad) as client,
        pytest.raises(OAuthError, match="check oauth.client_id, oauth.client_secret"),
    ):
        client.get(web.url("/data.json"))
