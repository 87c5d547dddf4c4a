"""LangGraph's own server (``langgraph dev``) for comparisons, from a virtual environment of its own.

The reference must not share Herdsman's environment (its packages would pull ours in, or the
other way round), so :func:`ensure_venv` creates one on first use under the user's cache folder
(``$XDG_CACHE_HOME/herdsman/bench-reference-venv``, about 40 s and 250 MB with a warm pip cache),
with the versions in ``PINS``; a stamp file holding the pins makes later calls instant, and a
change of pins rebuilds it. pip's progress goes to stderr: the benchmark's stdout stays one
JSON line.

:func:`start` writes a project folder (this folder's ``graph.py`` as ``reference_graph.py``, and a ``langgraph.json`` naming
its graph ``lead_agent``, as Herdsman's assistant is named) and runs
``langgraph dev --no-browser --no-reload --port N --n-jobs-per-worker J`` in it: the in-memory
runtime, no reloader process watching files, no browser, no analytics.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

# Versions on the package index when this was written; langgraph and langchain-core are the
# ones Herdsman runs on, so the comparison is about the servers, not the libraries under them.
PINS = (
    "langgraph-cli[inmem]==0.4.40",
    "langgraph-api==0.16.7",
    "langgraph-runtime-inmem==0.36.7",
    "langgraph==1.2.24",
    "langchain==1.5.2",
    "langchain-core==1.8.3",
)
GRAPH_FILE = Path(__file__).with_name("graph.py")
GRAPH_MODULE = "reference_graph.py"  # its name in the project folder


def venv_dir() -> Path:
    """Where the reference's virtual environment lives (overridable with ``HERDSMAN_REFERENCE_VENV``)."""
    if override := os.environ.get("HERDSMAN_REFERENCE_VENV"):
        return Path(override)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "herdsman" / "bench-reference-venv"


def ensure_venv(where: Path | None = None) -> Path:
    """The reference venv, created with ``PINS`` unless its stamp already holds them; its path.

    Raises ``subprocess.CalledProcessError`` when pip cannot install (no package index)."""
    where = where or venv_dir()
    stamp = where / "herdsman-pins.json"
    if stamp.is_file() and json.loads(stamp.read_text()) == list(PINS) and (where / "bin" / "langgraph").exists():
        return where
    print(
        f"Creating the reference server's virtual environment in {where} ({', '.join(PINS)}); "
        "about a minute the first time...",
        file=sys.stderr,
        flush=True,
    )
    shutil.rmtree(where, ignore_errors=True)
    where.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, stdout=sys.stderr)
    subprocess.run(
        [
            str(where / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--progress-bar",
            "on",
            *PINS,
        ],
        check=True,
        stdout=sys.stderr,
    )
    stamp.write_text(json.dumps(list(PINS)))
    print("The reference venv is ready.", file=sys.stderr, flush=True)
    return where


def write_project(folder: Path) -> Path:
    """A ``langgraph dev`` project in ``folder``: the scripted graph and its ``langgraph.json``."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(GRAPH_FILE, folder / GRAPH_MODULE)
    config = {"dependencies": ["."], "graphs": {"lead_agent": f"./{GRAPH_MODULE}:graph"}}
    (folder / "langgraph.json").write_text(json.dumps(config, indent=2))
    return folder


def start(venv: Path, folder: Path, port: int, jobs: int) -> subprocess.Popen:
    """Start ``langgraph dev`` on ``port`` for the project in ``folder`` (not waited for: see ``/ok``).

    Its output goes to ``folder/server.log`` (a pipe nobody reads would stall it once full)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        LANGSMITH_TRACING="false",
        LANGCHAIN_TRACING_V2="false",
        REFERENCE_FILES_ROOT=str(folder / "threads"),
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
    )
    with open(folder / "server.log", "ab") as log:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            [
                str(venv / "bin" / "langgraph"),
                "dev",
                "--no-browser",
                "--no-reload",
                "--port",
                str(port),
                "--n-jobs-per-worker",
                str(jobs),
                "--config",
                "langgraph.json",
                "--server-log-level",
                "ERROR",
            ],
            cwd=folder,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def version(venv: Path) -> str:
    """The langgraph-api version the venv holds, e.g. ``langgraph-api 0.16.7``."""
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import importlib.metadata as m; print(m.version('langgraph-api'))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return f"langgraph-api {out.stdout.strip()}"
