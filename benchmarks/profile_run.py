"""cProfile of one streamed run on the gateway: where a run's CPU goes, top entries by cumulative and own time.

Serves the gateway in this process (default configuration: SQLite checkpointer, file history on;
``--ours memory`` for the in-memory checkpointer) with the scripted agent of gateway_load.py
(``--steps`` model calls: one ``ls``, then the answer, by default), streams ``--warmup`` runs to
warm it up, waits for the gateway's one-off housekeeping (the quota volume's sweep, which reads
every home on the volume) to end, then profiles one streamed run on a new thread, from the request to the stream's
end (``--concurrent N``: N runs on N new threads at once, to see what a burst adds: queueing,
contention; ``--repeat K``: K such bursts one after another, summed, for a steadier figure per
run). Each run is requested by a child process (gateway_load's lean HTTP reader), so no
client work lands in the profile.

Every thread of the gateway is profiled, not only the event loop's: the executors' threads
(sandbox tools, file versions, SQLite) get a profiler of their own when they first run during
the profiled run (``threading.setprofile`` hooks them from their start), and the profiles are
merged. Times are each thread's CPU time (``time.thread_time``), not wall time, so waiting
threads and other processes on a shared machine do not count. Prints the two tables to stdout
(then Herdsman's own functions by cumulative time, files named from their import root);
``--out`` also writes the merged pstats file (open it with ``python -m pstats``).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import pstats
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "src")]  # this checkout's code, not whatever is installed
import gateway_load  # noqa: E402


class ThreadProfiles:
    """One profiler per thread that runs Python code while ``active`` (threads started after :meth:`install`)."""

    def __init__(self) -> None:
        self.active = False
        self.profiles: list[cProfile.Profile] = []
        self._lock = threading.Lock()

    def install(self) -> None:
        """Hook every thread started from now on (a Python-level hook until the profiled run starts)."""
        threading.setprofile(self._hook)

    def _hook(self, frame: Any, event: str, arg: Any) -> None:
        if self.active:
            profile = cProfile.Profile(time.thread_time)
            with self._lock:
                self.profiles.append(profile)
            profile.enable()  # replaces this hook for the calling thread


async def new_thread(url: str) -> str:
    """A new thread's id."""
    import httpx

    async with httpx.AsyncClient(base_url=url) as client:
        return (await client.post("/threads", json={})).json()["thread_id"]


async def stream_run(url: str, thread: str) -> None:
    """Stream one run on ``thread`` from a child process; fail unless it streamed to its end."""
    child = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--client", url, thread, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await child.communicate()
    if not json.loads(out)[1]:
        raise SystemExit(f"the run on thread {thread} did not stream to its end")


HOUSEKEEPING = ("herdsman-volume-sweep",)  # once per process, not per run (it reads every home on the volume)


def wait_housekeeping(timeout: float = 120.0) -> None:
    """Wait until the gateway's one-off housekeeping threads (:data:`HOUSEKEEPING`) have ended, so
    their work does not land in a run's profile."""
    for thread in threading.enumerate():
        if thread.name in HOUSEKEEPING:
            thread.join(timeout)


class _Snapshot:
    """A profile's stats as taken at one instant, for ``pstats.Stats``.

    ``pstats.Stats(profile)`` would disable the profile from this thread and close its pending
    calls with this thread's clock; a profile still running in another thread is read as is."""

    def __init__(self, profile: cProfile.Profile) -> None:
        profile.snapshot_stats()
        self.stats = profile.stats

    def create_stats(self) -> None:
        """Already taken."""


async def profile(app: Any, warmup: int, threads: ThreadProfiles, concurrent: int = 1, repeat: int = 1) -> pstats.Stats:
    """Serve ``app``, run ``warmup`` runs, then profile ``concurrent`` runs at once (each on a
    new thread), ``repeat`` times one after another; the merged stats."""
    import uvicorn

    port = gateway_load.free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="on"))
    serving = asyncio.create_task(server.serve())
    while not server.started:
        if serving.done():
            serving.result()
        await asyncio.sleep(0.02)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(warmup):
            await stream_run(url, await new_thread(url))
        await asyncio.to_thread(wait_housekeeping)
        batches = [[await new_thread(url) for _ in range(concurrent)] for _ in range(repeat)]
        main = cProfile.Profile(time.thread_time)
        threads.active = True
        main.enable()
        try:
            for ids in batches:
                await asyncio.gather(*(stream_run(url, thread) for thread in ids))
        finally:
            main.disable()
            threads.active = False
            snapshots = [_Snapshot(p) for p in list(threads.profiles)]
    finally:
        server.should_exit = True
        await serving
    stats = pstats.Stats(main)
    for snapshot in snapshots:
        if snapshot.stats:  # pstats refuses an empty one (a thread hooked as the profiled runs ended)
            stats.add(snapshot)
    return stats


def _short(filename: str, roots: list[str]) -> str:
    """``filename`` relative to the import root that holds it (``herdsman/runtime/runs/runs.py``)."""
    for root in roots:
        if filename.startswith(root):
            return filename[len(root) :].lstrip("/")
    return filename


def short_paths(stats: pstats.Stats) -> pstats.Stats:
    """``stats`` with each file named from its import root (no directory of this machine), ours marked."""
    # as written and resolved: a virtual environment reached through a symlink names its files either way
    paths = [Path(p) for p in sys.path if p]
    roots = sorted({str(p.absolute()) for p in paths} | {str(p.resolve()) for p in paths}, key=len, reverse=True)

    def key(func: tuple[str, int, str]) -> tuple[str, int, str]:
        return (_short(func[0], roots), func[1], func[2])

    holder = _Snapshot.__new__(_Snapshot)
    holder.stats = {
        key(f): (cc, nc, tt, ct, {key(c): v for c, v in callers.items()})
        for f, (cc, nc, tt, ct, callers) in stats.stats.items()
    }  # type: ignore[attr-defined]
    return pstats.Stats(holder)


def tables(stats: pstats.Stats, top: int) -> str:
    """The top ``top`` entries by cumulative time, by own time, and Herdsman's own functions by cumulative time."""
    out = io.StringIO()
    stats = short_paths(stats)
    stats.stream = out
    for key in ("cumulative", "tottime"):
        out.write(f"=== top {top} by {key} (thread CPU time, seconds) ===\n")
        stats.sort_stats(key).print_stats(top)
    out.write(f"=== top {top} of Herdsman's own functions by cumulative ===\n")
    stats.sort_stats("cumulative").print_stats(r"^herdsman", top)
    return out.getvalue()


def main() -> None:
    """Parse arguments; profile one run (or, as the child, stream it)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--ours",
        choices=sorted(gateway_load.CONFIGS),
        default="default",
        help="default (SQLite, file history on) or memory (in-memory checkpointer)",
    )
    parser.add_argument("--steps", type=int, default=2, help="model calls per run (2: one ls, then the answer)")
    parser.add_argument("--warmup", type=int, default=3, help="runs before the profiled one")
    parser.add_argument(
        "--concurrent",
        type=int,
        default=1,
        help="runs profiled together, each on its own new thread (figures are their sum)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="profile this many bursts one after another (figures are their sum; CPU ms per run printed)",
    )
    parser.add_argument("--top", type=int, default=15, help="entries per table")
    parser.add_argument("--out", type=Path, help="also write the merged pstats file here")
    parser.add_argument("--client", nargs=2, metavar=("URL", "THREAD"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        print(json.dumps(asyncio.run(gateway_load.one_raw_run(*args.client))))
        return
    threads = ThreadProfiles()
    threads.install()
    with tempfile.TemporaryDirectory() as home:
        app = gateway_load.build_app(args.steps, home, args.ours)
        stats = asyncio.run(profile(app, args.warmup, threads, max(1, args.concurrent), max(1, args.repeat)))
    if args.out:
        stats.dump_stats(args.out)
    runs = max(1, args.concurrent) * max(1, args.repeat)
    print(
        f"{max(1, args.concurrent)} streamed run(s) at once, {max(1, args.repeat)} time(s), gateway config {args.ours}, "
        f"{args.steps} model calls, {len(threads.profiles)} executor thread(s) profiled besides the event loop's; "
        f"{stats.total_tt * 1000 / runs:.1f} ms CPU per run (profiled)"
    )
    print(tables(stats, args.top))


if __name__ == "__main__":
    main()
