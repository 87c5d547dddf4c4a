"""Red team: ``gateway.rate_limit`` could be walked around by what a client puts in its headers.

Findings: the limiter read the key from the *last* of repeated ``x-api-key`` (or
``Authorization``) headers while auth reads the *first*, so a user who sent their key and then a
new junk key on each request was authenticated as themselves and counted as a stranger every
time: no limit at all. And every wrong key had a count of its own, so guessing keys (a new one
each try) was never throttled. Now the limiter reads the key as auth does, counts only a
configured key on its own, and counts anything else against the client's address.
"""

from __future__ import annotations

import httpx

from tests.gateway.gateway_support import running_gateway
from tests.support import make_config

ANN, BOB = "key-of-ann-0001", "key-of-bob-0002"
LIMIT = 5


def _config(home):
    return make_config(home, gateway={"api_keys": [ANN, BOB], "rate_limit": f"{LIMIT}/minute"})


async def test_a_repeated_key_header_does_not_reset_the_count(home) -> None:
    with running_gateway(_config(home)) as gateway:
        async with httpx.AsyncClient(base_url=gateway.url) as http:
            by_header = [
                (
                    await http.post(
                        "/threads/search", json={}, headers=[("x-api-key", ANN), ("x-api-key", f"junk-{i}")]
                    )
                ).status_code
                for i in range(LIMIT + 2)
            ]
            by_bearer = [
                (
                    await http.post(
                        "/threads/search",
                        json={},
                        headers=[("authorization", f"Bearer {BOB}"), ("authorization", f"Bearer junk-{i}")],
                    )
                ).status_code
                for i in range(LIMIT + 2)
            ]
    assert by_header == [200] * LIMIT + [429] * 2, "Ann is counted as Ann whatever follows her key"
    assert by_bearer == [200] * LIMIT + [429] * 2, "the same through Authorization"


async def test_guessing_a_new_key_each_time_is_throttled(home) -> None:
    with running_gateway(_config(home)) as gateway:
        async with httpx.AsyncClient(base_url=gateway.url) as http:
            guesses = [
                (await http.post("/threads/search", json={}, headers={"x-api-key": f"guess-{i}"})).status_code
                for i in range(LIMIT + 2)
            ]
            # a real key still has its own count: the guesser's address is what was throttled
            ann = [
                (await http.post("/threads/search", json={}, headers={"x-api-key": ANN})).status_code for _ in range(2)
            ]
    assert guesses == [401] * LIMIT + [429] * 2
    assert ann == [200, 200]
