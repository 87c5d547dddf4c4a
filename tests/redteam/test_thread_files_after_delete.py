"""Red team: a deleted thread's files never reach whoever makes a thread with its id next.

Finding (#14): ``DELETE /threads/{id}`` deleted the thread's record and checkpoints but left its
files on disk (workspace, uploads, outputs, sub-agent transcripts). Another user who then created
a thread with the same id (``POST /threads`` takes the client's ``thread_id``) listed and
downloaded the first owner's uploads and outputs through the uploads, files and artifacts
routes, and the agent of their runs found them in its sandbox. Deleting a thread now deletes its
files too, and a process that had the thread's sandbox or file history open (the gateway that
deleted it, or another sharing the home) makes them again for the thread made next with the id.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from herdsman.sandbox.paths import thread_dir
from tests.gateway.gateway_support import RunningGateway, running_gateway, user_message
from tests.support import make_config

ANA, BO = "key-ana-0001", "key-bo-0002"
TID = "6f1c2d3e-4b5a-4c6d-8e7f-00112233aaff"
SECRET = b"ana's private launch codes"


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[RunningGateway]:
    with running_gateway(make_config(tmp_path / "home", gateway={"api_keys": [ANA, BO]})) as served:
        yield served


async def test_a_thread_made_again_with_a_deleted_thread_s_id_has_none_of_its_files(secured) -> None:
    ana, bo = {"x-api-key": ANA}, {"x-api-key": BO}
    async with httpx.AsyncClient(base_url=secured.url, timeout=30) as http:
        assert (await http.post("/threads", json={"thread_id": TID}, headers=ana)).status_code == 200
        sent = await http.post(
            f"/api/threads/{TID}/uploads", files={"files": ("codes.txt", SECRET, "text/plain")}, headers=ana
        )
        assert sent.status_code == 200, sent.text
        artifact = f"/api/threads/{TID}/artifacts/mnt/user-data/uploads/codes.txt"
        assert (await http.get(artifact, headers=ana)).content == SECRET, "the owner reads their upload"
        assert (await http.delete(f"/threads/{TID}", headers=ana)).status_code == 204

        assert (await http.post("/threads", json={"thread_id": TID}, headers=bo)).status_code == 200
        listed = await http.get(f"/api/threads/{TID}/uploads", headers=bo)
        walked = await http.get(f"/api/threads/{TID}/files", params={"depth": 3}, headers=bo)
        fetched = await http.get(artifact, headers=bo)
        ran = await http.post(
            f"/threads/{TID}/runs/wait",
            headers=bo,
            json={"assistant_id": "lead_agent", "input": user_message("write b.txt bo")},
        )
    assert ran.status_code == 200 and "__error__" not in ran.json(), "the gateway that deleted it runs the new thread"
    assert listed.status_code == 200 and "codes.txt" not in listed.text, listed.text
    assert walked.status_code == 200 and "codes.txt" not in walked.text, walked.text
    assert fetched.status_code == 404 and SECRET not in fetched.content
    home = secured.app.state.gateway.config.resolve_home()
    assert not any(p.read_bytes() == SECRET for p in thread_dir(home, TID).rglob("*") if p.is_file())


async def test_the_thread_made_again_works_on_every_gateway_that_knew_the_old_one(tmp_path: Path) -> None:
    config = make_config(
        tmp_path / "home",
        checkpointer={"type": "sqlite"},
        gateway={"api_keys": [ANA, BO]},
        runs={"lease_seconds": 3, "poll_seconds": 0.2},
    )
    ana, bo = {"x-api-key": ANA}, {"x-api-key": BO}
    with running_gateway(config) as first, running_gateway(config) as second:
        async with httpx.AsyncClient(timeout=60) as http:
            assert (await http.post(f"{second.url}/threads", json={"thread_id": TID}, headers=ana)).status_code == 200
            sent = await http.post(
                f"{second.url}/api/threads/{TID}/uploads",
                headers=ana,
                files={"files": ("codes.txt", SECRET, "text/plain")},
            )
            assert sent.status_code == 200, sent.text
            ran = await http.post(
                f"{second.url}/threads/{TID}/runs/wait",
                headers=ana,
                json={"assistant_id": "lead_agent", "input": user_message("write a.txt ana")},
            )
            assert ran.status_code == 200 and "__error__" not in ran.json(), (
                ran.text
            )  # its sandbox and file history are open there
            assert (await http.delete(f"{first.url}/threads/{TID}", headers=ana)).status_code == 204

            assert (await http.post(f"{first.url}/threads", json={"thread_id": TID}, headers=bo)).status_code == 200
            for gateway in (second, first):
                listed = await http.get(f"{gateway.url}/api/threads/{TID}/uploads", headers=bo)
                assert listed.status_code == 200 and "codes.txt" not in listed.text, listed.text
            sent = await http.post(
                f"{second.url}/api/threads/{TID}/uploads",
                headers=bo,
                files={"files": ("mine.txt", b"bo's", "text/plain")},
            )
            ran = await http.post(
                f"{second.url}/threads/{TID}/runs/wait",
                headers=bo,
                json={"assistant_id": "lead_agent", "input": user_message("write b.txt bo")},
            )
            written = await http.get(
                f"{second.url}/api/threads/{TID}/artifacts/mnt/user-data/outputs/b.txt", headers=bo
            )
            old = await http.get(f"{second.url}/api/threads/{TID}/artifacts/mnt/user-data/outputs/a.txt", headers=bo)
    assert sent.status_code == 200, sent.text
    assert ran.status_code == 200 and "__error__" not in ran.json(), ran.text
    assert written.status_code == 200 and written.text.startswith("bo"), written.text
    assert old.status_code == 404, old.text
