"""Red team: a huge request body, with or without a key.

Finding (#14): no route bounded its request body. FastAPI reads a route's JSON body whole before
its dependencies run, the API-key check among them, so a client *without a key* made the gateway
hold a 150 MB body (its memory grew by some 450 MB, parsing included) before it answered 401;
the thread protocol's ``POST /threads/{id}/commands`` read any body whole too. Now a body over
``gateway.max_request_bytes`` gets a JSON 413 naming the limit: at once when its declared length
is over it, as soon as it passes the limit when it is streamed (chunked). Uploads keep their own,
larger bound (``gateway.max_upload_bytes``), since they stream to disk.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from tests.gateway.gateway_support import RunningGateway, running_gateway
from tests.support import make_config

ANA = "key-ana-0001"
LIMIT = 64 * 1024
TID = "6f1c2d3e-4b5a-4c6d-8e7f-0011223344bb"


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[RunningGateway]:
    config = make_config(tmp_path / "home", gateway={"api_keys": [ANA], "max_request_bytes": LIMIT})
    with running_gateway(config) as served:
        yield served


def _json_of(size: int) -> bytes:
    return b'{"metadata": {"x": "' + b"a" * size + b'"}}'


def _refused(response: httpx.Response) -> None:
    assert response.status_code == 413, response.text
    detail = response.json()["detail"]
    assert f"{LIMIT} bytes" in detail and "gateway.max_request_bytes" in detail, detail


async def test_a_body_over_the_limit_without_a_key_is_refused_unread(secured) -> None:
    async with httpx.AsyncClient(base_url=secured.url, timeout=30) as http:
        _refused(
            await http.post(
                "/threads/search", content=_json_of(4 * LIMIT), headers={"content-type": "application/json"}
            )
        )
        small = await http.post(
            "/threads/search", content=_json_of(LIMIT // 2), headers={"content-type": "application/json"}
        )
    assert small.status_code == 401, "a body within the limit reaches the key check as before"


async def test_a_streamed_body_is_cut_off_at_the_limit(secured) -> None:
    total, sent = 64 * 1024 * 1024, 0

    async def chunks() -> AsyncIterator[bytes]:
        nonlocal sent
        yield b'{"id": 1, "method": "run.start", "params": {"assistant_id": "lead_agent", "input": "'
        while sent < total:
            sent += 16 * 1024
            yield b"a" * (16 * 1024)
        yield b'"}}'

    ana = {"x-api-key": ANA}
    async with httpx.AsyncClient(base_url=secured.url, timeout=30, headers=ana) as http:
        assert (await http.post("/threads", json={"thread_id": TID})).status_code == 200
        try:
            _refused(await http.post(f"/threads/{TID}/commands", content=chunks()))
        except httpx.TransportError:
            pass  # the gateway answered and closed while the client was still sending: also a refusal
        assert sent < total // 2, f"the gateway read {sent} bytes of a body it must stop at {LIMIT}"
        command = {"id": 2, "method": "agent.getTree", "params": {}}
        answer = await http.post(f"/threads/{TID}/commands", json=command)
    assert answer.status_code == 200 and answer.json()["type"] == "success", answer.text


async def test_uploads_keep_their_own_larger_bound(secured) -> None:
    ana = {"x-api-key": ANA}
    payload = b"x" * (4 * LIMIT)
    async with httpx.AsyncClient(base_url=secured.url, timeout=30, headers=ana) as http:
        assert (await http.post("/threads", json={"thread_id": TID})).status_code == 200
        sent = await http.post(
            f"/api/threads/{TID}/uploads", files={"files": ("big.bin", payload, "application/octet-stream")}
        )
        assert sent.status_code == 200, sent.text
        fetched = await http.get(f"/api/threads/{TID}/artifacts/mnt/user-data/uploads/big.bin")
    assert fetched.content == payload
