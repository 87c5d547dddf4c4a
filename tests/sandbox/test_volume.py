"""The quota volume's modes (sandbox/volume.py) and the tree removal that never follows a link."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from herdsman.config.schema import QuotaVolumeConfig
from herdsman.sandbox import volume
from herdsman.sandbox.tree import remove_tree


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
