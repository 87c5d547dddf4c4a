"""Preview of a thread's HTML outputs: on the gateway without scripts
(``/api/threads/{id}/preview/files/...``) and live on the preview origin through a signed link;
the listing of what there is to preview; who may see it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.gateway.gateway_support import CLIENT, RunningGateway, running_gateway
from tests.support import make_config

browser = httpx.Client(timeout=60)  # what a browser sends: no key, no base URL
ANA, BO = {"x-api-key": "key-ana"}, {"x-api-key": "key-bo"}
PAGE = '<!doctype html><link rel="stylesheet" href="style.css"><script src="app.js"></script><img src="img/dot.png"><h1>Counter</h1>'
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 16


@pytest.fixture
def secured(home: Path, model) -> Iterator[RunningGateway]:
    config = make_config(home, gateway={"api_keys": ["key-ana", "key-bo"], "preview_origin": {"port": 0}})
    with running_gateway(config, model=model) as served:
        yield served


def write_site(gateway: RunningGateway, tid: str, folder: str = "outputs/site") -> Path:
    sandbox = gateway.app.state.gateway.sandbox.acquire(tid)
    sandbox.write_text(f"/mnt/user-data/{folder}/index.html", PAGE)
    sandbox.write_text(f"/mnt/user-data/{folder}/style.css", "h1 { color: red }")
    sandbox.write_text(f"/mnt/user-data/{folder}/app.js", "document.title = 'ran'")
    root = sandbox.paths.user_data / folder
    (root / "img").mkdir()
    (root / "img" / "dot.png").write_bytes(PNG)
    return root


def new_thread(http: httpx.Client, headers: dict[str, str]) -> str:
    return http.post("/threads", json={}, headers=headers).json()["thread_id"]


def test_an_html_output_is_served_with_its_relative_files_and_types(secured) -> None:
    with httpx.Client(base_url=secured.url, timeout=30) as http:
        tid = new_thread(http, ANA)
        write_site(secured, tid)
        base = f"/api/threads/{tid}/preview/files/outputs/site"
        page = http.get(f"{base}/", headers=ANA)
        assert page.status_code == 200 and "<h1>Counter</h1>" in page.text
        assert page.headers["content-type"].startswith("text/html")
        # the page's relative links resolve beside it, each with its own type
        for name, kind in (("style.css", "text/css"), ("app.js", "javascript"), ("img/dot.png", "image/png")):
            got = http.get(str(page.url.join(name)), headers=ANA)
            assert got.status_code == 200 and kind in got.headers["content-type"], (name, got.headers)
        assert http.get(f"{base}/img/dot.png", headers=ANA).content == PNG
        # on the gateway's own origin no script runs: sandboxed, no script-src, nothing but its own files
        csp = page.headers["content-security-policy"]
        assert "sandbox" in csp and "script-src" not in csp and "default-src 'none'" in csp
        assert page.headers["x-content-type-options"] == "nosniff"
        # the folder itself and its workspace twin
        assert http.get(base, headers=ANA).text == page.text
        write_site(secured, tid, "workspace/app")
        assert http.get(f"/api/threads/{tid}/preview/files/workspace/app/index.html", headers=ANA).status_code == 200
        listing = http.get(f"/api/threads/{tid}/preview", headers=ANA).json()
        assert listing["pages"] == ["/mnt/user-data/outputs/site/index.html", "/mnt/user-data/workspace/app/index.html"]
        assert listing["ports"] == "3000-9000" and listing["origin"].startswith("http://127.0.0.1:")


def test_paths_out_of_outputs_and_workspace_are_refused(secured, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "key.html").write_text("not for the page")
    with httpx.Client(base_url=secured.url, timeout=30) as http:
        tid = new_thread(http, ANA)
        root = write_site(secured, tid)
        sandbox = secured.app.state.gateway.sandbox.acquire(tid)
        sandbox.write_text("/mnt/user-data/uploads/private.html", "uploaded, not written by the agent")
        (root / "out").symlink_to(secret)
        (root / "passwd.html").symlink_to("/etc/passwd")
        (root / "up.html").symlink_to(sandbox.paths.uploads / "private.html")
        base = f"/api/threads/{tid}/preview/files"
        for bad in (
            "outputs/site/..%2F..%2F..%2F..%2Fetc%2Fpasswd",
            "outputs/..%2Fuploads/private.html",
            "uploads/private.html",
            "outputs/site/out/key.html",
            "outputs/site/passwd.html",
            "outputs/site/up.html",
            "%2Fetc%2Fpasswd",
            "mnt/skills",
        ):
            got = http.get(f"{base}/{bad}", headers=ANA)
            assert got.status_code in (400, 404), (bad, got.status_code, got.text)
            assert "not for the page" not in got.text and "root:" not in got.text and "uploaded" not in got.text
            assert str(tmp_path) not in got.text
        assert http.get(f"{base}/outputs/site/nope.html", headers=ANA).status_code == 404


def test_only_the_owner_sees_a_preview_and_not_after_the_thread_is_deleted(secured) -> None:
    with httpx.Client(base_url=secured.url, timeout=30) as http:
        tid = new_thread(http, ANA)
        write_site(secured, tid)
        page = f"/api/threads/{tid}/preview/files/outputs/site/index.html"
        assert http.get(page, headers=ANA).status_code == 200
        for path in (page, f"/api/threads/{tid}/preview"):
            assert http.get(path, headers=BO).status_code == 404
            assert http.get(path).status_code == 401
        assert http.post(f"/api/threads/{tid}/preview/token", headers=BO).status_code == 404
        link = http.post(f"/api/threads/{tid}/preview/token", headers=ANA).json()
        live = f"{link['files_url']}outputs/site/index.html"
        assert browser.get(live).status_code == 200
        assert http.delete(f"/threads/{tid}", headers=ANA).status_code == 204
        assert http.get(page, headers=ANA).status_code == 404
        assert browser.get(live).status_code == 404, "a link issued before the delete is dead"


def test_the_preview_origin_serves_the_page_live_and_nothing_else(secured) -> None:
    with httpx.Client(base_url=secured.url, timeout=30) as http:
        tid = new_thread(http, ANA)
        write_site(secured, tid)
        link = http.post(f"/api/threads/{tid}/preview/token", headers=ANA).json()
    origin = secured.app.state.preview_origin.url
    assert link["origin"] == origin and link["base_url"].startswith(f"{origin}/t/")
    assert httpx.URL(origin).port != httpx.URL(secured.url).port, "a different origin from the gateway's"
    page = browser.get(f"{link['files_url']}outputs/site/")
    assert page.status_code == 200 and "<h1>Counter</h1>" in page.text
    assert browser.get(str(page.url.join("app.js"))).text == "document.title = 'ran'"
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "sandbox allow-scripts" in csp and "allow-same-origin" not in csp
    assert page.headers["referrer-policy"] == "no-referrer" and page.headers["cache-control"] == "no-store"
    # the API, the web UI and the docs are not there, with or without the API key
    for path in ("/threads", "/api/threads", f"/api/threads/{tid}/files", "/", "/docs", "/openapi.json"):
        got = browser.get(f"{origin}{path}", headers=ANA)
        assert got.status_code == 404 and "preview origin" in got.json()["detail"], path
    # the gateway's routes for it are where a client looks for them
    spec = browser.get(f"{secured.url}/openapi.json").json()
    assert {"/api/threads/{thread_id}/preview", "/api/threads/{thread_id}/preview/token"} <= set(spec["paths"])


def test_without_api_keys_the_local_user_gets_links_too(home, model) -> None:
    with running_gateway(make_config(home, gateway={"preview_origin": {"port": 0}}), model=model) as served:
        with httpx.Client(base_url=served.url, timeout=30, headers=CLIENT) as http:
            tid = http.post("/threads", json={}).json()["thread_id"]
            write_site(served, tid)
            link = http.post(f"/api/threads/{tid}/preview/token").json()
        assert browser.get(f"{link['files_url']}outputs/site/index.html").status_code == 200


def test_a_preview_origin_turned_off_says_how_to_turn_it_on(home, model) -> None:
    with running_gateway(make_config(home, gateway={"preview_origin": {"enabled": False}}), model=model) as served:
        with httpx.Client(base_url=served.url, timeout=30, headers=CLIENT) as http:
            tid = http.post("/threads", json={}).json()["thread_id"]
            got = http.post(f"/api/threads/{tid}/preview/token")
            assert got.status_code == 503 and "gateway.preview_origin.enabled" in got.json()["detail"]
            assert http.get(f"/api/threads/{tid}/preview").json()["origin"] is None


def test_a_preview_origin_on_every_address_is_linked_by_the_name_the_browser_used(home, model) -> None:
    config = make_config(home, gateway={"preview_origin": {"port": 0, "host": "0.0.0.0"}})
    with running_gateway(config, model=model) as served:
        port = httpx.URL(served.app.state.preview_origin.url).port
        with httpx.Client(base_url=served.url, timeout=30, headers=CLIENT) as http:
            tid = http.post("/threads", json={}).json()["thread_id"]
            write_site(served, tid)
            link = http.post(
                f"/api/threads/{tid}/preview/token", headers={"host": f"localhost:{httpx.URL(served.url).port}"}
            ).json()
        assert link["origin"] == f"http://localhost:{port}"
        assert browser.get(f"{link['files_url']}outputs/site/index.html").status_code == 200
