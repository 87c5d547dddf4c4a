"""A step that changed no file costs no capture work; one that did lists only its folders, and
every writer (a background process, another process, mtime tricks, links) is still versioned.

Assertions go through the versions kept (roots, diffs, restored trees) and the history's
``capture_counts`` (how many captures walked the tree, listed some folders, or did nothing),
never through time.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from herdsman.config.schema import SnapshotsConfig
from herdsman.sandbox.change_journal import ChangeJournal
from herdsman.sandbox.fs import ThreadFiles
from herdsman.sandbox.history import FileHistory
from herdsman.sandbox.paths import ThreadPaths
from tests.sandbox.test_history import tree

WS = "/mnt/user-data/workspace"


@pytest.fixture
def thread(home: Path) -> ThreadPaths:
    """A thread whose folders are made."""
    (paths := ThreadPaths.for_thread(home, "t1")).ensure_dirs()
    return paths


def history(paths: ThreadPaths, journal: ChangeJournal | None = None) -> FileHistory:
    return FileHistory(
        ThreadFiles(paths), paths.user_data.parent / "history", SnapshotsConfig(), journal=journal or ChangeJournal()
    )


def walked_root(paths: ThreadPaths) -> str:
    """The version a history without a journal (a walk of every file) makes of the files now."""
    other = paths.user_data.parent / "history-walk"
    return FileHistory(ThreadFiles(paths), other, SnapshotsConfig(), journal=False).capture()


def work(h: FileHistory) -> dict[str, int]:
    """What captures cost so far: walks of the whole tree, folder listings, files read."""
    return {k: h.capture_counts[k] for k in ("walked", "folders", "files_read")}


def populate(paths: ThreadPaths, folders: int = 20, per_folder: int = 10) -> None:
    for d in range(folders):
        (paths.workspace / f"d{d}").mkdir()
        for f in range(per_folder):
            (paths.workspace / f"d{d}" / f"f{f}.txt").write_text(f"{d}/{f}\n")


def test_a_step_that_only_read_costs_no_capture_work(thread: ThreadPaths) -> None:
    populate(thread)
    h = history(thread)
    first = h.capture()
    before = work(h)
    # what read_file, ls, glob and grep do: open, read, list
    for _ in h.files.walk(WS):
        pass
    assert h.files.read_bytes(f"{WS}/d3/f4.txt", 100) == b"3/4\n"
    (thread.workspace / "d5" / "f1.txt").read_text()
    for _ in range(5):
        assert h.capture() == first
    assert work(h) == before  # no walk, no listing, no file read
    assert h.capture_counts["skipped"] == 5


def test_a_step_that_wrote_lists_only_its_folder_and_restores_exactly(thread: ThreadPaths) -> None:
    populate(thread)
    h = history(thread)
    first, files_first = h.capture(), tree(thread)
    before = work(h)
    h.files.write_bytes(f"{WS}/d7/f2.txt", b"edited")
    h.files.write_bytes(f"{WS}/d7/new/deep/g.txt", b"new folder")
    second, files_second = h.capture(), tree(thread)
    spent = {k: work(h)[k] - before[k] for k in before}
    assert spent == {"walked": 0, "folders": 1, "files_read": 2}  # d7 listed, two files read
    assert second == walked_root(thread)  # the same version a full walk makes
    assert h.diff(first, second) == {
        "added": [f"{WS}/d7/new/deep/g.txt"],
        "removed": [],
        "changed": [f"{WS}/d7/f2.txt"],
    }
    h.restore(first)
    assert tree(thread) == files_first
    h.restore(second)
    assert tree(thread) == files_second


def test_a_background_process_writing_after_the_step_is_versioned_at_the_next_capture(thread: ThreadPaths) -> None:
    populate(thread, folders=3)
    h = history(thread)
    h.capture()
    go = thread.workspace / "go"
    target = thread.workspace / "d1" / "f1.txt"
    script = (
        "import os, sys, time\n"
        "go, target = sys.argv[1], sys.argv[2]\n"
        "while not os.path.exists(go): time.sleep(0.01)\n"
        "open(target, 'r+').write('B')\n"  # same size, in place, by another process
    )
    writer = subprocess.Popen([sys.executable, "-c", script, str(go), str(target)])
    try:
        quiet = h.capture()  # the step ended; the process lives on
        go.write_text("")
        assert writer.wait(30) == 0
    finally:
        writer.kill()
    after = h.capture()
    assert after != quiet and after == walked_root(thread)
    assert f"{WS}/d1/f1.txt" in h.diff(quiet, after)["changed"]
    h.restore(quiet)
    assert target.read_text() == "1/1\n"


def test_same_size_rewrite_with_its_times_put_back_is_versioned(thread: ThreadPaths) -> None:
    populate(thread, folders=2)
    h = history(thread)
    first = h.capture()
    target = thread.workspace / "d0" / "f3.txt"
    st = target.stat()
    target.write_text("0/X\n")  # same size
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))  # touch -d back to the old time
    second = h.capture()
    assert h.diff(first, second)["changed"] == [f"{WS}/d0/f3.txt"]
    h.restore(first)
    assert target.read_text() == "0/3\n"


@pytest.mark.parametrize("seed", [7, 11, 23])
def test_renames_deletes_modes_and_links_match_a_full_walk(thread: ThreadPaths, seed: int) -> None:
    """Random changes of every kind, each step captured with the journal and compared with the
    version a walk of every file makes; then every version restores exactly."""
    populate(thread, folders=6, per_folder=4)
    h = history(thread)
    rng = random.Random(seed)
    versions: list[tuple[str, dict[str, str]]] = [(h.capture(), tree(thread))]

    def files() -> list[Path]:
        return sorted(p for p in thread.workspace.rglob("*") if p.is_file() and not p.is_symlink())

    def folders() -> list[Path]:
        return sorted(p for p in thread.workspace.rglob("*") if p.is_dir() and not p.is_symlink())

    for step in range(60):
        for k in range(rng.randint(0, 3)):
            op = rng.choice(
                [
                    "write",
                    "same",
                    "new",
                    "rm",
                    "mv",
                    "mvdir",
                    "rmdir",
                    "mkdir",
                    "chmod",
                    "link",
                    "symlink",
                    "hard",
                    "transient",
                    "sed",
                ]
            )
            fs, ds = files(), folders()
            f = rng.choice(fs) if fs else None
            d = rng.choice(ds) if ds else thread.workspace
            if op == "write" and f:
                f.write_text(f"step {step}\n" * rng.randint(1, 3))
            elif op == "same" and f:
                st = f.stat()
                data = f.read_bytes()
                f.write_bytes(bytes(reversed(data)) if len(data) > 1 else b"z")
                os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
            elif op == "new":
                (d / f"n{step}_{k}.txt").write_text("n")
            elif op == "rm" and f:
                f.unlink()
            elif op == "mv" and f:
                f.rename(d / f"m{step}_{k}.txt")
            elif op == "mvdir" and d != thread.workspace and not (thread.workspace / f"r{step}_{k}").exists():
                d.rename(thread.workspace / f"r{step}_{k}")
            elif op == "rmdir" and d != thread.workspace:
                subprocess.run(["rm", "-rf", str(d)], check=True)
            elif op == "mkdir":
                (d / f"k{step}_{k}" / "in").mkdir(parents=True)
                (d / f"k{step}_{k}" / "in" / "x.txt").write_text("x")
            elif op == "chmod":
                (f or d).chmod(rng.choice([0o700, 0o755, 0o644]) if f else rng.choice([0o700, 0o755]))
            elif op == "symlink":
                (d / f"s{step}_{k}").symlink_to(f"../{step}_{k}")
            elif op == "hard" and f:
                os.link(f, d / f"h{step}_{k}")  # a second name: writes through either one
                (d / f"h{step}_{k}").write_text("through the other name")
            elif op == "transient" and f:
                os.link(f, d / f"t{step}_{k}")  # a second name written through, then gone
                (d / f"t{step}_{k}").write_text("through a name that is gone")
                (d / f"t{step}_{k}").unlink()
            elif op == "sed" and f:
                (f.parent / "sedtmp").write_text(f"edited at {step}\n")  # sed -i: a new file moved over
                (f.parent / "sedtmp").rename(f)
        root = h.capture()
        assert root == walked_root(thread), f"step {step}"
        versions.append((root, tree(thread)))
    assert h.capture_counts["skipped"] > 0 and h.capture_counts["folders"] > 0
    for root, files_then in rng.sample(versions, 8):
        h.restore(root)
        assert tree(thread) == files_then


def test_a_file_with_another_name_outside_is_never_trusted_to_the_journal(thread: ThreadPaths, tmp_path: Path) -> None:
    h = history(thread)
    h.files.write_bytes(f"{WS}/shared.txt", b"one")
    outside = tmp_path / "outside.txt"
    os.link(thread.workspace / "shared.txt", outside)
    first = h.capture()
    outside.write_text("two")  # no event in any watched folder
    second = h.capture()
    assert h.diff(first, second)["changed"] == [f"{WS}/shared.txt"]
    outside.unlink()


def test_too_few_watches_falls_back_to_walking(thread: ThreadPaths) -> None:
    populate(thread, folders=5)
    h = history(thread, ChangeJournal(max_watches=3))
    first = h.capture()
    h.capture()
    assert h.capture_counts["walked"] == 2 and h.capture_counts["skipped"] == 0
    (thread.workspace / "d4" / "f0.txt").write_text("changed")
    assert h.capture() != first


def test_watches_are_shared_by_threads_and_the_least_recent_gives_way(home: Path) -> None:
    journal = ChangeJournal(max_watches=12)
    a, b = ThreadPaths.for_thread(home, "a"), ThreadPaths.for_thread(home, "b")
    for paths in (a, b):
        paths.ensure_dirs()
        populate(paths, folders=4, per_folder=1)  # 8 folders each with user-data's own
    ha, hb = history(a, journal), history(b, journal)
    ha.capture()
    hb.capture()  # takes a's watches
    assert journal.watches() <= 12
    (a.workspace / "d0" / "f0.txt").write_text("changed while unwatched")
    assert ha.capture() == walked_root(a)
    assert ha.capture_counts["walked"] == 2


def test_a_forked_process_keeps_its_own_journal(thread: ThreadPaths) -> None:
    populate(thread, folders=2)
    journal = ChangeJournal()
    h = history(thread, journal)
    h.capture()
    (thread.workspace / "d1" / "f1.txt").write_text("before the fork")
    pid = os.fork()
    if pid == 0:  # a forked worker: reading the inherited descriptor would take the parent's events
        try:
            journal.take(h._journal_key)
        finally:
            os._exit(0)
    assert os.waitpid(pid, 0)[1] == 0
    assert h.capture() == walked_root(thread)
    assert h.capture_counts["folders"] == 1


def test_a_folder_moved_then_written_in_is_versioned(thread: ThreadPaths) -> None:
    populate(thread, folders=2)
    h = history(thread)
    h.capture()
    (thread.workspace / "d0").rename(thread.workspace / "moved")
    assert h.capture() == walked_root(thread)
    (thread.workspace / "moved" / "f0.txt").write_text("written after the move")
    (thread.workspace / "moved" / "f9.txt").write_text("new")
    assert h.capture() == walked_root(thread)


@pytest.mark.bwrap
def test_a_jailed_command_cannot_give_a_file_a_name_no_watch_sees(bwrap_tools) -> None:
    """The journal's blind spot, a hard link to a folder it does not watch, is closed in the
    jail: each of the thread's folders is its own mount, so ``ln`` across them fails."""
    provider, call = bwrap_tools
    paths = provider.acquire("t1").paths
    h = history(paths)
    first = h.capture()
    out = call(
        "bash",
        command="echo one > a.txt; ln a.txt /tmp/a; ln a.txt /mnt/user-data/outputs/a; ln a.txt same-folder; echo end",
    )
    text = str(out.content)
    assert text.count("Invalid cross-device link") == 2 and "end" in text
    second = h.capture()
    assert second == walked_root(paths) and h.diff(first, second)["added"] == [f"{WS}/a.txt", f"{WS}/same-folder"]
    call("bash", command="echo two > same-folder")  # a link within a folder: the thread walks while it lasts
    third = h.capture()
    assert h.diff(second, third)["changed"] == [f"{WS}/a.txt", f"{WS}/same-folder"]


def test_a_newer_history_of_the_thread_keeps_its_watches_when_the_old_one_goes(thread: ThreadPaths) -> None:
    journal = ChangeJournal()
    old = history(thread, journal)
    old.capture()
    new = history(thread, journal)  # the thread's history made again (its folder was deleted and made anew)
    new.capture()  # takes the folders' watches over: the journal trusts neither history this time
    new.capture()
    new.capture()
    assert new.capture_counts["skipped"] == 1  # the new one is trusted now
    journal.forget(old._journal_key)  # what the old history's finalizer does once it is collected
    (thread.workspace / "after.txt").write_text("written once the old history is gone")
    assert new.capture() == walked_root(thread)


def test_a_file_written_through_a_name_that_is_gone_is_versioned(thread: ThreadPaths, tmp_path: Path) -> None:
    """``ln a t; echo x > t; rm t``: the write reaches a.txt, whose folder got no event."""
    populate(thread, folders=2)
    h = history(thread)
    first = h.capture()
    target, other = thread.workspace / "d0" / "f1.txt", thread.workspace / "d1" / "t"
    os.link(target, other)
    other.write_text("through the other name")
    other.unlink()
    second = h.capture()
    assert second == walked_root(thread) and h.diff(first, second)["changed"] == [f"{WS}/d0/f1.txt"]
    # the same through a descriptor kept open past a capture: the name was gone before the write
    os.link(target, other)
    fd = os.open(other, os.O_WRONLY)
    other.unlink()
    try:
        assert h.capture() == walked_root(thread)
        os.write(fd, b"later")
    finally:
        os.close(fd)
    assert h.capture() == walked_root(thread)
    assert target.read_text().startswith("later")
    # written, then moved out of the thread's folders
    os.link(target, other)
    other.write_text("then moved out")
    other.rename(tmp_path / "out")
    assert h.capture() == walked_root(thread)
    (tmp_path / "out").unlink()
    h.capture()
    # written, deleted, and a new file of the same name moved on
    os.link(target, other)
    other.write_text("then deleted")
    other.unlink()
    other.write_text("a new file")
    other.rename(thread.workspace / "d1" / "u")
    assert h.capture() == walked_root(thread)


def test_an_edit_by_a_new_file_moved_over_lists_only_its_folder(thread: ThreadPaths) -> None:
    populate(thread, folders=3)
    h = history(thread)
    h.capture()
    before = work(h)
    tmp = thread.workspace / "d2" / ".sedXYZ"
    tmp.write_text("edited\n")  # what sed -i and atomic writers do
    tmp.rename(thread.workspace / "d2" / "f4.txt")
    assert h.capture() == walked_root(thread)
    assert {k: work(h)[k] - before[k] for k in before} == {"walked": 0, "folders": 1, "files_read": 1}


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_file_system_mounted_later_is_seen_by_its_type(tmp_path: Path) -> None:
    """The mount table is kept between calls (each thread's subvolume is a new device); a mount
    made since is still seen: a folder that becomes a tmpfs is not taken for the ext4 or btrfs
    it was on."""
    from herdsman.sandbox.change_journal import filesystem_type

    folder = tmp_path / "mnt"
    folder.mkdir()
    before = filesystem_type(str(folder.resolve()))
    assert before not in (None, "tmpfs")
    if subprocess.run(["mount", "-t", "tmpfs", "none", str(folder)], capture_output=True).returncode:
        pytest.skip("mount is not allowed here")
    try:
        assert filesystem_type(str(folder.resolve())) == "tmpfs"
    finally:
        subprocess.run(["umount", str(folder)], check=True)
    assert filesystem_type(str(folder.resolve())) == before
