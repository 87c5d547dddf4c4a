"""The web-page-builder skill serves what it builds: driven through the gateway by the scripted
model with ``/web-page-builder``, it writes a site, checks it, serves it in the background as its
SKILL.md says, and the page is fetched through the gateway's preview routes, live from the
server in the sandbox and as a static output."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from herdsman.models.scripted import ScriptedChatModel
from herdsman.sandbox.bwrap import bwrap_status
from tests.gateway.gateway_support import RunningGateway, running_gateway
from tests.gateway.preview_support import ANA, SITE, ask, browser
from tests.support import REPO, make_config

pytestmark = [
    pytest.mark.bwrap,
    pytest.mark.skipif(not bwrap_status().available, reason=f"bubblewrap unusable: {bwrap_status().reason}"),
]
SKILL = REPO / "skills" / "public" / "web-page-builder" / "SKILL.md"
PAGE = (
    '<!doctype html><html><head><title>Counter</title><meta name="viewport" content="width=device-width, initial-scale=1">'
    '<link rel="stylesheet" href="assets/style.css"></head><body><main><h1>Counter</h1>'
    '<button id="b">0</button><script src="assets/app.js"></script></main></body></html>'
)


def call(name: str, **args: Any) -> dict:
    return {"tool_calls": [{"name": name, "args": args}]}


def serve_step() -> str:
    """The serving command exactly as the skill's SKILL.md writes it."""
    text = SKILL.read_text()
    start = text.index("`cd /mnt/user-data/outputs/site && exec python3 -m http.server")
    return text[start + 1 : text.index("`", start + 1)]


@pytest.fixture
def model() -> ScriptedChatModel:
    return ScriptedChatModel(
        responses=[
            call("write_file", path=f"{SITE}/index.html", content=PAGE),
            call("write_file", path=f"{SITE}/assets/style.css", content="body{font-family:sans-serif}"),
            call("write_file", path=f"{SITE}/assets/app.js", content="let n=0;b.onclick=()=>b.textContent=++n"),
            call("bash", command=f"python3 /mnt/skills/public/web-page-builder/scripts/check_site.py {SITE}"),
            call("bash", command=serve_step(), background=True),
            "The site is outputs/site/index.html; open the Preview tab (port 8000) to see it live.",
        ]
    )


@pytest.fixture
def served(tmp_path: Path, model: ScriptedChatModel) -> Iterator[RunningGateway]:
    config = make_config(
        tmp_path / "home",
        skills={"path": str(REPO / "skills")},
        sandbox={"isolation": "bwrap"},
        gateway={"api_keys": ["key-ana"], "preview_origin": {"port": 0}},
    )
    with running_gateway(config, model=model) as gateway:
        yield gateway


def test_the_site_it_builds_is_served_and_fetched_through_the_preview_routes(served, model) -> None:
    with httpx.Client(base_url=served.url, timeout=60) as http:
        tid = http.post("/threads", json={}, headers=ANA).json()["thread_id"]
        answer = ask(http, tid, "/web-page-builder a one-page site with a counter button")
        assert "Preview tab" in answer
        system = model.calls[0].messages[0].text
        assert '<active_skill name="web-page-builder"' in system and "background=true" in system
        results = [m for m in model.calls[-1].messages if m.type == "tool"]
        assert results[3].text.strip() == "OK", results[3].text
        assert "listening on port 8000" in results[4].text, results[4].text

        base = http.post(f"/api/threads/{tid}/preview/token", headers=ANA).json()["base_url"]
        live = browser.get(f"{base}/8000/")
        assert live.status_code == 200 and live.text == PAGE, live.text
        assert "++n" in browser.get(f"{base}/8000/assets/app.js").text
        static = http.get(f"/api/threads/{tid}/preview/files/outputs/site/index.html", headers=ANA)
        assert static.status_code == 200 and "<h1>Counter</h1>" in static.text
        assert http.delete(f"/threads/{tid}", headers=ANA).status_code == 204


@pytest.mark.parametrize("rounds", [2, 1])
def test_a_site_built_and_checked_but_not_served_is_served_by_the_harness(tmp_path: Path, rounds: int) -> None:
    """The model wrote and checked the site and answered without starting the server its skill
    names (as the embedded model did): the skill declares ``serve: 8000``, so the completion check
    starts that server in the background for it, and the page is live through the preview route;
    with one round of the check spent (on a reply that wrote the page and stopped), the server is
    still started: the harness's own certain step, one round more."""
    page = PAGE.replace('<link rel="stylesheet" href="assets/style.css">', "").replace(
        '<script src="assets/app.js"></script>', "<script>let n=0;b.onclick=()=>b.textContent=++n</script>"
    )
    model = ScriptedChatModel(
        responses=[
            call("write_file", path=f"{SITE}/index.html", content=page),
            call("bash", command=f"python3 /mnt/skills/public/web-page-builder/scripts/check_site.py {SITE}"),
            "The site is ready: outputs/site/index.html.",
            "I built a counter page with a button; you can try it now.",
        ]
    )
    config = make_config(
        tmp_path / "home",
        skills={"path": str(REPO / "skills")},
        sandbox={"isolation": "bwrap"},
        gateway={"api_keys": ["key-ana"], "preview_origin": {"port": 0}},
        lead={"verify_rounds": rounds, "run_shown_code": "on"},
    )
    with running_gateway(config, model=model) as served, httpx.Client(base_url=served.url, timeout=60) as http:
        tid = http.post("/threads", json={}, headers=ANA).json()["thread_id"]
        answer = ask(http, tid, "/web-page-builder a one-page site with a counter button")
        messages = model.calls[-1].messages
        assert answer == "I built a counter page with a button; you can try it now."
        started = [m for m in messages if m.type == "tool" and "listening on port 8000" in m.text]
        assert started, [m.text[:200] for m in messages if m.type == "tool"]
        assert [m for m in messages if m.type == "tool"][1].text.strip() == "OK"  # checked, then served
        base = http.post(f"/api/threads/{tid}/preview/token", headers=ANA).json()["base_url"]
        live = browser.get(f"{base}/8000/")
        assert live.status_code == 200 and live.text == page, live.text
        assert http.delete(f"/threads/{tid}", headers=ANA).status_code == 204
