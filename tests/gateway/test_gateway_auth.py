"""API keys: requests without a valid key get 401; each key is a user who only sees their threads."""

from __future__ import annotations

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import AuthenticationError, NotFoundError

from tests.gateway.gateway_support import user_message


async def test_missing_or_wrong_key_is_401(secured) -> None:
    async with httpx.AsyncClient(base_url=secured.url) as http:
        res = await http.post("/threads", json={})
        assert res.status_code == 401 and "x-api-key" in res.json()["detail"]
        res = await http.post("/threads", json={}, headers={"x-api-key": "nope"})
        assert res.status_code == 401 and "gateway.api_keys" in res.json()["detail"]
        assert (await http.post("/threads", json={}, headers={"Authorization": "Bearer key-bo"})).status_code == 200
        assert (await http.get("/api/health")).status_code == 200
    anonymous = get_client(url=secured.url, api_key=None)
    try:
        with pytest.raises(AuthenticationError):
            await anonymous.threads.search()
    finally:
        await anonymous.aclose()


async def test_users_only_see_their_own_threads(secured) -> None:
    ana = get_client(url=secured.url, api_key="key-ana")
    bo = get_client(url=secured.url, api_key="key-bo")
    try:
        tid = (await ana.threads.create(metadata={"owner": "bo"}))["thread_id"]  # a client cannot pick the owner
        await ana.runs.wait(tid, "lead_agent", input=user_message("private"))
        with pytest.raises(NotFoundError):
            await bo.threads.get(tid)
        with pytest.raises(NotFoundError):
            await bo.threads.get_state(tid)
        with pytest.raises(NotFoundError):
            await bo.runs.create(tid, "lead_agent", input=user_message("let me in"))
        with pytest.raises(NotFoundError):
            await bo.threads.update(tid, metadata={"x": 1})
        with pytest.raises(NotFoundError):
            await bo.threads.delete(tid)
        assert await bo.threads.search() == []
        assert [t["thread_id"] for t in await ana.threads.search()] == [tid]
        runs = await ana.runs.list(tid)
        with pytest.raises(NotFoundError):
            await bo.runs.get(tid, runs[0]["run_id"])
        async with httpx.AsyncClient(base_url=secured.url, headers={"x-api-key": "key-bo"}) as http:
            assert (await http.get(f"/api/threads/{tid}/uploads")).status_code == 404
            assert (await http.get(f"/threads/{tid}/runs/{runs[0]['run_id']}/stream")).status_code == 404
        assert (await ana.threads.get(tid))["values"]["messages"][-1]["content"] == "echo: private"
    finally:
        await ana.aclose()
        await bo.aclose()
