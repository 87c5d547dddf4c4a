"""Real services for tests: a throwaway PostgreSQL server started from the Debian binaries.

The server runs as the ``postgres`` user when the tests run as root (PostgreSQL refuses root),
listens on a free loopback port, and is stopped when the session ends.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def postgres_bin(name: str) -> str | None:
    """Path of a PostgreSQL server program, from PATH or Debian's versioned folder."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a PostgreSQL server; yield its connection URL; stop it afterwards."""
    initdb, pg_ctl = postgres_bin("initdb"), postgres_bin("pg_ctl")
    if not initdb or not pg_ctl:
        raise RuntimeError("PostgreSQL server programs not found; apt-get install postgresql")
    as_root = os.geteuid() == 0
    root = Path(tempfile.mkdtemp(prefix="herdsman-pg-"))
    data = root / "data"
    prefix: list[str] = []
    if as_root:
        shutil.chown(root, "postgres", "postgres")
        prefix = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    subprocess.run(
        [*prefix, initdb, "-D", str(data), "-U", "herdsman", "--auth=trust", "-E", "UTF8"],
        check=True,
        capture_output=True,
    )
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(
        [*prefix, pg_ctl, "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "start"],
        check=True,
        capture_output=True,
    )
    try:
        url = f"postgresql://herdsman@127.0.0.1:{port}/postgres"
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield url
    finally:
        subprocess.run([*prefix, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
