"""A quota volume of a test's own: a folder on the machine's btrfs quota volume with its own
homes, sweep and user index, removed with its quota groups at the end.

The machine's volume is shared by every process (gateways, other test runs): a test that sweeps
it, with no grace above all, removes other processes' threads mid-placement. A test that sweeps
or places threads sweeps and places in a volume of its own instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from herdsman.config.schema import QuotaVolumeConfig
from herdsman.sandbox import user_quota, volume
from herdsman.sandbox.tree import remove_tree


@contextlib.contextmanager
def own_quota_volume() -> Iterator[volume.QuotaVolume]:
    """A :class:`~herdsman.sandbox.volume.QuotaVolume` rooted in a new folder of the machine's
    quota volume (user group ids far from the machine's), removed at the end with its groups.
    Skips the test without the volume (root and btrfs-progs)."""
    machine = volume.quota_volume(QuotaVolumeConfig(mode="auto"), 100)
    if machine is None:
        pytest.skip("no quota volume here (needs root and btrfs-progs: scripts/install-system.sh)")
    root = machine.root / f".test-{secrets.token_hex(6)}"
    (root / ".user-groups").mkdir(mode=0o700, parents=True)
    (root / ".user-groups" / ".next").write_text(str(2**47 + secrets.randbelow(2**40)))
    try:
        yield volume.QuotaVolume(root)
    finally:
        _drop_groups(root)
        remove_tree(root)


def _drop_groups(root: Path) -> None:
    """Take the threads' subvolumes under ``root`` out of the user groups made there, and drop
    those groups (a removed subvolume's own group is cleared by the machine's sweep)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        groups = [user_quota.qgroup(1, json.loads(p.read_text())["index"]) for p in root.glob(".user-groups/*/*")]
        for data in root.glob("*/threads/*/user-data"):
            member_fd = os.open(data, os.O_RDONLY | os.O_DIRECTORY)
            try:
                member = user_quota.qgroup(0, user_quota.subvolume_id(member_fd))
                for group in groups:
                    with contextlib.suppress(OSError):
                        user_quota._assign(member_fd, member, group, assign=False)
            finally:
                os.close(member_fd)
        for group in groups:
            with contextlib.suppress(OSError):
                user_quota._create(fd, group, False)
    finally:
        os.close(fd)
