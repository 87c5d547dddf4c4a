"""Red team: a page the agent (or a prompt injection) wrote, opened in the Preview tab.

Finding (#35): a thread's HTML output or a server the agent starts is code written by the model;
shown on the gateway's origin it would run where the web UI keeps the user's API key and where
every request may call ``/api`` as the user. It is shown on the preview origin instead
(``herdsman_gateway/preview/``). A hostile page below tries what such a page would try, sent to
the real gateway and preview listener as a browser sends it (the Origin a sandboxed page has is
``null``, or the preview origin's): it cannot read the key (another origin, an opaque one, whose
listener never serves the UI or accepts a key), cannot call ``/api`` (no credential rides along,
the gateway's CORS and browser guard refuse its origin, its CSP allows no connection to the
gateway), cannot reach another thread's preview (the token is bound to the thread and the user),
and expired, forged or altered tokens are refused. ``tests/web`` loads it in headless Chromium.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from herdsman_gateway.auth import user_id_for_key
from herdsman_gateway.preview import policy
from herdsman_gateway.preview.tokens import InvalidToken, PreviewTokens
from tests.gateway.gateway_support import CLIENT, RunningGateway, running_gateway
from tests.support import make_config

KEY = "key-ana-secret-0001"
browser = httpx.Client(timeout=60)  # what a browser sends: no key, no base URL
ANA, BO = {"x-api-key": KEY}, {"x-api-key": "key-bo-0002"}
HOSTILE = """<!doctype html><title>counter</title>
<script>
  const stolen = {key: null, threads: null};
  try { stolen.key = localStorage.getItem('herdsman.apiKey'); } catch (e) { stolen.key = 'blocked: ' + e; }
  fetch(GATEWAY + '/api/threads', {credentials: 'include'}).then(r => r.text()).then(t => stolen.threads = t)
    .catch(e => stolen.threads = 'blocked: ' + e);
  fetch(GATEWAY + '/threads', {method: 'POST', body: '{}', headers: {'content-type': 'text/plain'}});
</script>"""


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[RunningGateway]:
    config = make_config(tmp_path / "home", gateway={"api_keys": [KEY, "key-bo-0002"], "preview_origin": {"port": 0}})
    with running_gateway(config) as served:
        yield served


@pytest.fixture
def local(tmp_path: Path) -> Iterator[RunningGateway]:
    with running_gateway(make_config(tmp_path / "home", gateway={"preview_origin": {"port": 0}})) as served:
        yield served


def hostile_thread(gateway: RunningGateway, headers: dict[str, str]) -> tuple[str, dict]:
    with httpx.Client(base_url=gateway.url, timeout=30, headers=CLIENT) as http:
        tid = http.post("/threads", json={}, headers=headers).json()["thread_id"]
        gateway.app.state.gateway.sandbox.acquire(tid).write_text(
            "/mnt/user-data/outputs/evil/index.html", HOSTILE.replace("GATEWAY", repr(gateway.url))
        )
        link = http.post(f"/api/threads/{tid}/preview/token", headers=headers).json()
    return tid, link


def test_the_page_runs_on_another_opaque_origin_that_never_holds_the_key(secured) -> None:
    tid, link = hostile_thread(secured, ANA)
    page = browser.get(f"{link['files_url']}outputs/evil/")
    assert page.status_code == 200 and "localStorage" in page.text
    gateway, origin = httpx.URL(secured.url), httpx.URL(page.url)
    assert (origin.scheme, origin.host, origin.port) != (gateway.scheme, gateway.host, gateway.port)
    csp = page.headers["content-security-policy"]
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    # sandboxed with no allow-same-origin: an opaque origin, so no storage, cookie or response of any origin is its own
    assert directives["sandbox"].split() == policy.IFRAME_SANDBOX.split() and "allow-same-origin" not in csp
    # every load and connection stays on the preview origin ('self'): the gateway is named nowhere
    assert directives["connect-src"] == "'self'" and directives["form-action"] == "'self'"
    assert str(gateway.port) not in csp and "*" not in csp.replace("'unsafe-eval'", "")
    assert page.headers["referrer-policy"] == "no-referrer" and "set-cookie" not in page.headers
    # the preview origin is no way to the UI or the API, not even with the key in hand
    for path in ("/", "/assets/index.js", "/api/threads", f"/api/threads/{tid}/files", "/threads/search"):
        for method in ("GET", "POST"):
            got = browser.request(method, f"{link['origin']}{path}", headers=ANA, json={})
            assert got.status_code == 404 and "preview origin" in got.text, (method, path)


def test_the_page_cannot_call_the_api_as_the_user(secured, local) -> None:
    # with API keys: the key lives only in the UI's storage on the gateway's origin; a request
    # without it is refused, and CORS gives a page of the preview origin (or a sandboxed one, null) nothing
    tid, link = hostile_thread(secured, ANA)
    for origin in (link["origin"], "null"):
        for method, path in (("GET", f"/api/threads/{tid}/files"), ("POST", "/threads/search"), ("POST", "/threads")):
            got = browser.request(
                method, f"{secured.url}{path}", headers={"origin": origin, "content-type": "text/plain"}, content="{}"
            )
            assert got.status_code == 401, (origin, method, path, got.status_code)
            assert "access-control-allow-origin" not in got.headers
        preflight = browser.options(
            f"{secured.url}/api/threads/{tid}/files",
            headers={
                "origin": origin,
                "access-control-request-method": "GET",
                "access-control-request-headers": "x-api-key",
            },
        )
        assert "access-control-allow-origin" not in preflight.headers, preflight.headers
    # without API keys (one local user): the browser guard refuses the preview origin's and null-origin requests
    tid, link = hostile_thread(local, {})
    before = browser.post(f"{local.url}/threads/search", json={}, headers=CLIENT).json()
    for origin in (link["origin"], "null"):
        for method, path, body in (
            ("POST", "/threads", "{}"),
            ("POST", f"/threads/{tid}/runs/wait", "{}"),
            ("DELETE", f"/threads/{tid}", None),
        ):
            got = browser.request(
                method,
                f"{local.url}{path}",
                content=body,
                headers={"origin": origin, "content-type": "text/plain", "sec-fetch-site": "cross-site"},
            )
            assert got.status_code in (403, 421), (origin, method, path, got.status_code, got.text)
    assert browser.post(f"{local.url}/threads/search", json={}, headers=CLIENT).json() == before, (
        "nothing was created or deleted"
    )


def test_a_token_opens_its_own_thread_only_and_forged_or_expired_ones_nothing(secured) -> None:
    ana_tid, ana = hostile_thread(secured, ANA)
    bo_tid, bo = hostile_thread(secured, BO)
    page = "files/outputs/evil/index.html"
    assert browser.get(f"{ana['base_url']}/{page}").status_code == 200
    # the token of one thread on the path of another (both ways, another user's and the same user's)
    own_second, _ = hostile_thread(secured, ANA)
    for token, thread in ((ana["token"], bo_tid), (bo["token"], ana_tid), (ana["token"], own_second)):
        got = browser.get(f"{ana['origin']}/t/{token}/preview/{thread}/{page}")
        assert got.status_code == 403 and "another thread" in got.json()["detail"]
        assert "localStorage" not in got.text
    tokens: PreviewTokens = secured.app.state.preview_origin.tokens
    body, mac = ana["token"].split(".")
    payload = base64.urlsafe_b64decode(body + "==").decode()
    altered_payload = payload.replace(payload.split("\n")[2], str(int(time.time()) + 10**6))  # a longer life
    forged = {
        "expired": tokens.issue(ana_tid, user_id_for_key(KEY), now=time.time() - 10**5)[0],
        "other key": PreviewTokens(900).issue(ana_tid, None)[0],
        "altered expiry": base64.urlsafe_b64encode(altered_payload.encode()).decode().rstrip("=") + "." + mac,
        "no mac": body,
        "garbage": "x" * 600,
        "empty mac": body + ".",
    }
    for why, token in forged.items():
        got = browser.get(f"{ana['origin']}/t/{token}/preview/{ana_tid}/{page}")
        assert got.status_code == 403, (why, got.status_code)
        assert "localStorage" not in got.text
    # a user whose token is valid but who no longer owns the thread (deleted and made again by another) gets 404
    with httpx.Client(base_url=secured.url, timeout=30) as http:
        assert http.delete(f"/threads/{ana_tid}", headers=ANA).status_code == 204
        assert http.post("/threads", json={"thread_id": ana_tid}, headers=BO).status_code == 200
    assert browser.get(f"{ana['base_url']}/{page}").status_code == 404


def test_tokens_bind_thread_user_and_expiry() -> None:
    tokens = PreviewTokens(60, secret=b"k" * 32)
    token, expires = tokens.issue("t1", "ana", now=1000)
    assert expires == 1060
    grant = tokens.check(token, "t1", now=1059)
    assert (grant.thread_id, grant.user) == ("t1", "ana")
    with pytest.raises(InvalidToken, match="expired"):
        tokens.check(token, "t1", now=1061)
    with pytest.raises(InvalidToken, match="another thread"):
        tokens.check(token, "t2", now=1000)
    with pytest.raises(InvalidToken, match="not issued"):
        PreviewTokens(60, secret=b"j" * 32).check(token, "t1", now=1000)
    assert tokens.check(tokens.issue("t1", None, now=1000)[0], "t1", now=1000).user is None


def test_a_sandboxed_server_cannot_set_cookies_or_loosen_the_policy() -> None:
    relayed = policy.relayed_headers(
        [
            ("Set-Cookie", "session=1; Domain=127.0.0.1"),
            ("content-security-policy", "default-src *"),
            ("Access-Control-Allow-Origin", "http://127.0.0.1:2026"),
            ("Access-Control-Allow-Credentials", "true"),
            ("X-Frame-Options", "DENY"),
            ("content-type", "text/html"),
            ("Cache-Control", "max-age=9999"),
        ]
    )
    names = [k.lower() for k, _ in relayed]
    assert "set-cookie" not in names and "access-control-allow-credentials" not in names
    assert dict(relayed)["content-security-policy"] == policy.ORIGIN_CSP
    assert dict(relayed)["access-control-allow-origin"] == "*" and dict(relayed)["cache-control"] == "no-store"
    assert names.count("content-security-policy") == 1 and ("content-type", "text/html") in relayed
