"""File versions through real runs: a run that only reads files keeps the version before it and
captures nothing; files written between runs by another process (an upload through another
gateway, a leftover background job) are versioned at the next checkpoint and restore exactly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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


def work(counts) -> dict[str, int]:
    return {k: counts[k] for k in ("walked", "folders", "files_read")}


async def test_a_run_that_only_reads_captures_nothing_and_writes_by_others_are_versioned(home: Path) -> None:
    config = make_config(home, checkpointer={"type": "sqlite"})
    model = ScriptedChatModel(
        responses=[
            {"tool_calls": [{"name": "write_file", "args": {"path": f"{WS}/notes.txt", "content": "v1"}}]},
            "wrote",
            READS,
            "read",
            READS,
            "read again",
        ]
    )
    workspace = home / "threads" / "t" / "user-data" / "workspace"
    async with HerdsmanClient(config, model=model) as client:
        await client.run("write the notes", thread_id="t")
        versions = client.file_versions
        assert versions is not None
        history = versions.history("t")
        assert history is not None
        written = history.versions()[-1][1]
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
