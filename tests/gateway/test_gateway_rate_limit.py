"""``gateway.rate_limit``: requests per API key, refused with 429 and Retry-After past the limit,
one count per key (not per gateway) when the gateways share Redis."""

from __future__ import annotations

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import RateLimitError
from pydantic import ValidationError

from herdsman.config.schema import HerdsmanConfig
from tests.gateway.gateway_support import running_gateway
from tests.support import make_config

KEYS = ["key-of-ann", "key-of-bob"]


def _config(home, **gateway):
    return make_config(home, gateway={"api_keys": KEYS, "rate_limit": "5/minute", **gateway})


async def test_a_key_past_its_limit_gets_429_with_retry_after_and_other_keys_go_on(home) -> None:
    with running_gateway(_config(home)) as gateway:
        ann = get_client(url=gateway.url, api_key=KEYS[0])
        bob = get_client(url=gateway.url, api_key=KEYS[1])
        try:
            for _ in range(5):
                await ann.threads.search()
            with pytest.raises(RateLimitError) as info:
                await ann.threads.search()
            refused = info.value.response
            assert 1 <= int(refused.headers["retry-after"]) <= 60
            assert "5 per 1 minute" in refused.json()["detail"] and "retry after" in refused.json()["detail"]
            assert len(await bob.threads.search()) == 0, "another key has its own count"
            async with httpx.AsyncClient(base_url=gateway.url) as http:
                assert (await http.get("/ok")).status_code == 200, "health checks are not counted"
                for _ in range(10):
                    assert (await http.get("/ok")).status_code == 200
        finally:
            await ann.aclose()
            await bob.aclose()


async def test_a_wrong_key_is_counted_too(home) -> None:
    """Guessing keys is throttled like using one: 401 until the limit, then 429."""
    with running_gateway(_config(home)) as gateway:
        async with httpx.AsyncClient(base_url=gateway.url, headers={"x-api-key": "guess"}) as http:
            codes = [(await http.post("/threads/search", json={})).status_code for _ in range(7)]
    assert codes == [401] * 5 + [429] * 2


async def test_gateways_sharing_redis_count_one_limit(home, redis_url) -> None:
    config = _config(home, stream_bridge="redis", redis_url=redis_url, rate_limit="6/minute")
    with running_gateway(config) as first, running_gateway(config) as second:
        headers = {"x-api-key": KEYS[0]}
        async with httpx.AsyncClient(headers=headers) as http:
            codes = []
            for i in range(8):
                url = (first if i % 2 else second).url
                codes.append((await http.post(f"{url}/threads/search", json={})).status_code)
    assert codes == [200] * 6 + [429] * 2


def test_a_limit_that_is_not_a_rate_is_a_config_error_that_says_how(home) -> None:
    with pytest.raises(ValidationError) as info:
        HerdsmanConfig.model_validate({"home": str(home), "gateway": {"rate_limit": "lots"}})
    assert "20/second;600/minute" in str(info.value)
    assert HerdsmanConfig.model_validate({"home": str(home), "gateway": {"rate_limit": ""}}).gateway.rate_limit is None
