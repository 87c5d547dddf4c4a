"""Load on one gateway process: N concurrent streamed runs of the scripted agent.

Starts a gateway in a child process (memory checkpointer, scripted model making ``--steps``
model calls per run: tool calls, then an answer), creates N threads, then streams one run on
each, all at once (see below for how the streams are read). Prints one JSON line::

    {"runs": 100, "client": "raw", "errors": 0, "runs_per_s": ..., "first_event_p50_ms": ...,
     "first_event_p99_ms": ..., "rounds": 5}

``--rounds`` bursts (5 by default) run one after another against the same gateway (new threads
each time); errors are summed over all of them, the other figures are the median of the rounds.

Time to first event is from sending the request to receiving the ``metadata`` event. The runs
are sent by ``--clients`` processes at one agreed instant, so the load generator is not the
bottleneck it would be as a single Python process.

The streams are read by a lean HTTP/1.1 + SSE reader (``--client raw``, the default), the way
load generators such as wrk or k6 work: the figures are the gateway's. The official
langgraph-sdk client (``--client sdk``) costs CPU of its own that lands in the figures: against
a stub server that answers at once, 50 SDK streams opened together in one process see their
first event after 50-90 ms at p99 on a 2-core machine, raw streams after ~10 ms. Threads are
created with the SDK either way.
Target: 0 errors, p99 time to first event under 100 ms.

``--reference`` compares the gateway (default configuration and in-memory checkpointer) with
LangGraph's own server on the same scripted graph, rounds interleaved, and prints both sides
and their ratios, CPU per run and memory included (langgraph_reference/compare.py says how). The first
use creates the reference's virtual environment (langgraph_reference/server.py), about a minute.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

FOLDERS = ["/mnt/user-data/workspace", "/mnt/user-data/uploads", "/mnt/user-data/outputs"]


def make_respond(steps: int):
    """A scripted agent that makes ``steps - 1`` tool calls, then answers."""

    def respond(messages):
        """The next reply, from how many AI messages followed the last human one."""
        since_human = 0
        for m in reversed(messages):
            if m.type == "human":
                break
            if m.type == "ai":
                since_human += 1
        if since_human < steps - 1:
            return {"tool_calls": [{"name": "ls", "args": {"path": FOLDERS[since_human % len(FOLDERS)]}}]}
        return "All done: the folders are listed."

    return respond


# What each configuration of ours changes from the defaults (``default``: file history on, SQLite).
CONFIGS: dict[str, dict] = {"default": {}, "memory": {"checkpointer": {"type": "memory"}}}


def build_app(steps: int, home: str, config_name: str = "memory"):
    """The gateway app with the scripted agent (``steps`` model calls per run), in ``CONFIGS[config_name]``."""
    import yaml

    from herdsman.config import parse_config
    from herdsman.models.scripted import ScriptedChatModel
    from herdsman_gateway.app import create_app

    config = parse_config(
        yaml.safe_dump(
            {
                "home": home,
                **CONFIGS[config_name],
                "lead": {"model_retries": 0, "verify_rounds": 0},
                "local_model": {"profile": "standard"},  # the scripted agent stands in for a large model
                "title": {"enabled": False},
                "logging": {"level": "ERROR"},
                # the capacity of one process, not one user's share of it: all runs are the local user's
                "runs": {"max_running_per_user": None, "max_queued_per_user": None},
                "gateway": {"max_streams_per_user": None, "max_threads_per_user": None},
            }
        ),
        env={},
    )
    model = ScriptedChatModel(respond=make_respond(steps))
    return create_app(config, model=model, freeze_gc=True)


def serve(port: int, steps: int, home: str, config_name: str = "memory") -> None:
    """Child process: serve :func:`build_app` on ``port``."""
    import uvicorn

    uvicorn.run(build_app(steps, home, config_name), host="127.0.0.1", port=port, log_level="error")


def free_port() -> int:
    """A free loopback TCP port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, nearest-rank."""
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))
    return ordered[index]


async def one_run(client, thread_id: str) -> tuple[float | None, bool]:
    """Stream one run; (ms to the first event, ok)."""
    start = time.perf_counter()
    first: float | None = None
    ok = False
    try:
        async for part in client.runs.stream(
            thread_id,
            "lead_agent",
            input={"messages": [{"role": "user", "content": "list the folders"}]},
            stream_mode=RUN_BODY["stream_mode"],
        ):
            if first is None:
                first = (time.perf_counter() - start) * 1000
            if part.event == "error":
                return first, False
            ok = part.event != "metadata"  # the run's events came, and the stream ended without an error
    except Exception:  # noqa: BLE001 - any failure counts as an error
        return first, False
    return first, ok


RUN_BODY = {
    "assistant_id": "lead_agent",
    "input": {"messages": [{"role": "user", "content": "list the folders"}]},
    "stream_mode": ["values", "messages-tuple"],
}


def sse_events(buffer: bytearray) -> list[str]:
    """Take the complete SSE events out of ``buffer``; their names (comment-only blocks skipped).

    Events end with a blank line, LF or CRLF (sse-starlette, under LangGraph's server, writes CRLF)."""
    names = []
    while ends := [(i, len(sep)) for sep in (b"\r\n\r\n", b"\n\n") if (i := buffer.find(sep)) >= 0]:
        end, size = min(ends)
        block = bytes(buffer[:end])
        del buffer[: end + size]
        for line in block.split(b"\n"):
            if line.startswith(b"event:"):
                names.append(line[6:].strip().decode())
    return names


async def one_raw_run(url: str, thread_id: str) -> tuple[float | None, bool]:
    """Stream one run over a plain HTTP/1.1 connection; (ms to the first event, ok)."""
    host, port = url.split("//", 1)[1].split(":")
    body = json.dumps(RUN_BODY).encode()
    request = (
        f"POST /threads/{thread_id}/runs/stream HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Content-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode() + body
    start = time.perf_counter()
    first: float | None = None
    try:
        reader, writer = await asyncio.open_connection(host, int(port))
    except OSError:
        return None, False
    try:
        writer.write(request)
        if b" 200 " not in await reader.readline():
            return None, False
        chunked = False
        while (line := await reader.readline()) not in (b"\r\n", b""):
            chunked |= line.lower().startswith(b"transfer-encoding:") and b"chunked" in line.lower()
        buffer = bytearray()
        events = 0
        while True:
            if chunked:
                size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    return first, events > 1  # the stream ended after the run's events (no "end" event)
                buffer += (await reader.readexactly(size + 2))[:-2]
            else:
                data = await reader.read(65536)
                if not data:
                    return first, events > 1
                buffer += data
            for name in sse_events(buffer):
                events += 1
                if first is None:
                    first = (time.perf_counter() - start) * 1000
                if name == "error":
                    return first, False
                if name == "end":  # a server that still sends one
                    return first, True
    except (OSError, ValueError, asyncio.IncompleteReadError):
        return first, False
    finally:
        writer.close()


async def client_share(url: str, runs: int, start_at: float, kind: str) -> list[tuple[float | None, bool]]:
    """One client process: create ``runs`` threads, wait for ``start_at``, stream them all at once."""
    import httpx
    from langgraph_sdk import get_client

    client = get_client(url=url, api_key=None, timeout=httpx.Timeout(120.0))
    try:
        threads = [(await client.threads.create())["thread_id"] for _ in range(runs)]
        await asyncio.sleep(max(0.0, start_at - time.time()))
        if kind == "sdk":
            return list(await asyncio.gather(*(one_run(client, t) for t in threads)))
        return list(await asyncio.gather(*(one_raw_run(url, t) for t in threads)))
    finally:
        await client.aclose()


def _client_process(url: str, runs: int, start_at: float, kind: str) -> list[tuple[float | None, bool]]:
    try:
        return asyncio.run(client_share(url, runs, start_at, kind))
    except Exception as exc:  # noqa: BLE001 - the SDK's errors do not survive pickling back to the parent
        raise RuntimeError(f"a load client failed: {type(exc).__name__}: {exc}") from None


def load(
    url: str, runs: int, clients: int, kind: str = "raw", at_start: Callable[[], None] | None = None
) -> dict[str, float | int]:
    """Stream ``runs`` runs at once from ``clients`` processes (one Python client cannot drive
    100 streams without becoming the bottleneck itself); the figures of all of them.

    ``at_start`` is called (in a thread) at the instant the runs are sent, after the threads
    were created: the reference comparison reads the server's CPU time there."""
    from concurrent.futures import ProcessPoolExecutor

    shares = [runs // clients + (1 if i < runs % clients else 0) for i in range(clients)]
    start_at = time.time() + 0.5 + 0.03 * runs
    timer = threading.Timer(max(0.0, start_at - time.time()), at_start) if at_start else None
    if timer:
        timer.start()
    with ProcessPoolExecutor(max_workers=clients) as pool:
        futures = [pool.submit(_client_process, url, n, start_at, kind) for n in shares if n]
        results = [r for f in futures for r in f.result()]
    elapsed = time.time() - start_at
    if timer:
        timer.join()
    firsts = [f for f, _ in results if f is not None]
    return {
        "runs": runs,
        "client": kind,
        "errors": sum(1 for _, ok in results if not ok),
        "runs_per_s": round(runs / elapsed, 2),
        "first_event_p50_ms": round(percentile(firsts, 0.50), 2) if firsts else -1,
        "first_event_p99_ms": round(percentile(firsts, 0.99), 2) if firsts else -1,
    }


def load_rounds(url: str, runs: int, clients: int, kind: str, rounds: int) -> dict[str, float | int]:
    """:func:`load` ``rounds`` times against the same gateway: errors summed, the other figures
    the median of the rounds (on a shared machine one round can land on a neighbour's burst)."""
    each = [load(url, runs, clients, kind) for _ in range(rounds)]
    figures = dict(each[0])
    figures["errors"] = sum(int(f["errors"]) for f in each)
    for key in ("runs_per_s", "first_event_p50_ms", "first_event_p99_ms"):
        figures[key] = statistics.median(float(f[key]) for f in each)
    figures["rounds"] = rounds
    return figures


def wait_ready(url: str, proc: subprocess.Popen, path: str = "/api/health", timeout: float = 30.0) -> None:
    """Block until the child server answers ``path`` with 200 (``timeout`` seconds at most)."""
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited at start: {proc.stderr.read() if proc.stderr else ''}")
        try:
            if httpx.get(f"{url}{path}").status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise SystemExit(f"the server did not answer {path} in {timeout:.0f} s")


def start_gateway(port: int, steps: int, home: str, config_name: str, repo: Path | None = None) -> subprocess.Popen:
    """A child process serving this checkout's gateway on ``port`` (see :func:`serve`), or the one of
    the checkout ``repo`` (another commit, to compare); ready when this returns (within 180 s, as
    the reference server is given: on a loaded machine at low priority the gateway's imports alone
    took more than 30 s)."""
    repo = repo or Path(__file__).resolve().parents[1]  # this checkout's code, not whatever is installed
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo / "src"), str(repo)])}
    proc = subprocess.Popen(
        [
            sys.executable,
            str(repo / "benchmarks" / "gateway_load.py"),
            "--serve-port",
            str(port),
            "--steps",
            str(steps),
            "--home",
            home,
            "--ours",
            config_name,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        wait_ready(f"http://127.0.0.1:{port}", proc, timeout=180)
    except BaseException:
        stop(proc)
        raise
    return proc


def stop(proc: subprocess.Popen) -> None:
    """Stop a child server: SIGTERM, then SIGKILL after 20 s."""
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main() -> None:
    """Parse arguments; run the child gateway, the load, or the comparison with the reference server."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100, help="concurrent streamed runs")
    parser.add_argument("--steps", type=int, default=5, help="model calls per run (--reference: always 2)")
    parser.add_argument("--clients", type=int, default=2, help="client processes sharing the runs")
    parser.add_argument(
        "--client",
        choices=["raw", "sdk"],
        default="raw",
        help="read streams with a lean HTTP reader (default) or the langgraph-sdk client",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="bursts in a row; errors are summed, the other figures are the median of the rounds",
    )
    parser.add_argument(
        "--ours",
        choices=sorted(CONFIGS),
        default="memory",
        help="our configuration: memory (in-memory checkpointer) or default (SQLite, file history)",
    )
    parser.add_argument(
        "--reference",
        action="store_true",
        help="compare with LangGraph's own server (langgraph dev) on the same scripted graph, "
        "rounds interleaved ABBA; see langgraph_reference/compare.py",
    )
    parser.add_argument(
        "--rss-after",
        type=int,
        default=1000,
        help="--reference: read each server's memory after it served this many runs",
    )
    parser.add_argument(
        "--reference-jobs",
        type=int,
        default=10,
        help="--reference: langgraph dev --n-jobs-per-worker (10 is its default)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        help="--reference: also serve the default configuration of this other checkout (a worktree "
        "of an earlier commit), as the side 'baseline', to measure a change before and after in one run",
    )
    parser.add_argument("--serve-port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--home", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_port:
        serve(args.serve_port, args.steps, args.home, args.ours)
        return
    if args.reference:
        from langgraph_reference.compare import compare

        figures = compare(
            runs=args.runs,
            rounds=max(1, args.rounds),
            clients=max(1, args.clients),
            kind=args.client,
            rss_after=args.rss_after,
            reference_jobs=args.reference_jobs,
            baseline=args.baseline,
        )
        print(json.dumps(figures))
        return
    port = free_port()
    with tempfile.TemporaryDirectory() as home:
        proc = start_gateway(port, args.steps, home, args.ours)
        try:
            figures = load_rounds(
                f"http://127.0.0.1:{port}", args.runs, max(1, args.clients), args.client, max(1, args.rounds)
            )
        finally:
            stop(proc)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
