"""Red team: a thread deleted while its command writes, then made again with its id.

Issue #30 follow-up (the quota volume, a thread id used again). Deleting a thread released its
sandbox, which only *asked* its running commands to stop, and removed its folders at once: the
command, still writing (``mkdir d$i`` in a loop), left folders the walk had not seen, so the
thread's subvolume stayed on the quota volume with them, and a thread made again with the id
(by any user: ids are the client's) was placed on it and found them. 5 deletions of 5 left data
behind. Now releasing a sandbox waits until its killed commands have ended.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from herdsman.runtime.storage.thread_files import remove_thread_files
from herdsman.sandbox.bwrap import bwrap_status
from tests.redteam.test_deep_trees import jail_provider

pytestmark = pytest.mark.skipif(not bwrap_status().available, reason=f"bubblewrap unusable: {bwrap_status().reason}")

WRITER = "i=0; while true; do i=$((i+1)); mkdir -p planted$i/deeper; echo x > planted$i/deeper/file; done"


@pytest.mark.parametrize("volume", ["auto", "off"])
def test_a_thread_deleted_while_its_command_writes_leaves_nothing(tmp_path: Path, volume: str) -> None:
    """Three times: a command writes in a loop, the thread is deleted meanwhile; nothing of it is
    left on disk, and the thread made again with its id starts empty."""
    home = tmp_path / "home"
    provider = jail_provider(home, quota_volume={"mode": volume})
    try:
        for _ in range(3):
            sandbox = provider.acquire("reused-id")
            assert sandbox.execute("ls -A /mnt/user-data/workspace | wc -l").output.split() == ["0"]
            data = os.path.realpath(sandbox.paths.user_data)
            writer = threading.Thread(target=sandbox.execute, args=(WRITER,))
            writer.start()
            deadline = time.monotonic() + 30
            while not any(Path(data, "workspace").glob("planted2*")) and time.monotonic() < deadline:
                time.sleep(0.05)  # the command is writing
            remove_thread_files(provider, home, "reused-id")
            writer.join(60)
            assert not writer.is_alive()
            assert not os.path.exists(data), "the deleted thread's files are still on disk"
    finally:
        provider.close()
