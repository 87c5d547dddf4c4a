"""Fairness: user B's latencies while user A's turns run many parallel commands.

Starts a gateway in this process (two API keys, memory checkpointer, a scripted agent). B's file
listing, download, upload and a plain chat run, sent together, are timed with the gateway idle
(after one round to warm it up); then user A starts turns whose replies each hold ``--fan-out``
parallel ``sleep --sleep`` commands (enough turns to fill the ``min(32, cpus + 4)`` threads of
asyncio's default pool), and once A's commands run, B's four requests are timed again. A's runs
are cancelled at the end. Prints one JSON line::

    {"fan_out": 8, "turns": 1, "sleep_s": 30, "a_commands_running": 4,
     "idle_chat_ms": ..., "idle_download_ms": ..., "idle_listing_ms": ..., "idle_upload_ms": ...,
     "attack_chat_ms": ..., "attack_download_ms": ..., "attack_listing_ms": ..., "attack_upload_ms": ...}

Target: B's ``attack_*`` figures close to its ``idle_*`` ones, far below ``sleep_s``. When every
blocking call shared the default pool (2 cores: 6 threads, 6 of A's commands running), each
``attack_*`` figure was about ``sleep_s``: 29.4-29.5 s of 30; with the pools, 16-82 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import socket
import tempfile
import threading
import time
from pathlib import Path


def make_respond(fan_out: int, sleep: int):
    """A scripted agent: ``fan out`` gets ``fan_out`` parallel ``sleep`` commands, anything else an echo."""

    def respond(messages):
        last = messages[-1]
        if last.type == "human" and last.text.startswith("fan out"):
            return {"tool_calls": [{"name": "bash", "args": {"command": f"sleep {sleep}"}} for _ in range(fan_out)]}
        return "done" if last.type == "tool" else f"echo: {last.text}"

    return respond


def sleeping(sleep: int) -> int:
    """How many ``sleep <sleep>`` processes are alive."""
    wanted = [b"sleep", str(sleep).encode()]
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                count += (entry / "cmdline").read_bytes().split(b"\0")[:2] == wanted
            except OSError:
                continue
    return count


def serve(home: str, fan_out: int, sleep: int):
    """A gateway served by uvicorn in a thread; (url, server, thread)."""
    import uvicorn
    import yaml

    from herdsman.config import parse_config
    from herdsman.models.scripted import ScriptedChatModel
    from herdsman_gateway.app import create_app

    config = parse_config(
        yaml.safe_dump(
            {
                "home": home,
                "checkpointer": {"type": "memory"},
                "lead": {"model_retries": 0, "verify_rounds": 0},
                "local_model": {"profile": "standard"},
                "title": {"enabled": False},
                "logging": {"level": "ERROR"},
                "gateway": {"api_keys": ["key-a", "key-b"]},
                "sandbox": {"allow_unisolated_bash": True, "command_timeout_seconds": sleep + 60},
            }
        ),
        env={},
    )
    app = create_app(config, model=ScriptedChatModel(respond=make_respond(fan_out, sleep)))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="on", timeout_graceful_shutdown=3))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server, thread


async def b_latencies(http, b, thread_id: str, tag: str) -> dict[str, float]:
    """Milliseconds of B's listing, download, upload and plain chat run, sent together."""
    from herdsman_gateway.routes.uploads import ROUTE

    base = f"/api/threads/{thread_id}"
    out: dict[str, float] = {}

    async def timed(name, make):
        start = time.perf_counter()
        result = await make()
        out[f"{tag}_{name}_ms"] = round((time.perf_counter() - start) * 1000, 1)
        return result

    upload = ROUTE.format(thread_id=thread_id)
    answers = await asyncio.gather(
        timed("listing", lambda: http.get(f"{base}/files", params={"path": "uploads"})),
        timed("download", lambda: http.get(f"{base}/artifacts/mnt/user-data/uploads/notes.txt")),
        timed("upload", lambda: http.post(upload, files=[("files", (f"{tag}.txt", b"x", "text/plain"))])),
        timed(
            "chat",
            lambda: b.runs.wait(thread_id, "lead_agent", input={"messages": [{"role": "user", "content": "hi"}]}),
        ),
    )
    for answer in answers[:3]:
        answer.raise_for_status()
    return dict(sorted(out.items()))


async def measure(url: str, fan_out: int, sleep: int) -> dict:
    """The figures (see the module docstring)."""
    import httpx
    from langgraph_sdk import get_client

    a, b = get_client(url=url, api_key="key-a"), get_client(url=url, api_key="key-b")
    http = httpx.AsyncClient(base_url=url, headers={"x-api-key": "key-b"}, timeout=sleep * 4 + 60)
    turns = math.ceil(min(32, (os.cpu_count() or 1) + 4) / fan_out)
    runs: list[tuple[str, str]] = []
    try:
        mine = (await b.threads.create())["thread_id"]
        (
            await http.post(f"/api/threads/{mine}/uploads", files=[("files", ("notes.txt", b"notes", "text/plain"))])
        ).raise_for_status()
        await b_latencies(http, b, mine, "warm")  # first requests pay for imports and caches
        figures = await b_latencies(http, b, mine, "idle")
        for _ in range(turns):
            tid = (await a.threads.create())["thread_id"]
            runs.append(
                (
                    tid,
                    (
                        await a.runs.create(
                            tid, "lead_agent", input={"messages": [{"role": "user", "content": "fan out"}]}
                        )
                    )["run_id"],
                )
            )
        while sleeping(sleep) < min(4, fan_out):
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # the rest of A's commands that may start do
        running = sleeping(sleep)
        figures.update(await b_latencies(http, b, mine, "attack"))
        return {"fan_out": fan_out, "turns": turns, "sleep_s": sleep, "a_commands_running": running, **figures}
    finally:
        for tid, rid in runs:
            await a.runs.cancel(tid, rid, wait=True)
        await http.aclose()


def main() -> None:
    """Parse arguments, serve, measure, print one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fan-out", type=int, default=8, help="parallel commands in one of A's replies")
    parser.add_argument("--sleep", type=int, default=30, help="seconds each of A's commands sleeps")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="herdsman-fairness-") as home:
        url, server, thread = serve(home, args.fan_out, args.sleep)
        try:
            figures = asyncio.run(measure(url, args.fan_out, args.sleep))
        finally:
            server.should_exit = True
            thread.join(20)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
