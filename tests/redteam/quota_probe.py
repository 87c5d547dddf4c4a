"""Runs the permission tricks of ``test_quota_kernel.py`` against a provider in a fresh process.

``python -m tests.redteam.quota_probe HOME`` builds a local provider (bubblewrap) with ``HOME``
as its home and a 100 MiB quota, then in thread ``t1``: hides 60 MiB in a ``chmod 300`` folder
and measures the thread the way the quota does; leaves a ``chmod 500`` folder and deletes the
thread. It prints JSON: what the quota measured, what the jail's ``du`` saw, whether the thread's
folder is gone after the delete, and what the next thread with the id finds. The test runs it
as ``nobody`` (through ``setpriv``): a gateway that is not root is held to the modes.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from herdsman.config.schema import HerdsmanConfig
from herdsman.runtime.storage.thread_files import remove_thread_files
from herdsman.sandbox import LocalSandboxProvider
from herdsman.sandbox.paths import thread_dir

HIDE = (
    "mkdir hidden && head -c 62914560 /dev/zero > hidden/blob && mkdir -p deep/er && "
    "head -c 1048576 /dev/zero > deep/er/x && chmod 000 deep/er && chmod 600 deep && chmod 300 hidden && "
    "du -sk /mnt/user-data/workspace 2>/dev/null | cut -f1"
)
KEEP = "mkdir -p keep/inner && echo secret > keep/inner/s.txt && chmod 500 keep/inner keep && echo kept"


def main(home: Path) -> None:
    config = HerdsmanConfig.model_validate(
        {
            "home": str(home),
            "skills": {"enabled": False},
            "sandbox": {"isolation": "bwrap", "disk_quota_mb": 100, "max_files": 1000},
        }
    )
    provider = LocalSandboxProvider(config)
    out: dict[str, object] = {"uid": os.getuid(), "volume": getattr(provider, "volume", None) is not None}
    try:
        sandbox = provider.acquire("t1")
        out["hide"] = sandbox.execute(HIDE).output.strip()
        out["measured"] = sandbox.quota.usage(fresh=True).bytes
        out["keep"] = sandbox.execute(KEEP).output.strip()
        remove_thread_files(provider, home, "t1")
        out["thread_dir_left"] = thread_dir(home, "t1").exists()
        again = provider.acquire("t1")
        out["after"] = again.execute("ls -A /mnt/user-data/workspace; echo end").output.strip()
    finally:
        provider.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
