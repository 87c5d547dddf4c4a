"""Red team: what the model writes, served back by the gateway and counted in its metrics.

Findings (#30, item 7):

- Files the agent wrote were served inline with the type their name implies: an ``.html`` or
  ``.svg`` output opened from ``/api/threads/{id}/artifacts/...`` ran its scripts as a page of the
  gateway's own origin (reading every thread, starting runs). Now every file (and every archive)
  carries ``X-Content-Type-Options: nosniff`` and a sandboxing Content-Security-Policy (no script,
  an origin of its own), and active types are attachments unless ``?preview=true`` asks for a
  sandboxed preview.
- ``herdsman_tool_calls_total{tool}`` took the tool name the model wrote: every invented name
  made a new series, kept forever, so a model (or a prompt injection) could grow ``/metrics`` and
  the registry without bound. Now a name of the agent's tools is kept, anything else is ``other``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from herdsman.models.scripted import ScriptedChatModel
from tests.gateway.gateway_support import RunningGateway, running_gateway, user_message
from tests.support import make_config

PAGE = "<html><body><script>fetch('/threads/search',{method:'POST'})</script></body></html>"
SVG = "<svg xmlns='http://www.w3.org/2000/svg' onload='alert(document.domain)'/>"
FILES = {"page.html": PAGE, "logo.svg": SVG, "feed.xml": "<rss/>", "app.js": "alert(1)", "notes.txt": "plain notes"}
INVENTED = 1000


def _write(name: str, content: str) -> dict:
    return {"name": "write_file", "args": {"path": f"/mnt/user-data/outputs/{name}", "content": content}}


@pytest.fixture
def written(tmp_path: Path) -> Iterator[tuple[RunningGateway, str]]:
    """A gateway whose agent wrote :data:`FILES` to a thread's outputs, and that thread's id."""
    model = ScriptedChatModel(responses=[{"tool_calls": [_write(n, c) for n, c in FILES.items()]}, "written"])
    with running_gateway(make_config(tmp_path / "home"), model=model) as served:
        yield served, _one_run(served, "write them")


def _one_run(served: RunningGateway, text: str) -> str:
    """A new thread on ``served`` after one run of ``text`` to its end: its id."""
    with httpx.Client(base_url=served.url, timeout=120) as http:
        tid = http.post("/threads", json={}).json()["thread_id"]
        done = http.post(f"/threads/{tid}/runs/wait", json={"assistant_id": "lead_agent", "input": user_message(text)})
        assert done.status_code == 200, done.text
    return tid


def _sandboxed(response: httpx.Response) -> None:
    assert response.status_code == 200, response.text
    assert response.headers["x-content-type-options"] == "nosniff"
    policy = [p.strip() for p in response.headers["content-security-policy"].split(";")]
    assert "sandbox" in policy and "default-src 'none'" in policy, policy


def test_active_files_are_sandboxed_attachments(written) -> None:
    served, tid = written
    with httpx.Client(base_url=served.url, timeout=30) as http:
        for name in ("page.html", "logo.svg", "feed.xml", "app.js"):
            got = http.get(f"/api/threads/{tid}/artifacts/outputs/{name}")
            _sandboxed(got)
            assert got.headers["content-disposition"].startswith("attachment"), (name, got.headers)
            assert got.text == FILES[name]
        preview = http.get(f"/api/threads/{tid}/artifacts/outputs/page.html", params={"preview": "true"})
        _sandboxed(preview)  # shown, but still without script and without the gateway's origin
        assert preview.headers["content-disposition"].startswith("inline")
        notes = http.get(f"/api/threads/{tid}/artifacts/outputs/notes.txt")
        _sandboxed(notes)
        assert notes.headers["content-disposition"].startswith("inline")
        saved = http.get(f"/api/threads/{tid}/artifacts/outputs/notes.txt", params={"download": "true"})
        assert saved.headers["content-disposition"].startswith("attachment")
        _sandboxed(http.get(f"/api/threads/{tid}/archive", params={"path": "outputs"}))


def test_invented_tool_names_do_not_grow_the_metrics(tmp_path: Path) -> None:
    calls = [{"name": f"made_up_tool_{i}", "args": {}} for i in range(INVENTED)]
    model = ScriptedChatModel(responses=[{"tool_calls": calls}, {"tool_calls": [_write("a.txt", "x")]}, "done"])
    with running_gateway(make_config(tmp_path / "home"), model=model) as served:
        _one_run(served, "call them all")
        text = httpx.get(f"{served.url}/metrics").text
    series = re.findall(r"^herdsman_tool_calls_total\{(.*)\} (\S+)$", text, re.MULTILINE)
    labels = {dict(re.findall(r'(\w+)="([^"]*)"', s))["tool"]: float(v) for s, v in series}
    assert "made_up_tool_0" not in labels and len(series) <= 4, sorted(labels)[:10]
    assert labels.get("other") == INVENTED, labels
    assert labels.get("write_file") == 1, labels  # a real tool keeps its name
