"""Red team: a symlink swapped mid-call must never carry a host-side file access out of its thread.

Finding 2 of the hardening issue: code in the sandbox loops ``renameat2(RENAME_EXCHANGE)``
between a real folder of its workspace and a symlink to another thread's workspace (relative or
absolute) or to a host folder. Host-side accesses that check a path and then open it crossed
hundreds of times in a few thousand tries. Here a swapper process does that as fast as it can
while a pool of workers (as parallel sub-agents would) hammers every host-side access: the file
tools (read, write, append, str_replace, ls, glob, grep), the snapshot walk, the files listing
and the artifact download of the gateway, the upload move and the channel outputs listing.

It asserts 0 crossings: no secret of the other thread or the host read, listed or matched, no
file created outside the thread, and that the race was really run (thousands of swaps, and
the operations saw both states of the swapped folder).
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from herdsman.config.schema import HerdsmanConfig
from herdsman.sandbox import LocalSandboxProvider
from herdsman.sandbox.base import SandboxError
from herdsman.sandbox.tools import SandboxTools
from herdsman_gateway.routes.artifacts import open_download
from herdsman_gateway.routes.files import walk as files_walk

SECRET = "OTHER-THREAD-SECRET-7f3a"
HOST_SECRET = "HOST-SECRET-91c2"
TRIES = 3000

SWAPPER = textwrap.dedent(
    """
    import ctypes, os, sys
    libc = ctypes.CDLL(None, use_errno=True)
    AT_FDCWD, RENAME_EXCHANGE = -100, 2
    a, b = sys.argv[1].encode(), sys.argv[2].encode()
    swaps = 0
    stop = sys.argv[3]
    while not os.path.exists(stop):
        for _ in range(200):
            if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0:
                swaps += 1
    print(swaps)
    """
)


def _have_renameat2() -> bool:
    return hasattr(ctypes.CDLL(None), "renameat2")


pytestmark = pytest.mark.skipif(not _have_renameat2(), reason="libc has no renameat2")


class _Tool:
    """Calls a SandboxTools method the way the tool node does, for thread ``tid``."""

    def __init__(self, tools: SandboxTools, tid: str) -> None:
        self.tools = tools
        self.runtime = type("Runtime", (), {"config": {"configurable": {"thread_id": tid}}})()

    def __call__(self, name: str, *args: object, **kwargs: object) -> str:
        result = getattr(self.tools, name)(*args, runtime=self.runtime, **kwargs)
        return result[0] if isinstance(result, tuple) else result


@pytest.fixture
def arena(tmp_path: Path) -> Iterator[dict]:
    """Two threads; t2 holds a secret; t1's workspace has a folder ``d`` and a link ``l``."""
    config = HerdsmanConfig.model_validate(
        {
            "home": str(tmp_path / "home"),
            "skills": {"enabled": False},
            "sandbox": {"isolation": "none", "allow_unisolated_bash": True},
        }
    )
    provider = LocalSandboxProvider(config)
    victim = provider.acquire("t2")
    (victim.paths.workspace / "f.txt").write_text(SECRET + "\n")
    (victim.paths.workspace / "t2-only-entry").mkdir()
    host_dir = Path(tempfile.mkdtemp(prefix="host-", dir=tmp_path))
    (host_dir / "f.txt").write_text(HOST_SECRET + "\n")
    attacker = provider.acquire("t1")
    ws = attacker.paths.workspace
    (ws / "d").mkdir()
    (ws / "d" / "f.txt").write_text("mine\n")
    yield {
        "provider": provider,
        "attacker": attacker,
        "victim": victim,
        "ws": ws,
        "host_dir": host_dir,
        "tools": SandboxTools(provider, config.sandbox),
    }
    provider.close()


def _targets(arena: dict) -> list[str]:
    """Link targets: the other thread relative and absolute, and a host folder."""
    return [
        "../../../t2/user-data/workspace",
        str(arena["victim"].paths.workspace),
        str(arena["host_dir"]),
    ]


def _run_race(arena: dict, target: str, operations: list, tries: int) -> tuple[int, list[str], int]:
    """Swap ``d`` and ``l`` (-> target) while the operations run; (swaps, outputs, errors)."""
    ws: Path = arena["ws"]
    link = ws / "l"
    if link.is_symlink():
        link.unlink()
    os.symlink(target, link)
    stop = ws.parent.parent / "stop-swapping"  # outside user-data: the swapper's off switch
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(ws / "d"), str(link), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    outputs: list[str] = []
    errors = 0
    lock = threading.Lock()

    def one(i: int) -> None:
        nonlocal errors
        op = operations[i % len(operations)]
        try:
            out = op(i)
        except SandboxError as exc:
            out = f"error: {exc}"
        except Exception as exc:  # noqa: BLE001 - tool errors are ToolException
            out = f"error: {exc}"
        with lock:
            outputs.append(str(out))
            errors += str(out).startswith("error")

    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(one, range(tries)))
    finally:
        stop.touch()
        swaps = int(swapper.communicate(timeout=30)[0].strip() or 0)
        stop.unlink()
        # leave d as the real folder for the next round
        if (ws / "d").is_symlink():
            os.rename(ws / "d", ws / "tmp-swap")
            os.rename(ws / "l", ws / "d")
            os.rename(ws / "tmp-swap", ws / "l")
    return swaps, outputs, errors


def _operations(arena: dict) -> list:
    attacker = arena["attacker"]
    tool = _Tool(arena["tools"], "t1")
    files = attacker.files

    def download(i: int) -> str:
        fd, _ = open_download(files, "/mnt/user-data/workspace/d/f.txt")
        try:
            return os.read(fd, 1000).decode()
        finally:
            os.close(fd)

    def upload(i: int) -> str:
        staging = attacker.paths.user_data.parent / "staging-test"
        staging.mkdir(exist_ok=True)
        (staging / f"u{i}").write_text("uploaded\n")
        folder = os.open(staging, os.O_RDONLY | os.O_DIRECTORY)
        try:
            files.move_in(folder, f"u{i}", f"/mnt/user-data/workspace/d/up-{i}.txt")
        finally:
            os.close(folder)
        return "moved"

    return [
        lambda i: tool("read_file", "d/f.txt"),
        lambda i: tool("write_file", f"d/new-{i}.txt", "planted\n"),
        lambda i: tool("write_file", "d/f.txt", "appended\n", append=True),
        lambda i: tool("str_replace", "d/f.txt", "mine", "mine"),
        lambda i: tool("ls", "d"),
        lambda i: tool("glob", "*", "d"),
        lambda i: tool("grep", "SECRET", "d"),
        lambda i: "\n".join(sorted(attacker.snapshot().entries)),
        lambda i: "\n".join(e.path for e in files_walk(files, "/mnt/user-data/workspace/d", 2)[0]),
        download,
        upload,
        lambda i: "\n".join(e.vpath for e in files.walk("/mnt/user-data/workspace", max_depth=3)),
    ]


@pytest.mark.parametrize("which", ["relative-other-thread", "absolute-other-thread", "absolute-host-folder"])
def test_symlink_swap_race_never_crosses(arena: dict, which: str) -> None:
    target = _targets(arena)[["relative-other-thread", "absolute-other-thread", "absolute-host-folder"].index(which)]
    victim_before = sorted(p.name for p in arena["victim"].paths.workspace.iterdir())
    host_before = sorted(p.name for p in arena["host_dir"].iterdir())
    swaps, outputs, errors = _run_race(arena, target, _operations(arena), TRIES)

    assert swaps > 1000, f"the swapper only managed {swaps} swaps: the race was not exercised"
    # Both states were seen: some calls worked on the real folder, some met the link and were refused.
    assert any("mine" in out for out in outputs)
    assert errors > 0, "no call ever met the swapped link: the race was not exercised"
    crossed = [out for out in outputs if SECRET in out or HOST_SECRET in out or "t2-only-entry" in out]
    assert crossed == [], f"{len(crossed)} crossings, e.g. {crossed[:3]}"
    assert sorted(p.name for p in arena["victim"].paths.workspace.iterdir()) == victim_before
    assert sorted(p.name for p in arena["host_dir"].iterdir()) == host_before
    assert (arena["victim"].paths.workspace / "f.txt").read_text() == SECRET + "\n"
    assert (arena["host_dir"] / "f.txt").read_text() == HOST_SECRET + "\n"
    for out in outputs:  # errors name virtual paths only
        assert str(arena["ws"]) not in out and str(arena["host_dir"]) not in out
