"""The user table of the per-user disk bound and the thread owner notes (no volume needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from herdsman.config.schema import SandboxConfig
from herdsman.sandbox.owners import owner_of, record_owner
from herdsman.sandbox.user_quota import UserGroups
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


def test_the_first_owner_noted_stays(tmp_path: Path) -> None:
    assert owner_of(tmp_path, "t1") is None  # the local user
    record_owner(tmp_path, "t1", "ana")
    record_owner(tmp_path, "t1", "bo")
    assert owner_of(tmp_path, "t1") == "ana"
    assert (tmp_path / "threads" / "t1").stat().st_mode & 0o777 == 0o700
    owner = thread_owner(tmp_path, "t1", SandboxConfig(disk_quota_per_user_mb=150))
    assert (owner.user, owner.limit_bytes) == ("ana", 150 * 1024 * 1024)
    assert thread_owner(tmp_path, "t2", SandboxConfig(disk_quota_per_user_mb=None)).limit_bytes is None
