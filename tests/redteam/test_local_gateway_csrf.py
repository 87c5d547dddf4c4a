"""Red team: web pages the user visits drive a local gateway (DNS rebinding, cross-site requests).

Finding (#30, item 2): the default gateway (no API keys, on 127.0.0.1:2026) checked neither the
``Host`` of a request nor where it came from. A page whose name was re-resolved to 127.0.0.1
(DNS rebinding) had the whole API, its requests carrying ``Host: attacker.example:2026``; a
cross-site ``text/plain`` POST (a "simple" request, sent by browsers without a CORS preflight) to
``/threads/{id}/commands`` started a run whose ``bash`` wrote a file, and cross-site multipart
uploads were kept. Each attack below is sent to a real gateway exactly as a browser sends it
(the headers a page cannot choose: Host, Origin, Sec-Fetch-Site); the gateway refuses it and
nothing happens, while the web UI's own requests (same origin) and the langgraph-sdk's keep
working. ``test_gateway_bind`` covers the other half: no keyless gateway on an open address.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from langgraph_sdk import get_client

from tests.gateway.gateway_support import HOLD, HeldModel, RunningGateway, running_gateway, scripted_model, user_message
from tests.support import make_config

EVIL = "https://attacker.example"
TID = "9a1c2d3e-4b5a-4c6d-8e7f-0011223344cc"
PWNED = "/mnt/user-data/outputs/pwned.txt"


@pytest.fixture
def model() -> HeldModel:
    return scripted_model()


@pytest.fixture
def local(tmp_path: Path, model: HeldModel) -> Iterator[RunningGateway]:
    """The default gateway: no API keys, on loopback."""
    with running_gateway(make_config(tmp_path / "home"), model=model) as served:
        try:
            yield served
        finally:
            model.release()


def port_of(gateway: RunningGateway) -> int:
    return urlsplit(gateway.url).port or 80


def run_body(command: str) -> dict[str, Any]:
    return {"assistant_id": "lead_agent", "input": user_message(command)}


async def nothing_ran(http: httpx.AsyncClient, tid: str) -> None:
    """No run on the thread, and the file the attack's command writes is not there."""
    runs = await http.get(f"/threads/{tid}/runs")
    assert runs.status_code == 200 and runs.json() == [], runs.text
    assert (await http.get(f"/api/threads/{tid}/artifacts{PWNED}")).status_code == 404


def refused(response: httpx.Response, status: int, *words: str) -> None:
    assert response.status_code == status, f"{response.status_code} {response.text}"
    detail = response.json()["detail"]
    for word in words:
        assert word in detail, detail


async def test_a_dns_rebinding_page_is_refused(local: RunningGateway) -> None:
    """The page's name resolves to 127.0.0.1: its requests are same-origin for the browser, so
    they carry its own Origin, and JSON too. Only their Host gives them away."""
    port = port_of(local)
    page = {
        "host": f"attacker.example:{port}",
        "origin": f"http://attacker.example:{port}",
        "sec-fetch-site": "same-origin",
    }
    async with httpx.AsyncClient(base_url=local.url, timeout=30) as http:
        created = await http.post("/threads", json={"thread_id": TID}, headers=page)
        refused(created, 421, "attacker.example", "gateway.allowed_hosts")
        refused(await http.get("/info", headers=page), 421)
        refused(await http.post("/threads/search", json={}, headers=page), 421)
        assert (await http.get(f"/threads/{TID}")).status_code == 404, "the thread was made"
        # the gateway's own names still answer, also as a local proxy forwards them (nginx's $host has no port)
        for own in (f"127.0.0.1:{port}", f"localhost:{port}", "[::1]", "localhost"):
            assert (await http.post("/threads/search", json={}, headers={"host": own})).status_code == 200


async def test_a_cross_site_text_plain_post_starts_no_run(local: RunningGateway) -> None:
    """A form or ``fetch(..., {mode: "no-cors"})`` on any site: a simple request, no preflight."""
    async with httpx.AsyncClient(base_url=local.url, timeout=30) as http:
        assert (await http.post("/threads", json={"thread_id": TID})).status_code == 200
        command = {
            "id": 1,
            "method": "run.start",
            "params": {"assistant_id": "lead_agent", "input": user_message(f"run echo pwned > {PWNED}")},
        }
        cross_site = {"origin": EVIL, "sec-fetch-site": "cross-site", "content-type": "text/plain;charset=UTF-8"}
        body = json.dumps(command)
        refused(
            await http.post(f"/threads/{TID}/commands", content=body, headers=cross_site),
            403,
            EVIL,
            "gateway.cors_origins",
        )
        run = json.dumps(run_body(f"run echo pwned > {PWNED}"))
        refused(await http.post(f"/threads/{TID}/runs", content=run, headers=cross_site), 403)
        refused(await http.post(f"/threads/{TID}/runs/wait", content=run, headers=cross_site), 403)
        no_type = {"origin": EVIL, "sec-fetch-site": "cross-site"}  # a Blob without a type: no Content-Type at all
        refused(await http.post(f"/threads/{TID}/runs", content=run, headers=no_type), 403)
        refused(await http.post(f"/threads/{TID}/commands", content=body, headers=no_type), 403)
        null_origin = {"origin": "null", "content-type": "text/plain"}  # a sandboxed frame, a data: URL
        refused(await http.post(f"/threads/{TID}/commands", content=body, headers=null_origin), 403)
        old_browser = {"content-type": "text/plain"}  # a browser that sends no Origin
        refused(
            await http.post(f"/threads/{TID}/commands", content=body, headers=old_browser),
            403,
            "application/json",
            "X-Herdsman-Client",
        )
        await nothing_ran(http, TID)


async def test_a_cross_site_upload_keeps_nothing(local: RunningGateway) -> None:
    files = [("files", ("evil.txt", b"planted", "text/plain"))]
    async with httpx.AsyncClient(base_url=local.url, timeout=30) as http:
        assert (await http.post("/threads", json={"thread_id": TID})).status_code == 200
        url = f"/api/threads/{TID}/uploads"
        refused(await http.post(url, files=files, headers={"origin": EVIL, "sec-fetch-site": "cross-site"}), 403)
        refused(await http.post(url, files=files), 403, "X-Herdsman-Client")  # no Origin, no header: an old browser
        refused(await http.post(url, files=files, headers={"sec-fetch-site": "cross-site"}), 403)
        assert (await http.get(url)).json()["files"] == []
        # a program says it is one with the header; the web UI's upload is same-origin
        assert (await http.post(url, files=files, headers={"x-herdsman-client": "1"})).status_code == 200
        same_origin = {"origin": local.url, "sec-fetch-site": "same-origin"}
        again = [("files", ("ui.txt", b"from the web UI", "text/plain"))]
        assert (await http.post(url, files=again, headers=same_origin)).status_code == 200
        assert sorted(f["filename"] for f in (await http.get(url)).json()["files"]) == ["evil.txt", "ui.txt"]


async def test_the_web_ui_and_the_sdk_keep_working(local: RunningGateway, model: HeldModel) -> None:
    """Same-origin requests as the web UI sends them (JSON, multipart, bodiless POST and DELETE
    with the page's Origin) and the official SDK's, which sends JSON and no Origin."""
    sdk = get_client(url=local.url, api_key=None)
    try:
        thread = await sdk.threads.create(metadata={"from": "sdk"})
        tid = thread["thread_id"]
        values = await sdk.runs.wait(tid, "lead_agent", input=user_message("write sdk.txt made by the sdk"))
        assert "done" in values["messages"][-1]["content"]
        run = await sdk.runs.create(tid, "lead_agent", input=user_message(f"wait {HOLD}"))
        await asyncio.to_thread(model.wait_until_held, 60)
        await sdk.runs.cancel(tid, run["run_id"], wait=True)  # a bodiless POST
        assert (await sdk.runs.get(tid, run["run_id"]))["status"] == "interrupted"
        assert [a["graph_id"] for a in await sdk.assistants.search()] == ["lead_agent"]
        await sdk.store.put_item(["notes"], "k", {"v": 1})
        await sdk.store.delete_item(["notes"], "k")
    finally:
        await sdk.aclose()
    page = {"origin": local.url, "sec-fetch-site": "same-origin"}
    async with httpx.AsyncClient(base_url=local.url, timeout=30, headers=page) as http:
        made = await http.post("/threads", json={})
        assert made.status_code == 200, made.text
        ui_tid = made.json()["thread_id"]
        streamed = await http.post(f"/api/langgraph/threads/{ui_tid}/runs/wait", json=run_body("hello there"))
        assert streamed.status_code == 200, streamed.text
        cancel = await http.post(f"/api/threads/{ui_tid}/tasks/no-such-task/cancel")  # bodiless, no type
        assert cancel.status_code == 404, cancel.text
        assert (await http.get(f"/api/threads/{tid}/artifacts/outputs/sdk.txt")).text == "made by the sdk"
        assert (await http.delete(f"/threads/{ui_tid}")).status_code in (200, 204)


def test_allowed_hosts_admit_a_reverse_proxys_name(tmp_path: Path) -> None:
    config = make_config(tmp_path / "home", gateway={"allowed_hosts": ["herdsman.proxy.example"]})
    with running_gateway(config) as served, httpx.Client(base_url=served.url, timeout=30) as http:
        proxied = {"host": "herdsman.proxy.example", "origin": "https://herdsman.proxy.example"}
        assert http.post("/threads/search", json={}, headers=proxied).status_code == 200
        refused(http.post("/threads/search", json={}, headers={"host": "attacker.example"}), 421)


def test_with_api_keys_the_loopback_host_check_stays(tmp_path: Path) -> None:
    """Keys stop cross-site requests (no page holds the key), but unauthenticated routes (/info,
    the web UI) would still be read by a rebinding page: a loopback gateway checks Host anyway."""
    config = make_config(tmp_path / "home", gateway={"api_keys": ["key-ana"]})
    with running_gateway(config) as served, httpx.Client(base_url=served.url, timeout=30) as http:
        refused(http.get("/info", headers={"host": "attacker.example:2026"}), 421)
        keyed = http.post("/threads", content=b"{}", headers={"x-api-key": "key-ana", "content-type": "text/plain"})
        assert keyed.status_code != 403, keyed.text  # a key is proof enough that no page sent it
