"""Red team: TCP buffers a jail fills count in its memory limit (cgroup v1, networked jail).

Issue #30 follow-up (limits and the networked jail). On cgroup v1 the kernel charges TCP buffers
to a memory group only once ``memory.kmem.tcp.limit_in_bytes`` is set, so a command under
``memory_mb: 128`` held 275 MB of socket buffers through 100 connections on its own loopback
(a thousand connections reach the host-wide ``tcp_mem`` bound, where every TCP socket of the
host stalls). With ``sandbox.network``, slirp4netns ran outside the command's group: under
``memory_mb: 256`` a jail pushed 2 GB into its host sockets towards a peer that stopped
reading, and those buffers stayed after the command as orphaned sockets. Now each command's v1
group limits its TCP buffers to ``memory_mb`` (v2 counts them in ``memory.max`` already), and
slirp4netns joins the command's group, which is not reused after a networked command.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from herdsman.config.schema import HerdsmanConfig
from herdsman.sandbox import LocalSandboxProvider, netns
from herdsman.sandbox.bwrap import bwrap_status
from tests.redteam.tcp_memory_probe import CONNECTIONS, MEMORY_MB, WRITE_UNTIL_FULL
from tests.redteam.test_jail_bwrap import ROOT
from tests.redteam.test_networked_jail import NAMESPACE_SETUP, OUTSIDE

pytestmark = pytest.mark.skipif(not bwrap_status().available, reason=f"bubblewrap unusable: {bwrap_status().reason}")

# A server on the jail's own loopback that never reads, and 100 clients writing until no socket takes more.
LOOPBACK_FLOOD = (
    r"""
import select, socket
server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen(512)
socks, peers = [], []
for _ in range(100):
    c = socket.create_connection(server.getsockname()); c.setblocking(False); socks.append(c)
    peers.append(server.accept()[0])
"""
    + WRITE_UNTIL_FULL
)


def test_tcp_buffers_on_the_jails_loopback_count_in_its_memory(tmp_path: Path) -> None:
    """100 connections on the jail's own loopback to a server that never reads hold at most
    about ``memory_mb`` of socket buffers (275 MB under 128 before)."""
    config = HerdsmanConfig.model_validate({
        "home": str(tmp_path / "home"), "skills": {"enabled": False},
        "sandbox": {"isolation": "bwrap", "command_timeout_seconds": 60, "limits": {"memory_mb": MEMORY_MB}},
    })  # fmt: skip
    provider = LocalSandboxProvider(config)
    try:
        sandbox = provider.acquire("loopback-flood")
        if "memory" not in sandbox._shell.limiter.groups.controllers:
            pytest.skip(
                f"no memory cgroup here ({sandbox._shell.limiter.mechanism}): memory_mb is per-process address space"
            )
        result = sandbox._shell.run(sandbox.paths, f"python3 -c {shlex.quote(LOOPBACK_FLOOD)}", 60).output
        taken = [int(line.split()[1]) for line in result.splitlines() if line.startswith("taken_mib ")]
        assert taken, result
        assert taken[0] <= MEMORY_MB + 16, f"{taken[0]} MiB of socket buffers under memory_mb {MEMORY_MB}"
    finally:
        provider.close()


def test_slirp4netns_buffers_count_in_the_commands_memory(tmp_path: Path) -> None:
    """A networked jail writing into connections to a peer that never reads: what the network
    takes from it (the jail's sockets, slirp4netns and its host sockets) stays about within
    ``memory_mb`` (about 8 MiB per connection, 480 MiB for 60, before)."""
    if os.geteuid() != 0:
        pytest.skip("making the test's network namespace needs root")
    for tool in ("unshare", "ip", "mknod"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is missing")
    if not shutil.which(netns.PACKAGE):
        pytest.skip(f"{netns.PACKAGE} is not installed (scripts/install-system.sh installs it)")
    base = Path(tempfile.mkdtemp(prefix="herdsman-tcpmem-"))
    try:
        resolv = base / "resolv.conf"
        resolv.write_text(f"nameserver {OUTSIDE}\n")
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LANG": "C.UTF-8",
               "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}  # fmt: skip
        probe = [sys.executable, "-m", "tests.redteam.tcp_memory_probe", str(base / "home"), OUTSIDE]
        done = subprocess.run(
            ["unshare", "--net", "--mount", "--propagation", "private", "sh", "-c", NAMESPACE_SETUP, "setup", str(resolv), *probe],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        result = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if not result["mechanism"].startswith("cgroup"):
        pytest.skip(f"no cgroup here ({result['mechanism']}): kernel socket buffers are not bounded by rlimits")
    assert result["taken_mib"] is not None, result["output"]
    assert result["taken_mib"] <= 2 * MEMORY_MB, f"{result['taken_mib']} MiB through {CONNECTIONS} connections"
