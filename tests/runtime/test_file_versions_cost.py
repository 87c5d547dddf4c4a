"""File versions through real runs: a run that only reads files keeps the version before it and
captures nothing; files written between runs by another process (an upload through another
gateway, a leftover background job) are versioned at the next checkpoint and restore exactly."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from herdsman.client import HerdsmanClient
from herdsman.models.scripted import ScriptedChatModel
from tests.support import make_config

WS = "/mnt/user-data/workspace"
READS = {
    "tool_calls": [
        {"name": "read_file", "args": {"path": f"{WS}/notes.txt"}},
        {"name": "ls", "args": {"path": WS}},
        {"name": "glob", "args": {"pattern": "**/*.txt"}},
        {"name": "grep", "args": {"pattern": "v1"}},
    ]
}


def write_then_read() -> ScriptedChatModel:
    """A model that writes notes.txt in its first run, then only reads in the next two."""
    write = {"tool_calls": [{"name": "write_file", "args": {"path": f"{WS}/notes.txt", "content": "v1"}}]}
    return ScriptedChatModel(responses=[write, "wrote", READS, "read", READS, "read again"])


async def first_run(client: HerdsmanClient) -> tuple[Any, Any, str]:
    """Run the writing run on thread ``t``; the client's file versions, the thread's history, and its last version."""
    await client.run("write the notes", thread_id="t")
    versions = client.file_versions
    assert versions is not None
    history = versions.history("t")
    assert history is not None
    return versions, history, history.versions()[-1][1]


def work(counts) -> dict[str, int]:
    return {k: counts[k] for k in ("walked", "folders", "files_read")}


async def test_a_run_that_only_reads_captures_nothing_and_writes_by_others_are_versioned(home: Path) -> None:
    config = make_config(home, checkpointer={"type": "sqlite"})
    model = write_then_read()
    workspace = home / "threads" / "t" / "user-data" / "workspace"
    async with HerdsmanClient(config, model=model) as client:
        versions, history, written = await first_run(client)
        assert f"{WS}/notes.txt" in history.entries(written)
        seen, spent = len(history.versions()), work(history.capture_counts)

        reading = await client.run("read them", thread_id="t")
        assert "read" in reading.answer
        rows = history.versions()[seen:]
        assert len(rows) >= 3 and {root for _, root, _ in rows} == {written}  # every checkpoint: the same version
        assert work(history.capture_counts) == spent  # and no walk, no listing, no file read for any of them

        # another process writes between the runs (an upload through another gateway process)
        subprocess.run(
            [sys.executable, "-c", f"open({str(workspace / 'upload.txt')!r}, 'w').write('uploaded')"], check=True
        )
        seen = len(history.versions())
        await client.run("read them again", thread_id="t")
        first_after = history.versions()[seen]
        assert history.diff(written, first_after[1]) == {"added": [f"{WS}/upload.txt"], "removed": [], "changed": []}

        before_upload = rows[-1][0]
        versions.restore_strict("t", before_upload)
        assert sorted(p.name for p in workspace.iterdir()) == ["notes.txt"]
        versions.restore_strict("t", first_after[0])
        assert (workspace / "upload.txt").read_text() == "uploaded" and (workspace / "notes.txt").read_text() == "v1"


async def test_a_step_that_changed_nothing_is_recorded_in_the_checkpoints_own_trip(home: Path, monkeypatch) -> None:
    """On SQLite, the row giving an unchanged step's checkpoint the version before it is written
    with the checkpoint, on its thread: no trip to the capture pool for it; a history in use by
    another thread is not waited for there, and its rows are then recorded on the pool."""
    from herdsman import pools

    config = make_config(home, checkpointer={"type": "sqlite"})
    model = write_then_read()
    trips: list[str] = []
    real_run = pools.run

    async def counting_run(kind, user, fn, /, *args, **kwargs):
        if kind == pools.CAPTURES:
            trips.append(getattr(fn, "__name__", "?"))
        return await real_run(kind, user, fn, *args, **kwargs)

    monkeypatch.setattr(pools, "run", counting_run)
    async with HerdsmanClient(config, model=model) as client:
        _, history, written = await first_run(client)
        seen = len(history.versions())

        trips.clear()
        await client.run("read them", thread_id="t")
        rows = history.versions()[seen:]
        assert len(rows) >= 3 and {root for _, root, _ in rows} == {written}
        assert trips == []  # neither a capture nor a record went to the pool

        release, taken = threading.Event(), threading.Event()

        def hold() -> None:  # another thread's capture or prune holds the history
            with history._lock:
                taken.set()
                release.wait(30)

        holder = threading.Thread(target=hold)
        holder.start()
        assert taken.wait(5)
        try:
            assert not history.record_again("probe", written)  # refused at once, nothing recorded
        finally:
            release.set()
            holder.join()
        assert all(c != "probe" for c, _, _ in history.versions())

        # refused in the checkpoint's trip (in use, say): recorded on the capture pool instead
        monkeypatch.setattr(history, "record_again", lambda *args: False)
        seen = len(history.versions())
        trips.clear()
        await client.run("read them again", thread_id="t")
        rows = history.versions()[seen:]
        assert len(rows) >= 3 and {root for _, root, _ in rows} == {written}
        assert trips and set(trips) == {"record"}
