"""Red team: a deleted thread's protocol events never reach whoever makes a thread with its id next.

Finding (thread streaming protocol, #14): ``DELETE /threads/{id}`` left the thread's event log
(:class:`~herdsman.runtime.thread_events.ThreadEventHub`) in memory until it had been idle for ten
minutes. Another user who then created a thread with the same id (``POST /threads`` takes the
client's ``thread_id``) and opened ``POST /threads/{id}/stream/events`` with ``since: 0`` was
replayed the first owner's runs: their messages, tool calls and values.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.gateway.gateway_support import RunningGateway, running_gateway, scripted_model, user_message
from tests.support import make_config

ANA, BO = "key-ana-0001", "key-bo-0002"
TID = "6f1c2d3e-4b5a-4c6d-8e7f-001122334455"
SECRET = "ana private launch codes"


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[RunningGateway]:
    config = make_config(tmp_path / "home", gateway={"api_keys": [ANA, BO]})
    model = scripted_model()
    with running_gateway(config, model=model) as served:
        try:
            yield served
        finally:
            model.release()


async def _read_events(http: httpx.AsyncClient, key: str, seconds: float) -> list[str]:
    """Every ``data:`` line the thread's event stream sends (replayed from seq 0) within ``seconds``."""
    got: list[str] = []
    body = {"channels": ["values", "messages", "lifecycle", "updates"], "since": 0}
    try:
        async with asyncio.timeout(seconds):
            async with http.stream("POST", f"/threads/{TID}/stream/events", json=body, headers={"x-api-key": key}) as response:
                assert response.status_code == 200, await response.aread()
                async for line in response.aiter_lines():
                    if line.startswith("data: "):
                        got.append(line[6:])
    except TimeoutError:
        pass
    return got


async def test_a_thread_made_again_with_a_deleted_thread_s_id_replays_none_of_its_events(secured) -> None:
    async with httpx.AsyncClient(base_url=secured.url, timeout=30) as http:
        ana = {"x-api-key": ANA}
        assert (await http.post("/threads", json={"thread_id": TID}, headers=ana)).status_code == 200
        command = {"id": 1, "method": "run.start", "params": {"assistant_id": "lead_agent", "input": user_message(SECRET)}}
        answer = (await http.post(f"/threads/{TID}/commands", json=command, headers=ana)).json()
        assert answer["type"] == "success", answer
        run_id = answer["result"]["run_id"]
        await http.get(f"/threads/{TID}/runs/{run_id}/join", headers=ana)
        assert any(SECRET in line for line in await _read_events(http, ANA, 2)), "the owner sees the run's events"
        assert (await http.delete(f"/threads/{TID}", headers=ana)).status_code == 204

        created = await http.post("/threads", json={"thread_id": TID}, headers={"x-api-key": BO})
        assert created.status_code == 200, created.text
        replayed = await _read_events(http, BO, 2)
    assert not any(SECRET in line for line in replayed), [json.loads(line)["method"] for line in replayed]

