"""Scale-out: streamed runs through 2 gateways that only accept and relay, executed by 1-3 workers.

Starts a real PostgreSQL and Redis (the test suite's helpers, stopped at the end), two
``herdsman serve`` processes with ``runs.workers: 0`` (they queue runs and relay their events
from Redis) and ``herdsman worker`` processes, one more for each entry of ``--workers`` (1, 2, 3).
The agent is the scripted model of this module (:class:`StepsModel`): ``--steps`` model calls per
run, each but the last a short ``ls`` tool call. For each number of workers, ``--rounds`` bursts
of ``--runs`` streamed runs are sent at one agreed instant, half through each gateway, by
``--clients`` processes (the lean HTTP/SSE reader of ``gateway_load.py``: the figures are the
servers', not a Python client's). Nothing is paced there: the gateways execute no run and the
workers serve no request. Then the in-memory default: one gateway executing its runs in-process
on the memory checkpointer, where runs and requests share a loop, with its pacing on and off
(``gateway.requests_first_ms: 0``, see ``src/herdsman_gateway/pacing.py``).

Prints one JSON line; per setup (suffix ``_<n>w`` for n workers, ``_memory``, ``_memory_nopacing``):

- ``runs_per_s``: runs of a burst / seconds from its start to its last stream's end;
- ``first_event_p50_ms``/``p99``: from sending the POST to the stream's first event (``metadata``,
  sent by the gateway that accepted the run);
- ``first_output_p50_ms``/``p99``: to the first event after it, the first one the process
  executing the run published (it includes the wait in the queue);
- ``cpu_s_per_run``: CPU seconds of the gateways and workers (from ``/proc/<pid>/stat``: user and
  system time, with their reaped children's) over the bursts, divided by the runs;
  ``services_cpu_s_per_run``: the same for PostgreSQL and Redis (durable setups only);
- ``errors``: streams that failed or ended with an ``error`` event, summed over the rounds.

``load_average_start``/``end``: the machine's 1-minute load average before and after (other
work on the machine shows in every figure).

The other figures are the median of the rounds. ``recovery_s``: with the most workers, a run is
streamed through a gateway with the SDK, the worker holding it is killed with SIGKILL in the
middle of a model call, and this is the time from the kill to the next event of the run that
the client receives (the ``metadata`` event of its attempt 2, sent by the worker that took it
over); it is bounded by the lease (``runs.lease_seconds``, printed as ``lease_seconds``) plus the
workers' polling (``runs.poll_seconds``). ``--quick`` is a smoke run (a few runs, 1 and 2 workers,
2 s leases).

Each new worker is made to execute a warm-up run through each gateway (the others are paused with
SIGSTOP meanwhile) before the bursts, so every worker counted has started and run the graph once.
CPU is read from /proc rather than with psutil (not a dependency): four numbers of one file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from herdsman.models.scripted import ScriptedChatModel

BENCHMARKS = Path(__file__).resolve().parent
REPO = BENCHMARKS.parent
FOLDERS = ["/mnt/user-data/workspace", "/mnt/user-data/uploads", "/mnt/user-data/outputs"]
ANSWER = "All done: the folders are listed."
MODEL_USE = "benchmarks.scale_out:StepsModel"  # imported by the gateway and worker processes
SETUPS = ("durable", "memory", "memory_nopacing")  # what --setups picks from


def steps_reply(messages: list[Any]) -> Any:
    """``steps N`` (optionally ``pause S``): N model calls, N - 1 of them ``ls`` tool calls, then
    the answer; each call takes S seconds more when a pause is asked."""
    words = [m for m in messages if m.type == "human"][-1].text.split()
    steps = int(words[1]) if words[:1] == ["steps"] and len(words) > 1 else 1
    pause = float(words[3]) if words[2:3] == ["pause"] and len(words) > 3 else 0.0
    done = 0
    for m in reversed(messages):
        if m.type == "human":
            break
        done += m.type == "ai"
    reply: dict[str, Any] = {"content": ANSWER}
    if done < steps - 1:
        reply = {"tool_calls": [{"name": "ls", "args": {"path": FOLDERS[done % len(FOLDERS)]}}]}
    if pause:
        reply["delay"] = pause
    return reply


class StepsModel(ScriptedChatModel):
    """The benchmark's agent (named in config.yaml as ``use: benchmarks.scale_out:StepsModel``)."""

    def model_post_init(self, __context: Any) -> None:
        """Answer with :func:`steps_reply`."""
        super().model_post_init(__context)
        self.respond = steps_reply


def _gateway_load() -> Any:
    """``benchmarks/gateway_load.py`` as a module (its SSE reader, percentile and burst timing)."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    import gateway_load

    return gateway_load


# -- CPU time ---------------------------------------------------------------------------------

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of ``pids`` and of their children they reaped (0 for a gone pid)."""
    total = 0.0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) ": state is field 0
        total += sum(int(v) for v in fields[11:15]) / TICKS  # utime stime cutime cstime
    return total


def processes() -> Iterator[tuple[int, int, str]]:
    """(pid, parent pid, command line) of every process."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        yield int(entry.name), int(stat[stat.rfind(")") + 2 :].split()[1]), cmdline


def service_pids(postgres_port: int, redis_port: int) -> list[int]:
    """The PostgreSQL server (its postmaster and live backends) and redis-server on those ports."""
    table = list(processes())
    roots = {
        pid
        for pid, _, cmd in table
        if ("postgres" in cmd and f"-p {postgres_port}" in cmd) or ("redis-server" in cmd and f":{redis_port}" in cmd)
    }
    return sorted(roots | {pid for pid, parent, _ in table if parent in roots})


# -- processes --------------------------------------------------------------------------------


@dataclass
class Stack:
    """The processes of one setup: gateways (their URLs) and workers, and where their configs go."""

    folder: Path
    shared: dict[str, Any]
    lease: float
    pacing: bool
    exits: ExitStack
    urls: list[str] = field(default_factory=list)
    gateways: list[subprocess.Popen] = field(default_factory=list)
    workers: list[subprocess.Popen] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.exits.callback(self.stop)

    def pids(self) -> list[int]:
        """Every gateway and live worker process."""
        return [p.pid for p in [*self.gateways, *self.workers] if p.poll() is None]

    def stop(self) -> None:
        """Terminate every process together, and reap them (those still there after 20 s killed)."""
        procs = [*self.workers, *self.gateways]
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + 20
        for proc in procs:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def log_tails(self, lines: int = 30) -> str:
        """The last lines each process wrote (its ``<name>.log``)."""
        return "\n".join(
            f"== {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
            for log in sorted(self.folder.glob("*.log"))
        )

    def launch(self, command: str, name: str, workers: int, port: int) -> subprocess.Popen:
        """``herdsman <command>`` with its own config; what it prints goes to ``<name>.log`` (a
        pipe that nobody reads would fill up and block it)."""
        from tests.gateway.gateway_support import child_env

        config = self.config(name, port, workers)
        with open(self.folder / f"{name}.log", "wb") as log:
            return subprocess.Popen(
                [sys.executable, "-m", "herdsman", command, "--config", str(config)],
                cwd=self.folder,
                env=child_env(),
                stdout=log,
                stderr=log,
            )

    def config(self, name: str, port: int, workers: int) -> Path:
        """Write the config.yaml of one process; its path."""
        import yaml

        gateway: dict[str, Any] = {"port": port, **self.shared.get("gateway", {})}
        if not self.pacing:
            gateway["requests_first_ms"] = 0
        data = {
            "home": str(self.folder / "home"),
            "lead": {"model_retries": 0, "verify_rounds": 0},
            "local_model": {"profile": "standard"},  # the scripted agent stands in for a large model
            "models": [{"name": "steps", "use": MODEL_USE}],
            "title": {"enabled": False},
            "checkpointer": self.shared["checkpointer"],
            # the capacity of the processes, not one user's share of it: all runs are the local user's
            "runs": {
                "workers": workers,
                "lease_seconds": self.lease,
                "max_running_per_user": None,
                "max_queued_per_user": None,
            },
            "gateway": {"max_streams_per_user": None, **gateway},
        }
        path = self.folder / f"{name}.yaml"
        path.write_text(yaml.safe_dump(data))
        return path

    def add_gateway(self, workers: int) -> None:
        """Start a ``herdsman serve`` (``workers`` in-process run workers); back once it answers."""
        from tests.services import free_port

        port = free_port()
        proc = self.launch("serve", f"gateway{len(self.gateways)}", workers, port)
        self.gateways.append(proc)
        url = f"http://127.0.0.1:{port}"
        try:
            _gateway_load().wait_ready(url, proc)
        except SystemExit as exc:
            raise SystemExit(f"{exc}\n{self.log_tails()}") from None
        self.urls.append(url)

    def add_worker(self, tasks: int, steps: int) -> None:
        """Start a ``herdsman worker`` (``tasks`` run workers); back once it executed a warm-up run
        through each gateway, the other workers paused meanwhile so that it is the one executing."""
        from tests.services import free_port

        proc = self.launch("worker", f"worker{len(self.workers)}", tasks, free_port())
        others = list(self.workers)
        self.workers.append(proc)
        for other in others:
            other.send_signal(signal.SIGSTOP)
        try:
            for url in self.urls:
                warm_up(url, steps, proc)
        except SystemExit as exc:
            raise SystemExit(f"{exc}\n{self.log_tails()}") from None
        finally:
            for other in others:
                other.send_signal(signal.SIGCONT)


def user_input(text: str) -> dict[str, Any]:
    """A run's input: one user message."""
    return {"messages": [{"role": "user", "content": text}]}


def warm_up(url: str, steps: int, watched: subprocess.Popen | None = None) -> None:
    """One run to its end through the gateway at ``url``; exit when it fails (or ``watched`` died)."""
    import httpx
    from langgraph_sdk import get_sync_client

    with get_sync_client(url=url, api_key=None, timeout=httpx.Timeout(300.0)) as sdk:
        thread = sdk.threads.create()["thread_id"]
        values = sdk.runs.wait(thread, "lead_agent", input=user_input(f"steps {steps}"))
    if watched is not None and watched.poll() is not None:
        raise SystemExit(f"a worker exited at start (status {watched.returncode})")
    if not isinstance(values, dict) or values.get("messages", [{}])[-1].get("content") != ANSWER:
        raise SystemExit(f"the warm-up run through {url} did not finish: {values}")


# -- the bursts -------------------------------------------------------------------------------


async def sse_names(url: str, path: str, body: bytes) -> AsyncIterator[str]:
    """POST ``body`` to ``path`` over a plain HTTP/1.1 connection; the names of the SSE events of
    the answer as they arrive. Raises OSError/ValueError when the answer is not a 200 stream."""
    sse_events = _gateway_load().sse_events
    host, port = url.split("//", 1)[1].split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(
            f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: text/event-stream\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body
        )
        status = await reader.readline()
        if b" 200 " not in status:
            raise ValueError(f"answered {status!r}")
        headers = []
        while (line := await reader.readline()) not in (b"\r\n", b""):
            headers.append(line.lower())
        chunked = any(h.startswith(b"transfer-encoding:") and b"chunked" in h for h in headers)
        buffer = bytearray()
        while True:
            if chunked:
                size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
                data = (await reader.readexactly(size + 2))[:-2] if size else b""
            else:
                data = await reader.read(65536)
            if not data:
                return
            buffer += data
            for name in sse_events(buffer):
                yield name
    finally:
        writer.close()


async def timed_run(url: str, thread_id: str, body: bytes) -> tuple[float | None, float | None, bool]:
    """Stream one run; (ms to its first event, ms to the first event after ``metadata``, ok)."""
    start = time.perf_counter()
    first = output = None
    try:
        async for name in sse_names(url, f"/threads/{thread_id}/runs/stream", body):
            now = (time.perf_counter() - start) * 1000
            first = now if first is None else first
            if name == "error":
                return first, output, False
            if name == "end":
                break
            if name != "metadata" and output is None:
                output = now
    except (OSError, ValueError, asyncio.IncompleteReadError):
        return first, output, False
    return first, output, output is not None


def _client_process(
    jobs: list[tuple[str, str]], start_at: float, body: bytes
) -> list[tuple[float | None, float | None, bool]]:
    """One client process: at ``start_at``, stream a run on each (gateway URL, thread) at once."""

    async def all_at_once() -> list[tuple[float | None, float | None, bool]]:
        await asyncio.sleep(max(0.0, start_at - time.time()))
        return list(await asyncio.gather(*(timed_run(url, tid, body) for url, tid in jobs)))

    return asyncio.run(all_at_once())


def burst(
    jobs: list[tuple[str, str]], clients: int, body: bytes
) -> tuple[list[tuple[float | None, float | None, bool]], float]:
    """Stream every job at one instant from ``clients`` processes; (results, seconds to the last end)."""
    from concurrent.futures import ProcessPoolExecutor

    start_at = time.time() + 0.5 + 0.01 * len(jobs)
    with ProcessPoolExecutor(max_workers=clients) as pool:
        futures = [
            pool.submit(_client_process, jobs[i::clients], start_at, body) for i in range(clients) if jobs[i::clients]
        ]
        results = [r for f in futures for r in f.result()]
    return results, time.time() - start_at


def new_threads(urls: list[str], count: int) -> list[tuple[str, str]]:
    """``count`` new threads, created through the gateways in turn: (the gateway's URL, thread id)."""
    from langgraph_sdk import get_sync_client

    clients = [get_sync_client(url=url, api_key=None) for url in urls]
    try:
        return [(urls[i % len(urls)], clients[i % len(urls)].threads.create()["thread_id"]) for i in range(count)]
    finally:
        for client in clients:
            client.close()


def measure(stack: Stack, args: argparse.Namespace, services: Callable[[], list[int]] | None) -> dict[str, float]:
    """``args.rounds`` bursts of ``args.runs`` runs through the stack's gateways: its figures
    (``services``: the pids of PostgreSQL and Redis, looked up at each reading, as backends come and go)."""
    quantile = _gateway_load().percentile
    body = json.dumps(
        {
            "assistant_id": "lead_agent",
            "input": user_input(f"steps {args.steps}"),
            "stream_mode": ["values", "messages-tuple"],
        }
    ).encode()
    threads = new_threads(stack.urls, args.runs * args.rounds)
    time.sleep(1.0)  # what creating them set going has settled
    pids = stack.pids()
    cpu, service_cpu = cpu_seconds(pids), cpu_seconds(services() if services else [])
    rounds, errors = [], 0
    for n in range(args.rounds):
        results, elapsed = burst(threads[n * args.runs : (n + 1) * args.runs], args.clients, body)
        errors += sum(1 for *_, ok in results if not ok)
        firsts = [f for f, _, _ in results if f is not None] or [-1.0]
        outputs = [o for _, o, _ in results if o is not None] or [-1.0]
        rounds.append(
            {
                "runs_per_s": args.runs / elapsed,
                "first_event_p50_ms": quantile(firsts, 0.5),
                "first_event_p99_ms": quantile(firsts, 0.99),
                "first_output_p50_ms": quantile(outputs, 0.5),
                "first_output_p99_ms": quantile(outputs, 0.99),
            }
        )
    time.sleep(1.0)  # what the last runs left to do after their streams ended
    runs = args.runs * args.rounds
    figures = {key: round(statistics.median(r[key] for r in rounds), 2) for key in rounds[0]}
    figures["cpu_s_per_run"] = round((cpu_seconds(pids) - cpu) / runs, 4)
    if services is not None:
        figures["services_cpu_s_per_run"] = round((cpu_seconds(services()) - service_cpu) / runs, 4)
    figures["errors"] = errors
    return figures


# -- recovery after a worker's death ---------------------------------------------------------


async def recovery_seconds(stack: Stack, database: str, pause: float) -> float:
    """Stream a run through the first gateway; SIGKILL the worker holding it in the middle of a
    model call; seconds from the kill to the run's next event at the client (checked: the
    ``metadata`` of attempt 2, and the run then streams to its answer)."""
    import psycopg
    from langgraph_sdk import get_client

    sdk = get_client(url=stack.urls[0], api_key=None)
    arrivals: asyncio.Queue[tuple[float, Any]] = asyncio.Queue()

    async def follow(thread_id: str) -> None:
        async for part in sdk.runs.stream(
            thread_id, "lead_agent", input=user_input(f"steps 3 pause {pause}"), stream_mode=["values"]
        ):
            arrivals.put_nowait((time.perf_counter(), part))
        arrivals.put_nowait((time.perf_counter(), None))

    try:
        thread_id = (await sdk.threads.create())["thread_id"]
        stream = asyncio.create_task(follow(thread_id))
        _, part = await arrivals.get()
        run_id = part.data["run_id"]
        while part is not None and part.event != "values":  # a worker executes it: a model call of `pause` s begins
            _, part = await arrivals.get()
        async with await psycopg.AsyncConnection.connect(database) as db:
            row = await (
                await db.execute("SELECT worker_id FROM herdsman_run_queue WHERE run_id = %s", (run_id,))
            ).fetchone()
        holder = next(w for w in stack.workers if row and row[0].split(":")[1] == str(w.pid))
        holder.kill()
        killed = time.perf_counter()
        holder.wait()
        # Events the worker sent before it died may still be on their way; the first one of the
        # worker that takes the run over is its metadata event.
        arrived, part = await asyncio.wait_for(arrivals.get(), 600)
        while part is not None and (arrived <= killed or part.event != "metadata"):
            arrived, part = await asyncio.wait_for(arrivals.get(), 600)
        if part is None or part.data.get("attempt") != 2:
            raise SystemExit(f"after the worker was killed the run's next event was {part}, not its attempt 2")
        await asyncio.wait_for(stream, 600)
        state = await sdk.threads.get_state(thread_id)
        if state["values"]["messages"][-1]["content"] != ANSWER:
            raise SystemExit("the run taken over did not finish")
        return round(arrived - killed, 3)
    finally:
        await sdk.aclose()


# -- setups -----------------------------------------------------------------------------------


@contextmanager
def services() -> Iterator[tuple[str, str]]:
    """A throwaway PostgreSQL server and redis-server (the test suite's): their URLs."""
    from tests.gateway.redis_service import redis_server
    from tests.services import postgres_server

    with postgres_server() as postgres, redis_server() as redis_url:
        yield postgres, redis_url


def new_database(server: str) -> str:
    """A new database on the server at URL ``server``; its URL."""
    import uuid

    import psycopg

    name = f"scale_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return server.rsplit("/", 1)[0] + f"/{name}"


def port_of(url: str) -> int:
    """The port of a ``scheme://host:port/...`` URL."""
    return int(url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])


def durable(
    args: argparse.Namespace, postgres: str, redis_url: str, *, counts: list[int], recover: bool
) -> dict[str, float]:
    """Two accept-only gateways and ``counts`` workers in turn on a new database: the figures of
    each count, suffixed ``_<n>w``, and ``recovery_s`` if asked. Nothing is paced: the gateways
    execute no run and the workers serve no request."""
    figures: dict[str, float] = {}
    database = new_database(postgres)
    shared = {
        "checkpointer": {"type": "postgres", "url": database},
        "gateway": {"stream_bridge": "redis", "redis_url": redis_url},
    }
    with tempfile.TemporaryDirectory() as folder, ExitStack() as exits:
        stack = Stack(Path(folder), shared, args.lease_seconds, True, exits)
        for _ in range(2):
            stack.add_gateway(workers=0)
        for count in counts:
            while len(stack.workers) < count:
                stack.add_worker(args.worker_tasks, args.steps)
            suffix = f"_{count}w"
            measured = measure(stack, args, lambda: service_pids(port_of(postgres), port_of(redis_url)))
            if measured["errors"]:
                print(f"{measured['errors']} runs failed with {count} workers:\n{stack.log_tails()}", file=sys.stderr)
            figures.update({f"{key}{suffix}": value for key, value in measured.items()})
        if recover:
            figures["recovery_s"] = asyncio.run(recovery_seconds(stack, database, args.pause))
    return figures


def in_memory(args: argparse.Namespace, *, pacing: bool) -> dict[str, float]:
    """One gateway executing its runs (memory checkpointer, in-process workers): its figures,
    suffixed ``_memory`` (``_memory_nopacing`` without pacing)."""
    with tempfile.TemporaryDirectory() as folder, ExitStack() as exits:
        stack = Stack(Path(folder), {"checkpointer": {"type": "memory"}}, args.lease_seconds, pacing, exits)
        stack.add_gateway(workers=2)
        warm_up(stack.urls[0], args.steps)
        measured = measure(stack, args, None)
        if measured["errors"]:
            print(f"{measured['errors']} runs failed in memory:\n{stack.log_tails()}", file=sys.stderr)
    suffix = "_memory" + ("" if pacing else "_nopacing")
    return {f"{key}{suffix}": value for key, value in measured.items()}


def main() -> None:
    """Parse arguments, start the services and each setup in turn, print the figures."""
    from herdsman.config.schema import RunsConfig

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100, help="concurrent streamed runs per burst")
    parser.add_argument("--steps", type=int, default=5, help="model calls per run (all but the last call ls)")
    parser.add_argument("--rounds", type=int, default=3, help="bursts per setup; the figures are their median")
    parser.add_argument("--clients", type=int, default=2, help="client processes sharing a burst")
    parser.add_argument("--workers", default="1,2,3", help="worker process counts to measure, in increasing order")
    parser.add_argument(
        "--worker-tasks",
        type=int,
        default=RunsConfig().workers,
        help="runs.workers of each worker process (runs it executes at once)",
    )
    parser.add_argument("--lease-seconds", type=float, default=RunsConfig().lease_seconds, help="runs.lease_seconds")
    parser.add_argument(
        "--pause",
        type=float,
        default=2.0,
        help="seconds each model call of the recovery run takes (the worker is killed in one)",
    )
    parser.add_argument(
        "--setups",
        default=",".join(SETUPS),
        help="which setups to measure, comma-separated, among " + ", ".join(SETUPS),
    )
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: 6 runs, 2 steps, 1 round, 1 and 2 workers, 2 s leases"
    )
    args = parser.parse_args()
    setups = [s for s in args.setups.split(",") if s]
    if not setups or any(s not in SETUPS for s in setups):
        parser.error(f"--setups takes some of {', '.join(SETUPS)}, e.g. durable,memory")
    if args.quick:
        args.runs, args.steps, args.rounds, args.clients, args.workers, args.lease_seconds = 6, 2, 1, 1, "1,2", 2.0
    counts = sorted({int(n) for n in args.workers.split(",")})
    if counts[0] < 1:
        parser.error("--workers takes counts of 1 or more, e.g. 1,2,3")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the servers and processes on the way out
    os.chdir(REPO)  # the children import this module as benchmarks.scale_out
    sys.path.insert(0, str(REPO))  # and this process the test suite's helpers (tests.services, ...)
    figures: dict[str, Any] = {
        "runs": args.runs,
        "steps": args.steps,
        "rounds": args.rounds,
        "gateways": 2,
        "workers": counts,
        "worker_tasks": args.worker_tasks,
        "lease_seconds": args.lease_seconds,
        "poll_seconds": RunsConfig().poll_seconds,
        "load_average_start": os.getloadavg()[0],
    }
    if "durable" in setups:
        with services() as (postgres, redis_url):
            figures.update(durable(args, postgres, redis_url, counts=counts, recover=counts[-1] >= 2))
    if "memory" in setups:
        figures.update(in_memory(args, pacing=True))
    if "memory_nopacing" in setups:
        figures.update(in_memory(args, pacing=False))
    figures["load_average_end"] = os.getloadavg()[0]  # the machine's other load, besides this benchmark's
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
