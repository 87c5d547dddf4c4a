"""``gateway_load.py --reference``: Herdsman's gateway against LangGraph's own server, rounds interleaved.

Three servers run side by side on the same scripted work (one ``ls`` of the workspace, then an
answer): our gateway in its default configuration (SQLite checkpointer, file history on), our
gateway with the in-memory checkpointer (with ``--baseline DIR``, also the default configuration
of the checkout in DIR: a change's before and after in the same rounds), and ``langgraph dev`` (server.py) serving
graph.py. Before timing, one run on each shows the same work was done (``transcripts``:
the thread's messages after the run; ``same_work``: they are alike). Then ``rounds`` bursts of ``runs`` concurrent streamed
runs go to each server in turn, the order reversed every other round (ABBA), so a neighbour's
burst on a shared machine lands on every side alike. For each side:

- ``cpu_ms_per_run``: CPU time of the server's process tree from the instant the burst's runs
  are sent (its threads already created) until the last stream ends, over the runs (all rounds);
- ``runs_per_s``, ``first_event_p50_ms``, ``first_event_p99_ms``: medians of the rounds (as
  gateway_load.py measures them); ``errors``: summed;
- ``rss_mb``: the tree's resident memory once it has served ``rss_after`` runs (untimed bursts
  make up the count when the rounds served fewer); ``rss_after_runs`` says how many it had served.

``ratios`` divide each of our figures by the reference's (below 1 is less CPU, memory or wait;
above 1 is more runs per second). Everything is printed as one JSON line by gateway_load.py.
"""

from __future__ import annotations

import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gateway_load

from langgraph_reference import server as reference_server
from langgraph_reference.process_cost import tree_cpu_seconds, tree_rss_bytes

STEPS = 2  # one ls call, then the answer
KEYS = ("cpu_ms_per_run", "runs_per_s", "first_event_p50_ms", "first_event_p99_ms", "rss_mb")


@dataclass
class Side:
    """One server under test and what it measured."""

    name: str
    proc: subprocess.Popen
    url: str
    rounds: list[dict[str, Any]] = field(default_factory=list)
    cpu_seconds: float = 0.0
    served: int = 0


def transcript(url: str) -> list[str]:
    """One run on a new thread, waited for; the thread's messages as ``type`` or ``type:tool``."""
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=url, api_key=None)
    thread = client.threads.create()["thread_id"]
    client.runs.wait(thread, "lead_agent", input={"messages": [{"role": "user", "content": "list the folders"}]})
    out = []
    for message in client.threads.get_state(thread)["values"]["messages"]:
        names = [c["name"] for c in message.get("tool_calls") or []]
        out.append(":".join([message["type"], *names, *([message["name"]] if message["type"] == "tool" else [])]))
    return out


def burst(side: Side, runs: int, clients: int, kind: str) -> dict[str, Any]:
    """One timed burst on ``side``: gateway_load's figures plus the CPU the server spent on it."""
    mark: dict[str, float] = {}
    figures = gateway_load.load(
        side.url, runs, clients, kind, at_start=lambda: mark.setdefault("cpu", tree_cpu_seconds(side.proc.pid))
    )
    spent = tree_cpu_seconds(side.proc.pid) - mark["cpu"]
    side.cpu_seconds += spent
    side.served += runs
    figures["cpu_ms_per_run"] = round(spent * 1000 / runs, 2)
    side.rounds.append(figures)
    return figures


def summary(side: Side, rss_bytes: int) -> dict[str, Any]:
    """The figures of all of ``side``'s rounds (see the module docstring)."""
    timed = sum(int(r["runs"]) for r in side.rounds)
    figures: dict[str, Any] = {
        "errors": sum(int(r["errors"]) for r in side.rounds),
        "cpu_ms_per_run": round(side.cpu_seconds * 1000 / timed, 2),
        "cpu_ms_per_run_rounds": [r["cpu_ms_per_run"] for r in side.rounds],
    }
    for key in ("runs_per_s", "first_event_p50_ms", "first_event_p99_ms"):
        figures[key] = round(statistics.median(float(r[key]) for r in side.rounds), 2)
    figures["rss_mb"] = round(rss_bytes / 2**20, 1)
    figures["rss_after_runs"] = side.served
    return figures


def ratios(ours: dict[str, Any], reference: dict[str, Any]) -> dict[str, float | None]:
    """Each of our figures over the reference's, to 3 significant digits (None where the reference's is 0 or missing)."""
    return {k: float(f"{ours[k] / reference[k]:.3g}") if reference.get(k) and reference[k] > 0 else None for k in KEYS}


def _start_sides(stack: Path, venv: Path, reference_jobs: int, baseline: Path | None = None) -> list[Side]:
    sides = []
    ours = [(name, name, None) for name in gateway_load.CONFIGS]  # default, memory
    if baseline is not None:
        ours.append(("baseline", "default", baseline))
    try:
        for name, config_name, repo in ours:
            home = stack / f"home-{name}"
            home.mkdir()
            port = gateway_load.free_port()
            proc = gateway_load.start_gateway(port, STEPS, str(home), config_name, repo)
            sides.append(Side(name, proc, f"http://127.0.0.1:{port}"))
        port = gateway_load.free_port()
        project = reference_server.write_project(stack / "reference")
        proc = reference_server.start(venv, project, port, reference_jobs)
        sides.append(Side("reference", proc, f"http://127.0.0.1:{port}"))
        try:
            gateway_load.wait_ready(sides[-1].url, proc, "/ok", timeout=180)
        except SystemExit as exc:
            log = (project / "server.log").read_text(errors="replace")[-3000:]
            raise SystemExit(f"{exc}; langgraph dev said:\n{log}") from None
    except BaseException:
        for side in sides:
            gateway_load.stop(side.proc)
        raise
    return sides


def compare(
    runs: int, rounds: int, clients: int, kind: str, rss_after: int, reference_jobs: int, baseline: Path | None = None
) -> dict[str, Any]:
    """Run the comparison (see the module docstring); its figures. ``baseline``: another checkout
    whose default configuration is one more side (``baseline``), for a change's before and after."""
    venv = reference_server.ensure_venv()
    with tempfile.TemporaryDirectory() as tmp:
        sides = _start_sides(Path(tmp), venv, reference_jobs, baseline)
        try:
            transcripts = {side.name: transcript(side.url) for side in sides}
            for n in range(rounds):
                for side in sides if n % 2 == 0 else sides[::-1]:
                    burst(side, runs, clients, kind)
            rss = {}
            for side in sides:
                while side.served < rss_after:
                    gateway_load.load(side.url, runs, clients, kind)
                    side.served += runs
                time.sleep(0.5)  # let the last streams' buffers go
                rss[side.name] = tree_rss_bytes(side.proc.pid)
        finally:
            for side in sides:
                gateway_load.stop(side.proc)
    figures = {side.name: summary(side, rss[side.name]) for side in sides}
    reference = figures.pop("reference")
    return {
        "runs": runs,
        "rounds": rounds,
        "client": kind,
        "steps": STEPS,
        "errors": sum(f["errors"] for f in figures.values()) + reference["errors"],
        "ours": figures,
        "reference": {"server": reference_server.version(venv), "n_jobs_per_worker": reference_jobs, **reference},
        "ratios": {name: ratios(f, reference) for name, f in figures.items()},
        "transcripts": transcripts,
        "same_work": len({tuple(t) for t in transcripts.values()}) == 1,
    }
