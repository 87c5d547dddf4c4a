"""The everyday set: first requests a newcomer types into the web UI, judged on what they get.

Each request of ``benchmarks/data/everyday.yaml`` (questions that need no files or tools, and
requests with a deliverable: a chart, a file, a fix; in English and in Chinese) is typed into
the web UI in a new thread, in headless Chromium (Debian's, driven by ``playwright-core`` from
``web/node_modules``; ``everyday_ui.mjs``), against the gateway served in this process on a free
loopback port with the default configuration (as ``make run`` serves it) in a temporary home.
A request's files are uploaded through the page first, or placed in the thread's workspace. The
page's clock gives the time from the Enter that sent the request to the first agent text on
screen and to the end of the run (``--max-seconds`` each, default 600: then Stop); the page gives
the messages it shows, the folded "checked" lines and the run's outcome line. Then the thread is
judged (``everyday_judge.py``) from its files in the gateway's home and its state (langgraph-sdk):
delivered and correct for a deliverable (the checks of ``agent_tasks/checks.py``), direct for a
question, and for both whether a note of the harness showed as a conversation message.

``--model embedded`` (the default) is the embedded model, run by hand: it is slow (minutes a
request) and takes the machine's generation lock. ``--model scripted`` answers each request with
the canned replies written in the data file, so the pipeline itself is tested in a minute.

Prints one JSON line: ``{"model", "max_seconds", "requests": [{id, kind, language, delivered,
correct, direct, harness_note_in_conversation, first_text_s, total_s, error, outcome, why,
invented_urls, notes, checked, answer}], "totals": {...}}``. The requests were never used to
tune the harness and must not be (see benchmarks/README.md).

    python benchmarks/everyday.py [--only ID,ID] [--max-seconds 600] [--model embedded|scripted]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import mimetypes
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import everyday_judge as judge  # noqa: E402

REPO = HERE.parent
WEB = REPO / "web"
DATA = HERE / "data" / "everyday.yaml"
DRIVER = HERE / "everyday_ui.mjs"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
ANSWER_CHARS = 4000
"""The final answer is kept in the output up to this many characters."""


def load(path: Path = DATA, only: str | None = None) -> list[dict[str, Any]]:
    """The requests of the data file, or those of ``only`` (comma-separated ids) in the file's order."""
    requests = yaml.safe_load(path.read_text(encoding="utf-8"))["requests"]
    if not only:
        return requests
    wanted = [w.strip() for w in only.split(",") if w.strip()]
    unknown = sorted(set(wanted) - {r["id"] for r in requests})
    if unknown:
        raise SystemExit(f"--only: no request {', '.join(unknown)} in {path.name}")
    return [r for r in requests if r["id"] in wanted]


def scripted_model(requests: list[dict[str, Any]]) -> Any:
    """A canned model: each request's ``scripted`` replies in turn (a note of the harness gets
    the next one, the last is repeated), found by the request's text in the user's message."""
    from langchain_core.messages import BaseMessage

    from herdsman.middleware.turn import HARNESS_NAME
    from herdsman.models.scripted import ScriptedChatModel

    def respond(messages: list[BaseMessage]) -> Any:
        users = [i for i, m in enumerate(messages) if m.type == "human" and m.name != HARNESS_NAME]
        if not users:
            return "ok"
        asked = messages[users[-1]].text
        request = next((r for r in requests if r["text"] in asked), None)
        if request is None:
            return "ok"
        replies = request.get("scripted") or ["(no scripted reply)"]
        step = sum(m.type == "ai" for m in messages[users[-1]:])
        return replies[min(step, len(replies) - 1)]

    return ScriptedChatModel(respond=respond)


def serve(home: Path, model: Any, startup_seconds: float) -> tuple[str, Any, Any, threading.Thread]:
    """The gateway with the default configuration in ``home`` (``model`` replaces the embedded
    model when given) on a free loopback port, in a thread: its URL, app, server and thread."""
    import uvicorn

    from herdsman.config.schema import HerdsmanConfig
    from herdsman_gateway.app import create_app

    config = HerdsmanConfig.model_validate({"home": str(home)})
    app = create_app(config, model=model)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_seconds
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise SystemExit("the gateway did not start")
        time.sleep(0.05)
    return f"http://127.0.0.1:{sock.getsockname()[1]}", app, server, thread


async def prepare(url: str, app: Any, requests: list[dict[str, Any]]) -> dict[str, str]:
    """A thread for each request with workspace files, holding them (request id -> thread id)."""
    from langgraph_sdk import get_client

    client = get_client(url=url, api_key=None)
    threads: dict[str, str] = {}
    try:
        for request in requests:
            if not request.get("workspace"):
                continue
            thread_id = (await client.threads.create())["thread_id"]
            sandbox = app.state.gateway.sandbox.acquire(thread_id)
            for rel, text in request["workspace"].items():
                sandbox.write_text(f"/mnt/user-data/workspace/{rel}", text)
            threads[request["id"]] = thread_id
    finally:
        await client.aclose()
    return threads


def plan(url: str, requests: list[dict[str, Any]], threads: dict[str, str], max_seconds: float) -> dict[str, Any]:
    """What the browser driver does (see everyday_ui.mjs)."""
    def upload(name: str, text: str) -> dict[str, str]:
        mime = mimetypes.guess_type(name)[0] or "text/plain"
        return {"name": name, "mime": mime, "base64": base64.b64encode(text.encode()).decode()}

    return {
        "url": url,
        "web_package": str(WEB / "package.json"),
        "chromium": CHROMIUM,
        "max_seconds": max_seconds,
        "requests": [
            {"id": r["id"], "text": r["text"], "thread_id": threads.get(r["id"]),
             "uploads": [upload(n, t) for n, t in (r.get("uploads") or {}).items()]}
            for r in requests
        ],
    }


def drive(the_plan: dict[str, Any], work: Path) -> list[dict[str, Any]]:
    """Run the browser driver; what it measured of each request (progress goes to stderr)."""
    plan_file = work / "plan.json"
    plan_file.write_text(json.dumps(the_plan))
    budget = len(the_plan["requests"]) * (the_plan["max_seconds"] + 240) + 120
    out = subprocess.run(["node", str(DRIVER), str(plan_file)], stdout=subprocess.PIPE, text=True, timeout=budget,
                         cwd=REPO, check=False)
    seen = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 and not seen:
        raise SystemExit(f"the browser driver failed (exit {out.returncode})")
    return seen


async def judge_all(url: str, home: Path, requests: list[dict[str, Any]], measured: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each request's record: the page's measures, and the judge's verdicts on its thread."""
    from langgraph_sdk import get_client

    from herdsman.sandbox.paths import thread_dir

    by_id = {m["id"]: m for m in measured}
    client = get_client(url=url, api_key=None)
    records = []
    try:
        for request in requests:
            seen = by_id.get(request["id"]) or {"error": "the browser driver did not get to it"}
            thread_id = seen.get("thread_id")
            messages: list[dict[str, Any]] = []
            if thread_id:
                state = await client.threads.get_state(thread_id)
                messages = list((state.get("values") or {}).get("messages") or [])
            root = (thread_dir(home, thread_id) / "user-data").resolve() if thread_id else home / "none"
            records.append(record(request, seen, messages, root))
    finally:
        await client.aclose()
    return records


def record(request: dict[str, Any], seen: dict[str, Any], messages: list[dict[str, Any]], root: Path) -> dict[str, Any]:
    """One request's line of the output."""
    answer = judge.final_answer(messages)
    rules = judge.note_rules(messages)
    urls = judge.invented_urls(answer, request["text"], messages)
    why: list[str] = []
    if request["kind"] == "question":
        why = judge.direct_problems(request, answer, rules, urls)
        delivered, correct, direct = bool(answer), not why, not why
    else:
        delivered = judge.delivered(request, root)
        failed = judge.check_request(request["check"], root, answer)
        correct, direct = failed is None, None
        why = [failed] if failed else []
    visible = [m["text"] for m in seen.get("visible") or []]
    return {
        "id": request["id"],
        "kind": request["kind"],
        "language": request["language"],
        "delivered": delivered,
        "correct": correct,
        "direct": direct,
        "harness_note_in_conversation": judge.note_in_conversation(visible, messages),
        "first_text_s": seen.get("first_text_s"),
        "total_s": seen.get("total_s"),
        "error": seen.get("error"),
        "outcome": seen.get("outcome"),
        "why": why,
        "invented_urls": urls,
        "notes": rules,
        "checked": seen.get("checked") or [],
        "answer": answer[:ANSWER_CHARS],
    }


def preflight() -> None:
    """Stop early, saying what to do, when the UI is not built or no browser is there."""
    if not (WEB / "dist" / "index.html").is_file():
        raise SystemExit("web/dist is missing: run `make web` first")
    if not (WEB / "node_modules" / "playwright-core").is_dir():
        raise SystemExit("web/node_modules has no playwright-core: run `make web` first")
    if not shutil.which("node"):
        raise SystemExit("node is not installed")
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"no Chromium at {CHROMIUM}: apt-get install chromium")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="request ids, comma-separated")
    parser.add_argument("--max-seconds", type=float, default=600, help="per request, before the run is stopped")
    parser.add_argument("--model", choices=("embedded", "scripted"), default="embedded",
                        help="the embedded model (default config), or canned replies that test the pipeline")
    parser.add_argument("--data", type=Path, default=DATA, help="the request set (YAML)")
    parser.add_argument("--home", type=Path, help="the gateway's home, kept afterwards (default: a temporary one)")
    args = parser.parse_args()
    preflight()
    requests = load(args.data, args.only)
    model = scripted_model(requests) if args.model == "scripted" else None
    with tempfile.TemporaryDirectory() as tmp:
        home = (args.home or Path(tmp) / "home").resolve()
        url, app, server, thread = serve(home, model, startup_seconds=60 if model else 1800)
        try:
            threads = asyncio.run(prepare(url, app, requests))
            measured = drive(plan(url, requests, threads, args.max_seconds), Path(tmp))
            records = asyncio.run(judge_all(url, home, requests, measured))
        finally:
            server.should_exit = True
            thread.join(30)
    print(json.dumps({"model": args.model, "max_seconds": args.max_seconds, "requests": records,
                      "totals": judge.totals(records)}, ensure_ascii=False))


if __name__ == "__main__":
    main()
