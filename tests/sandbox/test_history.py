"""Versions of a thread's files: capture, diff, restore, bounds and hostile trees."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from herdsman.config.schema import SnapshotsConfig
from herdsman.sandbox.fs import ThreadFiles
from herdsman.sandbox.history import FileHistory, HistoryError
from herdsman.sandbox.paths import ThreadPaths

WS = "/mnt/user-data/workspace"


@pytest.fixture
def thread(home: Path) -> ThreadPaths:
    paths = ThreadPaths.for_thread(home, "t1")
    paths.ensure_dirs()
    return paths


def history(paths: ThreadPaths, **config) -> FileHistory:
    return FileHistory(ThreadFiles(paths), paths.user_data.parent / "history", SnapshotsConfig(**config))


def tree(paths: ThreadPaths) -> dict[str, str]:
    """Every file and link below user-data, as the sandbox would see it."""
    out = {}
    for dirpath, dirs, names in os.walk(paths.user_data):
        for name in dirs + names:
            full = Path(dirpath) / name
            rel = str(full.relative_to(paths.user_data))
            if full.is_symlink():
                out[rel] = "-> " + os.readlink(full)
            elif full.is_file():
                out[rel] = full.read_text()
    return out


def test_restore_brings_back_written_deleted_and_edited_files(thread: ThreadPaths) -> None:
    h = history(thread)
    files = h.files
    files.write_bytes(f"{WS}/a.txt", b"one")
    files.write_bytes(f"{WS}/sub/b.txt", b"two")
    v1, s1 = h.capture(), tree(thread)
    files.write_bytes(f"{WS}/a.txt", b"edited")
    files.unlink(f"{WS}/sub/b.txt")
    files.write_bytes(f"{WS}/sub/deeper/c.txt", b"new")
    files.make_link(f"{WS}/link", f"{WS}/a.txt")
    v2, s2 = h.capture(), tree(thread)
    assert h.diff(v1, v2) == {
        "added": [f"{WS}/link", f"{WS}/sub/deeper/c.txt"],
        "removed": [f"{WS}/sub/b.txt"],
        "changed": [f"{WS}/a.txt"],
    }
    report = h.restore(v1)
    assert tree(thread) == s1 and not (thread.workspace / "sub" / "deeper").exists()
    assert f"{WS}/sub/deeper/c.txt" in report.removed and f"{WS}/a.txt" in report.written
    h.restore(v2)
    assert tree(thread) == s2
    assert h.capture() == v2  # the same files, the same version


def test_a_file_replaced_by_a_folder_and_back(thread: ThreadPaths) -> None:
    h = history(thread)
    h.files.write_bytes(f"{WS}/x", b"file")
    v1 = h.capture()
    h.files.unlink(f"{WS}/x")
    h.files.write_bytes(f"{WS}/x/inner.txt", b"now a folder")
    v2 = h.capture()
    h.restore(v1)
    assert (thread.workspace / "x").read_text() == "file"
    h.restore(v2)
    assert (thread.workspace / "x" / "inner.txt").read_text() == "now a folder"


def test_unchanged_steps_share_one_version_and_store_nothing_new(thread: ThreadPaths) -> None:
    h = history(thread)
    for i in range(50):
        h.files.write_bytes(f"{WS}/f{i}.txt", b"x" * 1000)
    first = h.capture()
    stored = h.stored_bytes()
    assert h.capture() == first and h.stored_bytes() == stored
    h.files.write_bytes(f"{WS}/f7.txt", b"y" * 1000)
    h.capture()
    grown = h.stored_bytes() - stored
    assert 1000 <= grown < 1000 + 8000  # the changed file and the listings on its path


def test_a_link_out_of_the_sandbox_is_kept_as_a_link_never_followed(thread: ThreadPaths, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")
    os.symlink(secret, thread.workspace / "leak")
    os.symlink("/etc", thread.workspace / "etc")
    h = history(thread)
    v = h.capture()
    stored = b"".join(
        p.read_bytes() for p in (thread.user_data.parent / "history" / "objects").rglob("*") if p.is_file()
    )
    assert b"host secret" not in stored and b"root:" not in stored
    os.unlink(thread.workspace / "leak")
    h.restore(v)
    assert os.readlink(thread.workspace / "leak") == str(secret)  # the link again, as it was
    assert secret.read_text() == "host secret"


def test_a_huge_file_is_refused_without_being_read(thread: ThreadPaths) -> None:
    with open(thread.workspace / "huge.bin", "wb") as f:
        f.write(b"x" * 2 * 1024 * 1024)
    h = history(thread, max_bytes=1024 * 1024)
    with pytest.raises(HistoryError, match="max_bytes"):
        h.capture()
    assert h.stored_bytes() == 0


def test_a_sparse_file_is_stored_by_its_data(thread: ThreadPaths) -> None:
    with open(thread.workspace / "huge.bin", "wb") as f:
        f.write(b"start")
        f.truncate(10 * 1024 * 1024 * 1024)  # sparse: 10 GiB that would take minutes to read
    h = history(thread, max_bytes=1024 * 1024)
    v = h.capture()
    assert h.stored_bytes() < 64 * 1024
    os.unlink(thread.workspace / "huge.bin")
    h.restore(v)
    back = thread.workspace / "huge.bin"
    assert back.stat().st_size == 10 * 1024**3 and back.stat().st_blocks * 512 < 1024 * 1024
    assert back.open("rb").read(5) == b"start"


def test_old_versions_are_pruned_and_their_objects_freed(thread: ThreadPaths, monkeypatch) -> None:
    import herdsman.sandbox.history as history_module

    monkeypatch.setattr(history_module, "SWEEP_GRACE", 0.0)  # objects are otherwise safe for 10 minutes
    h = history(thread, keep_last=3)
    for i in range(6):
        h.files.write_bytes(f"{WS}/note.txt", f"version {i}".encode() * 100)
        h.record(f"cp{i}", h.capture())
        h.prune()
    kept = [c for c, root, _ in h.versions() if root is not None]
    assert kept == ["cp3", "cp4", "cp5"]
    with pytest.raises(HistoryError, match="not kept"):
        h.version_of("cp0")
    contents = [p.read_bytes() for p in (thread.user_data.parent / "history" / "objects").rglob("*") if p.is_file()]
    assert not any(c.startswith(b"version 0") for c in contents)  # freed
    report = h.restore(h.version_of("cp3"))
    assert (thread.workspace / "note.txt").read_text() == "version 3" * 100
    h.restore(report.before)  # the files just before the restore are kept: it can be undone
    assert (thread.workspace / "note.txt").read_text() == "version 5" * 100
    assert h.forget({"cp5"}) == 5 and [c for c, _, _ in h.versions()][0] == "cp5"


def test_names_the_virtual_paths_cannot_address_are_left_alone(thread: ThreadPaths) -> None:
    """'x ' would be read and written as 'x' (paths are stripped): such entries are kept out of
    versions, so a restore neither stores the wrong file nor deletes them."""
    (thread.workspace / "x").write_text("the real x")
    (thread.workspace / "x ").write_text("trailing space")
    (thread.workspace / "notes.txt\n").write_text("newline")
    os.mkdir(thread.workspace / b"bad\xff".decode("utf-8", "surrogateescape"))
    h = history(thread)
    v = h.capture()
    assert {p for p in h.entries(v) if p.startswith(f"{WS}/")} == {f"{WS}/x"}
    (thread.workspace / "x").write_text("changed")
    report = h.restore(v)
    assert report.failed == [] and (thread.workspace / "x").read_text() == "the real x"
    assert (thread.workspace / "x ").read_text() == "trailing space"
    assert (thread.workspace / "notes.txt\n").exists()


def test_a_restore_goes_past_an_entry_it_cannot_change_and_says_so(thread: ThreadPaths) -> None:
    h = history(thread)
    h.files.write_bytes(f"{WS}/a.txt", b"kept")
    v = h.capture()
    h.files.write_bytes(f"{WS}/later/b.txt", b"new")
    os.mkfifo(thread.workspace / "later" / "pipe")  # not kept in versions: its folder cannot go
    h.files.write_bytes(f"{WS}/a.txt", b"edited")
    report = h.restore(v)
    assert (thread.workspace / "a.txt").read_text() == "kept"
    assert not (thread.workspace / "later" / "b.txt").exists()
    assert any(f.startswith(f"{WS}/later:") for f in report.failed)


def test_folder_modes_come_back(thread: ThreadPaths) -> None:
    h = history(thread)
    h.files.make_dir(f"{WS}/private", 0o700)
    os.chmod(thread.workspace / "private", 0o700)
    v = h.capture()
    os.rmdir(thread.workspace / "private")
    h.restore(v)
    assert (thread.workspace / "private").stat().st_mode & 0o777 == 0o700


def _open_index_files() -> int:
    """How many of this process's descriptors are open on a file-version index."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        count += "index.sqlite" in target
    return count


def test_a_process_that_saw_many_threads_keeps_few_indexes_open(home: Path, monkeypatch) -> None:
    """Each history keeps its index open between uses, but only the most recently used ones do:
    histories of 3x the limit stay usable (one closed is opened again) while the descriptors open
    on indexes stay bounded (CI ran out of select()'s 1024 with one held per thread forever)."""
    from herdsman.sandbox import history as module

    monkeypatch.setattr(module, "MAX_OPEN_INDEXES", 4)
    monkeypatch.setattr(module, "_OPEN", module.OrderedDict())
    before = _open_index_files()
    kept = []
    for n in range(12):
        paths = ThreadPaths.for_thread(home, f"many-{n}")
        paths.ensure_dirs()
        (paths.user_data / "workspace" / "a.txt").write_text(f"thread {n}")
        h = history(paths)
        h.record(f"c{n}", h.capture())
        kept.append((paths, h))
        assert _open_index_files() - before <= 4 * 3  # the db, its -wal and -shm
    # the first histories had their index closed; they still answer and record
    for n, (paths, h) in enumerate(kept[:3]):
        (paths.user_data / "workspace" / "a.txt").write_text("changed")
        h.record(f"d{n}", h.capture())
        assert [c for c, _, _ in h.versions()] == [f"c{n}", f"d{n}"]
        h.restore(h.version_of(f"c{n}"))
        assert tree(paths)["workspace/a.txt"] == f"thread {n}"
    assert _open_index_files() - before <= 4 * 3
