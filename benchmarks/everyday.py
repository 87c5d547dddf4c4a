"""The everyday set: first requests a newcomer types into the web UI, judged on what they get.

Each request of ``benchmarks/data/everyday.yaml`` (questions that need no files or tools, and
requests with a deliverable: a chart, a file, a fix; in English and in Chinese) is typed into
the web UI in a new thread, in headless Chromium (Debian's, driven by ``playwright-core`` from
``web/node_modules``; ``everyday_ui.mjs``), against the gateway served in this process on a free
loopback port with the default configuration (as ``make run`` serves it: the built-in defaults,
no config.yaml read) in a temporary home.
A request's files are uploaded through the page first, or placed in the thread's workspace. The
page's clock gives the time from the Enter that sent the request to the first agent text on
screen and to the end of the run (``--max-seconds`` each, default 600: then Stop); the page gives
the messages it shows, the folded "checked" lines and the run's outcome line. Then the thread is
judged from its files in the gateway's home and its state (read with langgraph-sdk):

- a deliverable request is *delivered* when each of its ``deliver`` globs (under the thread's
  user-data folder) matches a file that is new or changed, and *correct* when its check passes
  (the checks of ``agent_tasks/checks.py``; a ``path`` may be a glob, passing when one matching
  file passes);
- a question is *direct* when no note of the harness asked for tools or files (the rule ids of
  :data:`ASKED_FOR_TOOLS`, read from the notes' ``herdsman_findings``), and the final answer is
  there, in the request's language (mostly CJK characters for a Chinese request, mostly Latin words
  for an English one), at least ``min_length`` long (words, or CJK characters), and names no URL that
  neither the request nor a tool result holds; its ``delivered`` is an answer there, its
  ``correct`` is ``direct``;
- a note of the harness is *in the conversation* when a message the page shows outside the folded
  "checked" lines holds a sentence the harness wrote (one the conversation before the note does
  not hold, so what a note quotes of the agent's own words does not count), or a raw
  ``[harness ...]`` prefix.

Counting words splits on Latin letters: English and the languages written like it; a Chinese
request's length is counted in CJK characters.

``--model embedded`` (the default) is the embedded model, run by hand: it is slow (minutes a
request) and takes the machine's generation lock. ``--model scripted`` answers each request with
the canned replies written in the data file, so the pipeline itself is tested in a minute.

With the embedded model one throwaway run through the API loads the model first (``warmup_s``).

Prints one JSON line: ``{"model", "max_seconds", "warmup_s", "requests": [{id, kind, language, delivered,
correct, direct, harness_note_in_conversation, note_shown, first_text_s, total_s, error, outcome, why,
invented_urls, notes, checked, malformed_calls, page_errors, answer}], "totals": {...}}``. The requests were never used to
tune the harness and must not be (see benchmarks/README.md).

    python benchmarks/everyday.py [--only ID,ID] [--max-seconds 600] [--model embedded|scripted]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import glob
import json
import mimetypes
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "agent_tasks"))

from checks import check  # noqa: E402

REPO = HERE.parent
WEB = REPO / "web"
DATA = HERE / "data" / "everyday.yaml"
DRIVER = HERE / "everyday_ui.mjs"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
ASSISTANT = "lead_agent"
"""The assistant the web UI runs."""
ANSWER_CHARS = 4000
"""The final answer is kept in the output up to this many characters."""


# ---- the judge: pure functions over a thread's messages, its files and what the page showed ----

ASKED_FOR_TOOLS = ("tool.none_used*", "path.missing", "file.missing")
"""Rules whose notes ask the agent to use tools or make a file, wrong for a question that needs none
(``*``: any rule whose id starts so)."""

CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
WORD = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)?")
URL = re.compile(r"https?://[^\s<>()\[\]{}\"'`，。、）]+")
RAW_NOTE = re.compile(r"\[harness(?: check| review| plan)?\]|\[plan\] Step \d")
SENTENCE = re.compile(r"(?<=[.!?:])\s+|\n+")
MARKUP = re.compile(r"[*_`#>|]+")
MIN_SENTENCE = 30
"""A note's sentence shorter than this is not looked for in the conversation (too likely by chance)."""


def text_of(message: Mapping[str, Any]) -> str:
    """The text of a message's content (a string, or a list of parts) as LangGraph's JSON holds it."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p if isinstance(p, str) else str(p.get("text", "")) for p in content if isinstance(p, (str, dict))
        )
    return ""


def is_note(message: Mapping[str, Any]) -> bool:
    """Whether the message is a note of the harness to the model."""
    return message.get("type") == "human" and message.get("name") == "harness"


def note_rules(messages: Iterable[Mapping[str, Any]]) -> list[str]:
    """The rule ids of every finding the harness's notes carry, in order."""
    rules = []
    for message in messages:
        if is_note(message):
            for finding in (message.get("additional_kwargs") or {}).get("herdsman_findings") or []:
                if isinstance(finding, Mapping) and isinstance(finding.get("rule"), str):
                    rules.append(finding["rule"])
    return rules


def final_answer(messages: Sequence[Mapping[str, Any]]) -> str:
    """The run's final answer: the last message when it is the agent's text, else nothing."""
    if not messages:
        return ""
    last = messages[-1]
    if last.get("type") != "ai" or last.get("tool_calls"):
        return ""
    return text_of(last).strip()


def share_cjk(text: str) -> float:
    """The share of CJK characters among the CJK characters and Latin words of ``text`` (a CJK
    character weighs about what a word does: a Chinese sentence naming ``outputs/total.txt`` is
    still Chinese); 0 for neither."""
    cjk, latin = len(CJK.findall(text)), len(WORD.findall(text))
    return cjk / (cjk + latin) if cjk + latin else 0.0


def length(text: str, language: str) -> int:
    """Words (Latin script) or CJK characters (``zh``)."""
    return len(CJK.findall(text)) if language == "zh" else len(WORD.findall(text))


def invented_urls(answer: str, request: str, messages: Iterable[Mapping[str, Any]]) -> list[str]:
    """URLs of the answer that neither the request nor any tool result holds."""
    known = request + "\n" + "\n".join(text_of(m) for m in messages if m.get("type") == "tool")
    found = [u.rstrip(".,;:!?") for u in URL.findall(answer)]
    return sorted({u for u in found if u not in known})


def asks_for_tools(rule: str) -> bool:
    """Whether a note of ``rule`` asks the agent to use tools or make a file (:data:`ASKED_FOR_TOOLS`)."""
    return any(rule.startswith(r[:-1]) if r.endswith("*") else rule == r for r in ASKED_FOR_TOOLS)


def direct_problems(request: Mapping[str, Any], answer: str, rules: Sequence[str], urls: Sequence[str]) -> list[str]:
    """Why a question's answer is not direct (empty when it is)."""
    problems = [
        f"the harness asked for tools or files ({rule})" for rule in dict.fromkeys(rules) if asks_for_tools(rule)
    ]
    if not answer.strip():
        return [*problems, "no final answer"]
    language = request["language"]
    cjk = share_cjk(answer)
    if language == "zh" and cjk < 0.5:
        problems.append(f"not in Chinese (CJK share {cjk:.2f})")
    if language != "zh" and cjk > 0.1:
        problems.append(f"not in the request's language (CJK share {cjk:.2f})")
    size, wanted = length(answer, language), int(request.get("min_length") or 1)
    if size < wanted:
        problems.append(f"too short: {size} {'characters' if language == 'zh' else 'words'}, at least {wanted} wanted")
    problems += [f"a URL no tool result or the request holds: {u}" for u in urls]
    return problems


def _plain(text: str) -> str:
    return " ".join(MARKUP.sub("", text).split())


def harness_sentences(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """The sentences the harness wrote in its notes: long enough, and not in any message before the
    note (what a note quotes of the request, the agent's answer or a tool result is not its own)."""
    out: list[str] = []
    for i, message in enumerate(messages):
        if not is_note(message):
            continue
        before = _plain("\n".join(text_of(m) for m in messages[:i]))
        for sentence in SENTENCE.split(RAW_NOTE.sub("", text_of(message))):
            plain = _plain(sentence.lstrip("- "))
            if len(plain) >= MIN_SENTENCE and plain not in before and plain not in out:
                out.append(plain)
    return out


def note_in_conversation(visible: Iterable[str], messages: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a message the page shows (outside the folded lines) holds a note of the harness."""
    return note_shown(visible, messages) is not None


def note_shown(visible: Iterable[str], messages: Sequence[Mapping[str, Any]]) -> str | None:
    """The start of the first message the page shows (outside the folded lines) that holds a note
    of the harness, with the note's sentence it holds; None when there is none."""
    sentences = harness_sentences(messages)
    for shown in visible:
        raw = RAW_NOTE.search(shown)
        plain = _plain(shown)
        held = raw.group(0) if raw else next((s for s in sentences if s in plain), None)
        if held is not None:
            return f"{shown[:300]} [holds: {held[:200]}]"
    return None


def _files(root: Path, pattern: str) -> list[Path]:
    return sorted(p for p in root.glob(pattern) if p.is_file())


def is_delivered(request: Mapping[str, Any], root: Path) -> bool:
    """Each ``deliver`` glob matches a file that is new or changed (not a set-up file as given)."""
    given = {f"workspace/{k}": v for k, v in (request.get("workspace") or {}).items()}
    given |= {f"uploads/{k}": v for k, v in (request.get("uploads") or {}).items()}
    for pattern in request.get("deliver") or []:
        fresh = [
            p
            for p in _files(root, pattern)
            if given.get(p.relative_to(root).as_posix()) != p.read_text(errors="replace")
        ]
        if not fresh:
            return False
    return True


def check_request(spec: Sequence[Mapping[str, Any]], root: Path, answer: str) -> str | None:
    """None when every check of ``spec`` passes on ``root`` and ``answer``, else why not. A check
    whose ``path`` is a glob passes when one of the files it matches passes."""
    for item in spec:
        path = item.get("path")
        if not isinstance(path, str) or not glob.has_magic(path):
            why = check(dict(item), root, answer)
        else:
            candidates = _files(root, path)
            if not candidates:
                why = f"no file matches {path}"
            else:
                tried = [check({**item, "path": p.relative_to(root).as_posix()}, root, answer) for p in candidates]
                why = None if None in tried else tried[0]
        if why is not None:
            return why
    return None


def _median(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.median(known), 1) if known else None


def totals(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The figures over every request: direct questions, correct deliverables, notes shown, medians."""
    questions = [r for r in records if r["kind"] == "question"]
    deliverables = [r for r in records if r["kind"] == "deliverable"]
    outcomes: dict[str, int] = {}
    for r in records:
        outcomes[r.get("outcome") or "none"] = outcomes.get(r.get("outcome") or "none", 0) + 1
    return {
        "requests": len(records),
        "questions_direct": f"{sum(bool(r['direct']) for r in questions)}/{len(questions)}",
        "deliverables_delivered": f"{sum(bool(r['delivered']) for r in deliverables)}/{len(deliverables)}",
        "deliverables_correct": f"{sum(bool(r['correct']) for r in deliverables)}/{len(deliverables)}",
        "deliverable_correct_share": round(sum(bool(r["correct"]) for r in deliverables) / len(deliverables), 3)
        if deliverables
        else None,
        "harness_notes_in_conversation": sum(bool(r["harness_note_in_conversation"]) for r in records),
        "invented_urls": sum(bool(r.get("invented_urls")) for r in records),
        "errors": sum(bool(r["error"]) for r in records),
        "outcomes": outcomes,
        "median_first_text_s": _median(r["first_text_s"] for r in records),
        "median_total_s": _median(r["total_s"] for r in records),
        "median_total_s_questions": _median(r["total_s"] for r in questions),
        "median_total_s_deliverables": _median(r["total_s"] for r in deliverables),
    }


# ---- the run ---------------------------------------------------------------------------------


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
    the next one, the last is repeated), found by the request's text in the user's message; the
    harness's pick of a skill (``skills.ask_model``) is answered "none"."""
    from langchain_core.messages import BaseMessage

    from herdsman.models.scripted import ScriptedChatModel
    from herdsman.turns.skill_pick import NO_SKILL, PICK_TOOL, is_pick_call
    from herdsman.turns.turn import HARNESS_NAME

    def respond(messages: list[BaseMessage]) -> Any:
        if is_pick_call(messages):
            return {"tool_calls": [{"name": PICK_TOOL, "args": {"skill": NO_SKILL}, "id": "pick"}]}
        users = [i for i, m in enumerate(messages) if m.type == "human" and m.name != HARNESS_NAME]
        if not users:
            return "ok"
        asked = messages[users[-1]].text
        request = next((r for r in requests if r["text"] in asked), None)
        if request is None:
            return "ok"
        replies = request.get("scripted") or ["(no scripted reply)"]
        step = sum(m.type == "ai" for m in messages[users[-1] :])
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


WARMUP = "Hello!"
"""Sent once through the API before the measured requests with the embedded model: the model is
loaded on its first call, and that load belongs to starting the gateway, not to a request."""


async def prepare(
    url: str, app: Any, requests: list[dict[str, Any]], warm_up: bool
) -> tuple[dict[str, str], float | None]:
    """A thread for each request with workspace files, holding them (request id -> thread id), and
    with ``warm_up`` the seconds of one throwaway run (:data:`WARMUP`) that loads the model."""
    from langgraph_sdk import get_client

    client = get_client(url=url, api_key=None)
    threads: dict[str, str] = {}
    warmup_s = None
    try:
        if warm_up:
            started = time.monotonic()
            thread = await client.threads.create()
            await client.runs.wait(
                thread["thread_id"], ASSISTANT, input={"messages": [{"type": "human", "content": WARMUP}]}
            )
            warmup_s = round(time.monotonic() - started, 1)
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
    return threads, warmup_s


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
            {
                "id": r["id"],
                "text": r["text"],
                "thread_id": threads.get(r["id"]),
                "uploads": [upload(n, t) for n, t in (r.get("uploads") or {}).items()],
            }
            for r in requests
        ],
    }


def drive(the_plan: dict[str, Any], work: Path) -> list[dict[str, Any]]:
    """Run the browser driver; what it measured of each request (progress goes to stderr)."""
    plan_file = work / "plan.json"
    plan_file.write_text(json.dumps(the_plan))
    budget = len(the_plan["requests"]) * (the_plan["max_seconds"] + 240) + 120
    out = subprocess.run(
        ["node", str(DRIVER), str(plan_file)], stdout=subprocess.PIPE, text=True, timeout=budget, cwd=REPO, check=False
    )
    seen = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 and not seen:
        raise SystemExit(f"the browser driver failed (exit {out.returncode})")
    return seen


async def judge_all(
    url: str, home: Path, requests: list[dict[str, Any]], measured: list[dict[str, Any]]
) -> list[dict[str, Any]]:
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
    answer = final_answer(messages)
    rules = note_rules(messages)
    urls = invented_urls(answer, request["text"], messages)
    why: list[str] = []
    if request["kind"] == "question":
        why = direct_problems(request, answer, rules, urls)
        delivered, correct, direct = bool(answer), not why, not why
    else:
        delivered = is_delivered(request, root)
        failed = check_request(request["check"], root, answer)
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
        "harness_note_in_conversation": note_in_conversation(visible, messages),
        "note_shown": note_shown(visible, messages),
        "first_text_s": seen.get("first_text_s"),
        "total_s": seen.get("total_s"),
        "error": seen.get("error"),
        "outcome": seen.get("outcome"),
        "why": why,
        "invented_urls": urls,
        "notes": rules,
        "checked": seen.get("checked") or [],
        "malformed_calls": seen.get("malformed") or 0,
        "page_errors": seen.get("errors") or [],
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
    parser.add_argument(
        "--model",
        choices=("embedded", "scripted"),
        default="embedded",
        help="the embedded model (default config), or canned replies that test the pipeline",
    )
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
            threads, warmup_s = asyncio.run(prepare(url, app, requests, warm_up=model is None))
            measured = drive(plan(url, requests, threads, args.max_seconds), Path(tmp))
            records = asyncio.run(judge_all(url, home, requests, measured))
        finally:
            server.should_exit = True
            thread.join(30)
    print(
        json.dumps(
            {
                "model": args.model,
                "max_seconds": args.max_seconds,
                "warmup_s": warmup_s,
                "requests": records,
                "totals": totals(records),
            },
            ensure_ascii=False,
        )
    )


if __name__ == "__main__":
    main()
