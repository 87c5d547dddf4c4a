"""Cost of keeping a version of a thread's files at each step (``sandbox.snapshots``).

For workspaces of 100, 1,000 and 10,000 small files (in folders of 100), one file is changed
before each step and a version captured (``FileHistory.capture``, as the checkpointer does after
each checkpoint); the median time is ``snapshot_ms_p50_<n>``, and ``unchanged_ms_p50_<n>`` is a
step that changed nothing (``record_ms_p50_<n>``: that step's capture and the record of its
checkpoint, what a checkpoint of a step that only read files costs). The ``*_cpu_ms_*`` figures
are the same steps in CPU time of the measuring thread (steadier on a shared machine).
``--no-journal`` captures without the change journal (every capture walks every file, as before
it). Then a 100 MB workspace (100 files of 1 MB) goes through 50 steps that each rewrite one
1 MB file: ``bytes_per_step`` is what the store grew by per step, and ``restore_ms`` the time to
bring back the version before those steps (50 files of 1 MB to write back). Prints one JSON
line. Targets: under 20 ms per step at 1,000 files with one changed; a step that changed nothing
under 1 ms at 10,000 files; ``bytes_per_step`` about 1 MB.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
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


JOURNAL = True  # --no-journal: every capture walks every file


def new_thread(name: str) -> tuple[ThreadPaths, FileHistory]:
    """A fresh thread folder and its history (1 GiB bound, every version kept)."""
    home = Path(tempfile.mkdtemp(prefix=f"snapshots-{name}-"))
    atexit.register(shutil.rmtree, home, ignore_errors=True)  # the 100 MB workspace and its versions
    paths = ThreadPaths.for_thread(home, "bench")
    paths.ensure_dirs()
    config = SnapshotsConfig(max_bytes=4 * 1024**3, keep_last=10_000)
    directory = paths.user_data.parent / "history"
    options = {} if JOURNAL else {"journal": False}
    return paths, FileHistory(ThreadFiles(paths), directory, config, **options)


class Timed:
    """Wall and CPU (this thread's) milliseconds of each block run under it."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def __enter__(self) -> Timed:
        self._wall, self._cpu = time.perf_counter(), time.thread_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cpu.append((time.thread_time() - self._cpu) * 1000)
        self.wall.append((time.perf_counter() - self._wall) * 1000)


def small_files(n: int, steps: int) -> dict[str, float]:
    """Median wall and CPU ms of a step with one file changed, of one with none, and of one with
    none plus the record of its checkpoint, for ``n`` files."""
    paths, history = new_thread(str(n))
    for i in range(n):
        folder = paths.workspace / f"d{i % max(1, n // 100)}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i}.txt").write_text(f"file {i}\n")
    history.capture()
    changed, same, recorded = Timed(), Timed(), Timed()
    for step in range(steps):
        (paths.workspace / "d0" / "f0.txt").write_text(f"step {step}\n")
        with changed:
            history.record(f"changed-{step}", history.capture())
        with same:
            history.capture()
        with recorded:
            history.record(f"same-{step}", history.capture())
    figures: dict[str, float] = {}
    for name, timed in (("snapshot", changed), ("unchanged", same), ("record", recorded)):
        figures[f"{name}_ms_p50_{n}"] = round(statistics.median(timed.wall), 3)
        figures[f"{name}_cpu_ms_p50_{n}"] = round(statistics.median(timed.cpu), 3)
    return figures


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
    parser.add_argument(
        "--no-journal", action="store_true", help="capture without the change journal (walk every file)"
    )
    args = parser.parse_args()
    global JOURNAL
    JOURNAL = not args.no_journal
    figures: dict[str, float] = {}
    with Progress(console=Console(stderr=True)) as progress:
        sizes = [int(s) for s in args.sizes.split(",")]
        task = progress.add_task("file counts", total=len(sizes))
        for n in sizes:
            figures.update(small_files(n, args.steps))
            progress.advance(task)
        per_step, restore_ms = big_workspace(args.big_steps, progress)
    figures["bytes_per_step"] = round(per_step)
    figures["restore_ms"] = round(restore_ms, 1)
    print(json.dumps(figures))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
