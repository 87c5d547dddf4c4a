"""Cost of keeping a version of a thread's files at each step (``sandbox.snapshots``).

For workspaces of 100, 1,000 and 10,000 small files, one file is changed before each step and a
version captured (``FileHistory.capture``, as the checkpointer does after each checkpoint); the
median time is ``snapshot_ms_p50_<n>``, and ``unchanged_ms_p50_<n>`` is a step that changed
nothing. Then a 100 MB workspace (100 files of 1 MB) goes through 50 steps that each rewrite one
1 MB file: ``bytes_per_step`` is what the store grew by per step, and ``restore_ms`` the time to
bring back the version before those steps (50 files of 1 MB to write back). Prints one JSON
line. Targets: under 20 ms per step at 1,000 files with one changed; ``bytes_per_step`` about
1 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from herdsman.config.schema import SnapshotsConfig
from herdsman.sandbox.fs import ThreadFiles
from herdsman.sandbox.history import FileHistory
from herdsman.sandbox.paths import ThreadPaths

WS = "/mnt/user-data/workspace"


def new_thread(name: str) -> tuple[ThreadPaths, FileHistory]:
    """A fresh thread folder and its history (1 GiB bound, every version kept)."""
    home = Path(tempfile.mkdtemp(prefix=f"snapshots-{name}-"))
    paths = ThreadPaths.for_thread(home, "bench")
    paths.ensure_dirs()
    config = SnapshotsConfig(max_bytes=4 * 1024**3, keep_last=10_000)
    return paths, FileHistory(ThreadFiles(paths), paths.user_data.parent / "history", config)


def small_files(n: int, steps: int) -> tuple[float, float]:
    """(median ms of a step with one file changed, median ms of a step with none) for ``n`` files."""
    paths, history = new_thread(str(n))
    for i in range(n):
        folder = paths.workspace / f"d{i % max(1, n // 100)}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i}.txt").write_text(f"file {i}\n")
    history.capture()
    changed, same = [], []
    for step in range(steps):
        (paths.workspace / "d0" / "f0.txt").write_text(f"step {step}\n")
        started = time.perf_counter()
        history.capture()
        changed.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        history.capture()
        same.append((time.perf_counter() - started) * 1000)
    return statistics.median(changed), statistics.median(same)


def big_workspace(steps: int, progress: Progress) -> tuple[float, float]:
    """(bytes stored per step, ms to restore the first version) for 100 files of 1 MB."""
    paths, history = new_thread("big")
    for i in range(100):
        (paths.workspace / f"big{i}.bin").write_bytes(os.urandom(1024 * 1024))
    first = history.capture()
    before = history.stored_bytes()
    task = progress.add_task("50 steps of 1 MB", total=steps)
    for step in range(steps):
        (paths.workspace / f"big{step % 100}.bin").write_bytes(os.urandom(1024 * 1024))
        history.capture()
        progress.advance(task)
    per_step = (history.stored_bytes() - before) / steps
    started = time.perf_counter()
    history.restore(first)
    return per_step, (time.perf_counter() - started) * 1000


def main() -> None:
    """Run the measurements and print the JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100,1000,10000", help="workspace sizes in files")
    parser.add_argument("--steps", type=int, default=20, help="steps measured per size")
    parser.add_argument("--big-steps", type=int, default=50, help="1 MB steps on the 100 MB workspace")
    args = parser.parse_args()
    figures: dict[str, float] = {}
    with Progress(console=Console(stderr=True)) as progress:
        sizes = [int(s) for s in args.sizes.split(",")]
        task = progress.add_task("file counts", total=len(sizes))
        for n in sizes:
            changed, same = small_files(n, args.steps)
            figures[f"snapshot_ms_p50_{n}"] = round(changed, 2)
            figures[f"unchanged_ms_p50_{n}"] = round(same, 2)
            progress.advance(task)
        per_step, restore_ms = big_workspace(args.big_steps, progress)
    figures["bytes_per_step"] = round(per_step)
    figures["restore_ms"] = round(restore_ms, 1)
    print(json.dumps(figures))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
