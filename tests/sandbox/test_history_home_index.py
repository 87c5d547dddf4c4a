"""The home's one index of file versions: each thread sees its own versions only, a thread made
again with a deleted thread's id starts with none, an index a thread had of its own stays in use,
and deleting a thread deletes its rows."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from herdsman.config.schema import SnapshotsConfig
from herdsman.sandbox.fs import ThreadFiles
from herdsman.sandbox.history import HOME_INDEX, FileHistory, forget_thread
from herdsman.sandbox.paths import ThreadPaths

WS = "/mnt/user-data/workspace"


def made(home: Path, thread_id: str, text: str) -> ThreadPaths:
    paths = ThreadPaths.for_thread(home, thread_id)
    paths.ensure_dirs()
    (paths.workspace / "a.txt").write_text(text)
    return paths


def history(home: Path, paths: ThreadPaths, *, own: bool = False) -> FileHistory:
    return FileHistory(
        ThreadFiles(paths),
        paths.user_data.parent / "history",
        SnapshotsConfig(),
        home_index=None if own else home / HOME_INDEX,
    )


def rows_of(home: Path, thread_id: str) -> int:
    with sqlite3.connect(home / HOME_INDEX) as db:
        return db.execute("SELECT COUNT(*) FROM versions WHERE thread = ?", (thread_id,)).fetchone()[0]


def test_threads_share_the_home_index_and_see_only_their_own_versions(home: Path) -> None:
    a, b = made(home, "a", "thread a"), made(home, "b", "thread b")
    ha, hb = history(home, a), history(home, b)
    ha.record("c1", ha.capture())
    hb.record("c1", hb.capture())  # the same checkpoint id in another thread
    (a.workspace / "a.txt").write_text("changed")
    ha.record("c2", ha.capture())

    assert [c for c, _, _ in ha.versions()] == ["c1", "c2"]
    assert [c for c, _, _ in hb.versions()] == ["c1"]
    assert not (a.user_data.parent / "history" / "index.sqlite").exists(), "no index of its own"
    ha.restore(ha.version_of("c1"))
    hb.restore(hb.version_of("c1"))
    assert (a.workspace / "a.txt").read_text() == "thread a"
    assert (b.workspace / "a.txt").read_text() == "thread b"
    assert ha.stored_bytes() > 0 and hb.stored_bytes() > 0


def test_a_thread_made_again_with_a_deleted_thread_s_id_has_none_of_its_versions(home: Path) -> None:
    old = made(home, "t", "the first owner's text")
    first = history(home, old)
    first.record("c1", first.capture())
    shutil.rmtree(old.user_data.parent)  # deleted by hand, with no forget_thread: only the folder goes

    again = made(home, "t", "the second owner's text")
    second = FileHistory.of(
        ThreadFiles(again), again.user_data.parent / "history", SnapshotsConfig(), home_index=home / HOME_INDEX
    )
    assert second.versions() == [] and second.stored_bytes() == 0
    assert rows_of(home, "t") == 0, "the first history's rows went when the new one was made"
    second.record("c1", second.capture())
    assert [c for c, _, _ in second.versions()] == ["c1"]
    assert first.versions() == [], "a process still holding the first history reads none of the second's rows"


def test_a_thread_with_an_index_of_its_own_keeps_using_it(home: Path) -> None:
    paths = made(home, "t", "v1")
    before = history(home, paths, own=True)  # as histories were made before the home index
    before.record("c1", before.capture())

    now = history(home, paths)
    assert [c for c, _, _ in now.versions()] == ["c1"]
    (paths.workspace / "a.txt").write_text("v2")
    now.record("c2", now.capture())
    now.restore(now.version_of("c1"))
    assert (paths.workspace / "a.txt").read_text() == "v1"
    assert not (home / HOME_INDEX).exists() or rows_of(home, "t") == 0


def test_forgetting_a_thread_deletes_its_rows_only(home: Path) -> None:
    a, b = made(home, "a", "a"), made(home, "b", "b")
    ha, hb = history(home, a), history(home, b)
    ha.record("c1", ha.capture())
    hb.record("c1", hb.capture())
    forget_thread(home, "a")
    assert rows_of(home, "a") == 0 and rows_of(home, "b") == 1
    forget_thread(home / "elsewhere", "a")  # a home with no index: nothing to do, nothing made
    assert not (home / "elsewhere" / HOME_INDEX).exists()
