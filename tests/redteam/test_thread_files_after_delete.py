"""Red team: a deleted thread's files never reach whoever makes a thread with its id next.

Finding (#14): ``DELETE /threads/{id}`` deleted the thread's record and checkpoints but left its
files on disk (workspace, uploads, outputs, sub-agent transcripts). Another user who then created
a thread with the same id (``POST /threads`` takes the client's ``thread_id``) listed and
downloaded the first owner's uploads and outputs through the uploads, files and artifacts
routes, and the agent of their runs found them in its sandbox. Deleting a thread now deletes its
files too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from herdsman.sandbox.paths import thread_dir
from tests.gateway.gateway_support import RunningGateway, running_gateway
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
        sent = await http.post(f"/api/threads/{TID}/uploads", files={"files": ("codes.txt", SECRET, "text/plain")}, headers=ana)
        assert sent.status_code == 200, sent.text
        artifact = f"/api/threads/{TID}/artifacts/mnt/user-data/uploads/codes.txt"
        assert (await http.get(artifact, headers=ana)).content == SECRET, "the owner reads their upload"
        assert (await http.delete(f"/threads/{TID}", headers=ana)).status_code == 204

        assert (await http.post("/threads", json={"thread_id": TID}, headers=bo)).status_code == 200
        listed = await http.get(f"/api/threads/{TID}/uploads", headers=bo)
        walked = await http.get(f"/api/threads/{TID}/files", params={"depth": 3}, headers=bo)
        fetched = await http.get(artifact, headers=bo)
    assert listed.status_code == 200 and "codes.txt" not in listed.text, listed.text
    assert walked.status_code == 200 and "codes.txt" not in walked.text, walked.text
    assert fetched.status_code == 404 and SECRET not in fetched.content
    home = secured.app.state.gateway.config.resolve_home()
    assert not any(p.read_bytes() == SECRET for p in thread_dir(home, TID).rglob("*") if p.is_file())
