"""Red team: a deleted thread's protocol events never reach whoever makes a thread with its id next.

Finding (thread streaming protocol, #14): ``DELETE /threads/{id}`` left the thread's event log
(:class:`~herdsman.runtime.streaming.thread_events.ThreadEventHub`) in memory until it had been idle for ten
minutes. Another user who then created a thread with the same id (``POST /threads`` takes the
client's ``thread_id``) and opened ``POST /threads/{id}/stream/events`` with ``since: 0`` was
replayed the first owner's runs: their messages, tool calls and values.

Second finding: with two gateways on one database, only the gateway that served the delete
dropped its log; another gateway that had streamed the thread kept it, and replayed it to whoever
made the id again. A log now remembers which thread record it follows (its ``created_at``) and
is dropped when the id names another one.

Third finding: a stream open on a thread when it was deleted went on for ever (heartbeats), and
kept the deleted thread's log, up to ``gateway.replay_max_bytes``, in memory as long as it
stayed open; deleting and making the thread again let one client pile up such logs. The streams
of a dropped log now end.

Fourth finding: a ``run.start`` refused (an unknown assistant, bad params) on an id no thread has
left a log, its task and a run watcher behind for that id for ten minutes: a client sending
refused commands to fresh ids grew the gateway's memory without bound. Nothing stays for them now.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.gateway.gateway_support import RunningGateway, running_gateway, scripted_gateway, user_message
from tests.support import make_config

ANA, BO = "key-ana-0001", "key-bo-0002"
TID = "6f1c2d3e-4b5a-4c6d-8e7f-001122334455"
SECRET = "ana private launch codes"


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[RunningGateway]:
    config = make_config(tmp_path / "home", gateway={"api_keys": [ANA, BO]})
    with scripted_gateway(config) as served:
        yield served


async def _read_events(http: httpx.AsyncClient, key: str, seconds: float, url: str = "") -> list[str]:
    """Every ``data:`` line the thread's event stream sends (replayed from seq 0) within ``seconds``."""
    got: list[str] = []
    body = {"channels": ["values", "messages", "lifecycle", "updates"], "since": 0}
    try:
        async with asyncio.timeout(seconds):
            async with http.stream(
                "POST", f"{url}/threads/{TID}/stream/events", json=body, headers={"x-api-key": key}
            ) as response:
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
        command = {
            "id": 1,
            "method": "run.start",
            "params": {"assistant_id": "lead_agent", "input": user_message(SECRET)},
        }
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


async def test_another_gateway_replays_none_of_a_deleted_thread_s_events(tmp_path: Path) -> None:
    config = make_config(
        tmp_path / "home",
        checkpointer={"type": "sqlite"},
        gateway={"api_keys": [ANA, BO]},
        runs={"lease_seconds": 3, "poll_seconds": 0.2},
    )
    with running_gateway(config) as first, running_gateway(config) as second:
        async with httpx.AsyncClient(timeout=30) as http:
            ana = {"x-api-key": ANA}
            assert (await http.post(f"{second.url}/threads", json={"thread_id": TID}, headers=ana)).status_code == 200
            command = {
                "id": 1,
                "method": "run.start",
                "params": {"assistant_id": "lead_agent", "input": user_message(SECRET)},
            }
            answer = (await http.post(f"{second.url}/threads/{TID}/commands", json=command, headers=ana)).json()
            assert answer["type"] == "success", answer
            await http.get(f"{second.url}/threads/{TID}/runs/{answer['result']['run_id']}/join", headers=ana)
            assert any(SECRET in line for line in await _read_events(http, ANA, 2, second.url)), (
                "the second gateway has the log"
            )
            assert (
                await http.delete(f"{first.url}/threads/{TID}", headers=ana)
            ).status_code == 204  # served by the first

            created = await http.post(f"{first.url}/threads", json={"thread_id": TID}, headers={"x-api-key": BO})
            assert created.status_code == 200, created.text
            replayed = await _read_events(http, BO, 2, second.url)
    assert not any(SECRET in line for line in replayed), [json.loads(line)["method"] for line in replayed]


async def test_a_stream_of_a_deleted_thread_ends(secured) -> None:
    async with httpx.AsyncClient(base_url=secured.url, timeout=30) as http:
        ana = {"x-api-key": ANA}
        assert (await http.post("/threads", json={"thread_id": TID}, headers=ana)).status_code == 200
        opened = asyncio.Event()

        async def follow() -> None:
            body = {"channels": ["values", "lifecycle"]}
            async with http.stream("POST", f"/threads/{TID}/stream/events", json=body, headers=ana) as response:
                assert response.status_code == 200
                opened.set()
                async for _ in response.aiter_lines():
                    pass

        stream = asyncio.create_task(follow())
        async with asyncio.timeout(20):
            await opened.wait()
        assert (await http.delete(f"/threads/{TID}", headers=ana)).status_code == 204
        try:
            async with asyncio.timeout(20):  # heartbeats every 15 s would keep it open for ever
                await stream
        finally:
            stream.cancel()
    assert not secured.app.state.gateway.thread_events._logs, "no log is kept for the deleted thread"


async def test_refused_run_starts_on_fresh_ids_leave_nothing_behind(secured) -> None:
    gateway = secured.app.state.gateway
    async with httpx.AsyncClient(base_url=secured.url, timeout=30, headers={"x-api-key": ANA}) as http:
        for params in ({"assistant_id": "no-such-assistant"}, {}, {"assistant_id": "lead_agent", "config": "x"}):
            for _ in range(20):
                command = {"id": 1, "method": "run.start", "params": params}
                answer = (await http.post(f"/threads/{uuid.uuid4()}/commands", json=command)).json()
                assert answer["type"] == "error" and answer["error"] == "invalid_argument", answer
        assert (await http.post("/threads/search", json={})).json() == [], "no thread was made"
    assert not gateway.thread_events._logs, f"{len(gateway.thread_events._logs)} logs kept for ids of no thread"
    assert not gateway.runs.table.watchers, "nor run watchers"
