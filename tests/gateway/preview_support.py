"""What the port-preview tests of every sandbox provider share: a browser-like client, two users,
a run waited for, and the check that a thread's server dies with the thread."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from herdsman.sandbox.process import marked_pids

browser = httpx.Client(timeout=60)  # what a browser sends: no key, no base URL (a loaded machine is slow)
ANA, BO = {"x-api-key": "key-ana"}, {"x-api-key": "key-bo"}
SITE = "/mnt/user-data/outputs/site"


def ask(http: httpx.Client, tid: str, text: str) -> str:
    """Run the agent on ``text`` in ana's thread ``tid``; its last message."""
    got = http.post(
        f"/threads/{tid}/runs/wait",
        headers=ANA,
        json={"assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": text}]}},
    )
    assert got.status_code == 200, got.text
    return got.json()["messages"][-1]["content"]


def assert_gone_with_thread(http: httpx.Client, tid: str, job: Any, page_url: str) -> None:
    """Deleting ana's thread ``tid`` stops the background ``job`` (no process of it is left) and
    the helper in its network namespace, and its preview at ``page_url`` answers 404."""
    assert marked_pids(job.run_id), "the server runs"
    helper = job.forwarder_pid
    assert helper is not None and Path(f"/proc/{helper}").exists()
    assert http.delete(f"/threads/{tid}", headers=ANA).status_code == 204
    assert not job.running and not marked_pids(job.run_id), "the server died with its thread"
    assert not Path(f"/proc/{helper}").exists(), "and so did the helper in its namespace"
    assert browser.get(page_url).status_code == 404


def thread_with_site(http: httpx.Client, gateway: Any) -> tuple[str, Any]:
    """A new thread of ana's, and its sandbox, with a page and its script under outputs/site."""
    tid = http.post("/threads", json={}, headers=ANA).json()["thread_id"]
    sandbox = gateway.app.state.gateway.sandbox.acquire(tid)
    sandbox.write_text(f"{SITE}/index.html", "<h1>Counter</h1><script src='app.js'></script>")
    sandbox.write_text(f"{SITE}/app.js", "let n = 0")
    return tid, sandbox


def server_agent(serve: Callable[[str], str]) -> Callable[[list[Any]], Any]:
    """A scripted agent: ``serve PORT`` runs ``serve(PORT)`` with bash in the background,
    ``background CMD`` runs CMD so, ``run CMD`` runs CMD; a tool result is echoed as the answer."""

    def respond(messages: list[Any]) -> Any:
        last = messages[-1]
        if last.type == "tool":
            return f"done: {last.text}"
        verb, *rest = last.text.split()
        command = serve(rest[0]) if verb == "serve" else " ".join(rest)
        args = {"command": command, "background": True} if verb in ("serve", "background") else {"command": command}
        return {"tool_calls": [{"name": "bash", "args": args}]}

    return respond
