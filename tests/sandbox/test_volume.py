"""The quota volume's modes (sandbox/volume.py) and the tree removal that never follows a link."""

from __future__ import annotations

import errno
import json
import multiprocessing
import os
from pathlib import Path

import pytest

from herdsman.config.schema import QuotaVolumeConfig
from herdsman.sandbox import user_quota, volume
from herdsman.sandbox.tree import remove_tree
from tests.sandbox.volume_support import own_quota_volume


@pytest.fixture
def not_root(monkeypatch):
    monkeypatch.setattr(volume.os, "geteuid", lambda: 1000)
    volume._volume.cache_clear()
    yield
    volume._volume.cache_clear()


def test_off_and_no_quota_mean_no_volume() -> None:
    assert volume.quota_volume(QuotaVolumeConfig(mode="off"), 100) is None
    assert volume.quota_volume(QuotaVolumeConfig(mode="required"), None) is None


def test_required_without_root_names_the_fix(not_root, tmp_path: Path) -> None:
    with pytest.raises(volume.QuotaVolumeError, match="not run as root.*mode: auto"):
        volume.quota_volume(QuotaVolumeConfig(mode="required", path=tmp_path / "v"), 100)


def test_auto_without_root_falls_back_to_the_measured_quota(not_root, tmp_path: Path) -> None:
    assert volume.quota_volume(QuotaVolumeConfig(mode="auto", path=tmp_path / "v"), 100) is None
    assert not (tmp_path / "v.img").exists()


def test_remove_tree_removes_links_not_their_targets(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    tree = tmp_path / "tree"
    (tree / "a" / "b").mkdir(parents=True)
    (tree / "a" / "b" / "f").write_text("x")
    os.symlink(outside, tree / "a" / "link")
    os.chmod(tree / "a", 0o500)
    assert remove_tree(tree) == []
    assert not tree.exists() and (outside / "keep.txt").read_text() == "keep"
    assert remove_tree(tree) == []  # gone already: no error


# -- on the machine's volume: placement against the sweeps of other processes --------------------

MIB = 1024 * 1024


@pytest.fixture
def own_volume():
    """A quota volume of the test's own on the machine's (volume_support.py)."""
    with own_quota_volume() as own:
        yield own


def _sweep(root: str) -> int:
    return volume.QuotaVolume(Path(root)).sweep(grace=0.0)  # as test_a_moved_home_keeps_its_threads_files sweeps


def _fill(folder: Path, size: int) -> None:
    fd = os.open(folder / "big", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.posix_fallocate(fd, 0, size)
    finally:
        os.close(fd)


def test_a_sweep_in_another_process_leaves_a_thread_being_placed(own_volume, tmp_path: Path, monkeypatch) -> None:
    """Found in a web UI test: "cannot set its disk quota on the volume (No such file or
    directory)". Another process's sweep (a test's, with no grace) removed the thread's folder
    while the thread was being placed, before its link was made."""
    home = tmp_path / "home"
    home.mkdir()
    swept: list[int] = []
    set_limit = volume.set_limit

    def set_limit_then_sweep(fd: int, group: int, limit: int | None) -> None:
        set_limit(fd, group, limit)
        if not swept:  # the subvolume made, its link not yet: another process sweeps now
            with multiprocessing.get_context("fork").Pool(1) as pool:
                swept.append(pool.apply(_sweep, (str(own_volume.root),)))

    monkeypatch.setattr(volume, "set_limit", set_limit_then_sweep)
    assert own_volume.place(home, "t1", 100 * MIB, user_quota.Owner("ana", 1024 * MIB))
    assert swept == [0]
    (home / "threads" / "t1" / "user-data" / "notes.md").write_text("kept")
    assert own_volume.place(home, "t1", 100 * MIB, user_quota.Owner("ana", 1024 * MIB))
    assert (home / "threads" / "t1" / "user-data" / "notes.md").read_text() == "kept"


@pytest.mark.parametrize("change", ["owner noted after placing", "group dropped by a sweep"])
def test_a_thread_whose_group_is_not_its_users_any_more_is_joined_again(own_volume, tmp_path: Path, change) -> None:
    """The thread's note named a group that is not its user's (the owner was noted after its
    files were placed) or that is gone (a sweep dropped it): placing it again failed with "No
    such file or directory", for good. It is counted against its user's bound instead."""
    home = tmp_path / "home"
    home.mkdir()
    first = user_quota.Owner(None if change.startswith("owner") else "ana", 1024 * MIB)
    assert own_volume.place(home, "t1", 100 * MIB, first)
    if change.startswith("group"):  # what drop_gone_groups leaves: no entry, no group
        index_file = next(own_volume.root.glob(".user-groups/*/*"))
        group = user_quota.qgroup(1, json.loads(index_file.read_text())["index"])
        fd = os.open(own_volume.thread_data(home, "t1"), os.O_RDONLY | os.O_DIRECTORY)
        try:
            user_quota._assign(fd, user_quota.qgroup(0, user_quota.subvolume_id(fd)), group, assign=False)
            user_quota._create(fd, group, False)
        finally:
            os.close(fd)
        index_file.unlink()
    assert own_volume.place(home, "t1", 100 * MIB, user_quota.Owner("ana", 4 * MIB))
    with pytest.raises(OSError) as refused:  # ana's bound holds the thread's writes
        _fill(home / "threads" / "t1" / "user-data", 8 * MIB)
    assert refused.value.errno == errno.EDQUOT
