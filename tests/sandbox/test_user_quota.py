"""The user table of the per-user disk bound and the thread owner notes (no volume needed)."""

from __future__ import annotations

import errno
import json
import multiprocessing
from pathlib import Path

import pytest

from herdsman.config.schema import SandboxConfig
from herdsman.sandbox import user_quota
from herdsman.sandbox.owners import owner_of, record_owner
from herdsman.sandbox.user_quota import LEGACY_GAP, UserGroups
from herdsman.sandbox.volume import thread_owner


def test_each_user_of_each_home_gets_a_group_of_its_own_and_keeps_it(tmp_path: Path) -> None:
    groups = UserGroups(tmp_path)
    ana, bo, local = groups.index_of("h1", "ana"), groups.index_of("h1", "bo"), groups.index_of("h1", None)
    other_home = groups.index_of("h2", "ana")
    assert len({ana, bo, local, other_home}) == 4
    assert UserGroups(tmp_path).index_of("h1", "ana") == ana  # read back from the table, not handed out again


def test_a_damaged_table_is_an_error_that_says_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "users.json").write_text("{not json")
    with pytest.raises(OSError, match="damaged; restore it"):
        UserGroups(tmp_path).index_of("h1", "ana")


def test_a_lookup_reads_its_own_entry_only(tmp_path: Path) -> None:
    groups = UserGroups(tmp_path)
    ana = groups.index_of("h1", "ana")
    bo = groups.index_of("h2", "bo")
    (tmp_path / ".user-groups" / "h2" / user_quota._entry_name("bo")).write_text("{not json")
    assert groups.index_of("h1", "ana") == ana  # another home's damaged entry is not read
    assert groups.index_of("h1", "a/b\udcff") not in (ana, bo)  # any user name
    with pytest.raises(OSError, match="is damaged; restore it"):
        groups.index_of("h2", "bo")
    with pytest.raises(OSError):
        groups.index_of("../h1", "ana")


def test_the_table_of_earlier_versions_is_carried_over_once(tmp_path: Path) -> None:
    (tmp_path / "users.json").write_text(json.dumps({"h1/ana": 3, "h1/": 7, "h2/a/b": 5}))
    groups = UserGroups(tmp_path)
    assert (groups.index_of("h1", "ana"), groups.index_of("h1", None), groups.index_of("h2", "a/b")) == (3, 7, 5)
    # an earlier version still running goes on handing out 8, 9, ... from its table: new ids stay clear of them
    assert groups.index_of("h3", "cy") == 8 + LEGACY_GAP
    (tmp_path / "users.json").write_text("{not json")  # read once only
    assert groups.index_of("h3", "dee") == 9 + LEGACY_GAP
    assert groups.index_of("h1", "ana") == 3


def _hand_out(root: str, worker: int) -> list[int]:
    groups = UserGroups(Path(root))
    return [groups.index_of(f"h{n % 3}", f"w{worker}-{n}") for n in range(15)]


def test_processes_handing_out_at_once_never_share_an_id(tmp_path: Path) -> None:
    with multiprocessing.get_context("fork").Pool(4) as pool:
        handed = pool.starmap(_hand_out, [(str(tmp_path), worker) for worker in range(4)])
    ids = [index for batch in handed for index in batch]
    assert sorted(ids) == list(range(1, 61))
    assert _hand_out(str(tmp_path), 2) == handed[2]  # and each finds its own again


def test_groups_of_gone_homes_are_dropped_unless_busy(tmp_path: Path, monkeypatch) -> None:
    groups = UserGroups(tmp_path)
    kept, gone, busy = groups.index_of("here", "ana"), groups.index_of("gone", "ana"), groups.index_of("busy", "bo")
    (tmp_path / "here").mkdir()
    destroyed: list[int] = []

    def destroy(fd: int, group: int, create: bool) -> None:
        assert not create
        if group == user_quota.qgroup(1, busy):
            raise OSError(errno.EBUSY, "busy")
        destroyed.append(group)

    monkeypatch.setattr(user_quota, "_create", destroy)
    assert groups.drop_gone_groups() == 1
    assert destroyed == [user_quota.qgroup(1, gone)]
    assert sorted(p.name for p in (tmp_path / ".user-groups").iterdir()) == [".next", "busy", "here"]
    assert groups.index_of("here", "ana") == kept and groups.index_of("busy", "bo") == busy
    assert groups.index_of("gone", "ana") not in (kept, gone, busy)  # a home back after its sweep: a new group


def test_the_first_owner_noted_stays(tmp_path: Path) -> None:
    assert owner_of(tmp_path, "t1") is None  # the local user
    record_owner(tmp_path, "t1", "ana")
    record_owner(tmp_path, "t1", "bo")
    assert owner_of(tmp_path, "t1") == "ana"
    assert (tmp_path / "threads" / "t1").stat().st_mode & 0o777 == 0o700
    owner = thread_owner(tmp_path, "t1", SandboxConfig(disk_quota_per_user_mb=150))
    assert (owner.user, owner.limit_bytes) == ("ana", 150 * 1024 * 1024)
    assert thread_owner(tmp_path, "t2", SandboxConfig(disk_quota_per_user_mb=None)).limit_bytes is None
