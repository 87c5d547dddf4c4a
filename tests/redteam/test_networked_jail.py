"""Red team: a jail with ``sandbox.network: true`` never reaches the host's loopback.

Issue #30, item 4: the networked local jail shared the host's network namespace
(``--share-net``), so a thread's ``curl`` read another thread's files through the gateway on
127.0.0.1, and a sandbox read other users' run events from a password-less local Redis. Now
each networked command gets its own network namespace, NATed outward by slirp4netns.

No packet leaves this machine: the provider runs in a network namespace this test makes
(``unshare --net``), where a veth pair of its own holds a documentation address that stands for the
world, and every server the probe starts listens there or on that namespace's loopback. The
probe (``netns_probe.py``) runs once as root and once as ``nobody`` (through ``setpriv``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from herdsman.config.schema import HerdsmanConfig
from herdsman.sandbox import LocalSandboxProvider, netns
from herdsman.sandbox.base import CommandNotAllowedError
from herdsman.sandbox.bwrap import bwrap_status
from tests.redteam.netns_probe import OUTSIDE_BANNER, RESOLVER, SECRET, THREAD_A_BANNER
from tests.redteam.test_jail_bwrap import NOBODY, ROOT, _python_for_nobody, _skip_unless_readable

OUTSIDE = "198.51.100.1"  # TEST-NET-2: never routed; here only on the test's own veth pair
pytestmark = pytest.mark.skipif(not bwrap_status().available, reason=f"bubblewrap unusable: {bwrap_status().reason}")

# Run as root inside the new network and mount namespaces, before the probe starts.
NAMESPACE_SETUP = f"""
set -e
ip link set lo up
ip link add world0 type veth peer name world1
ip addr add {OUTSIDE}/24 dev world0
ip link set world0 up
ip link set world1 up
ip route add default dev world0
sysctl -qw net.ipv4.ip_unprivileged_port_start=0
mount --bind "$1" /etc/resolv.conf
mount -t tmpfs -o mode=755 tmpfs /dev/net
mknod -m 666 /dev/net/tun c 10 200
shift
exec "$@"
"""


def _run_probe(base: Path, as_nobody: bool) -> dict:
    resolv = base / "resolv.conf"
    resolv.write_text(f"nameserver {RESOLVER}\n")
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LANG": "C.UTF-8"}
    python, prefix = sys.executable, []
    if as_nobody:
        python = _python_for_nobody()
        site = next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT), site])
        env["HOME"] = str(base)
        prefix = [shutil.which("setpriv") or "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        _skip_unless_readable(prefix, python, env)
    else:
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    probe = [*prefix, python, "-m", "tests.redteam.netns_probe", str(base / "home"), OUTSIDE]
    done = subprocess.run(
        ["unshare", "--net", "--mount", "--propagation", "private", "sh", "-c", NAMESPACE_SETUP, "setup", str(resolv), *probe],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module", params=["root", "nobody"])
def probes(request) -> dict:
    if os.geteuid() != 0:
        pytest.skip("making the test's network namespace needs root")
    for tool in ("unshare", "ip", "mknod", "setpriv"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is missing")
    if not shutil.which(netns.PACKAGE):
        pytest.skip(f"{netns.PACKAGE} is not installed (scripts/install-system.sh installs it)")
    base = Path(tempfile.mkdtemp(prefix="herdsman-netns-"))  # pytest's own tmp is root-only
    try:
        if request.param == "nobody":
            os.chmod(base, 0o755)
            os.chown(base, NOBODY, NOBODY)
        result = _run_probe(base, request.param == "nobody")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert result["isolation"] == "bwrap"
    return result


def _reached(outcome: str) -> bool:
    return outcome.startswith("connected:")


def test_the_hosts_loopback_is_not_reachable_from_a_networked_jail(probes: dict) -> None:
    host = probes["host"]
    for name in ("loopback4", "loopback6", "localhost", "gateway", "hostname", "dns_forwarder"):
        assert not _reached(host[name]), f"{name}: {host[name]}"
        assert SECRET not in host[name]


def test_the_jail_reaches_the_outside_through_nat_and_dns(probes: dict) -> None:
    host = probes["host"]
    assert host["outside"] == f"connected:{OUTSIDE_BANNER}"
    assert host["outside_by_name"] == f"connected:{OUTSIDE_BANNER}"
    dns = probes["dns"]
    assert f"{OUTSIDE}" in dns and "outside.test" in dns
    assert "rc=2" in dns, dns  # an unknown name fails cleanly (not found), it does not hang


def test_another_threads_listener_is_not_reachable(probes: dict) -> None:
    assert probes["listener_ready"] == "self-check ok"  # the listener works inside its own jail
    for name, outcome in {**probes["other_thread"], **probes["other_thread_from_host"]}.items():
        assert not _reached(outcome), f"{name}: {outcome}"
        assert THREAD_A_BANNER not in outcome
    assert "listener done" in probes["listener_output"]


def test_the_network_stack_lives_only_as_long_as_its_command(probes: dict) -> None:
    assert probes["slirp_during"] >= 1
    assert probes["slirp_after"] == 0
    assert probes["timeout"] == {"timed_out": True, "slirp_after": 0}, probes["timeout_output"]


def test_without_the_stack_network_is_refused_not_shared(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(netns, "stack_status", lambda: netns.StackStatus(False, None, "slirp4netns is not installed"))
    config = HerdsmanConfig.model_validate(
        {"home": str(tmp_path), "skills": {"enabled": False}, "sandbox": {"isolation": "bwrap", "network": True}}
    )
    provider = LocalSandboxProvider(config)
    sandbox = provider.acquire("t")
    with pytest.raises(CommandNotAllowedError) as refused:
        sandbox._shell.run(sandbox.paths, "echo ran > ran.txt", 10)
    assert "slirp4netns" in str(refused.value) and "sandbox.provider: docker" in str(refused.value)
    assert not (sandbox.paths.workspace / "ran.txt").exists()
    provider.close()
    from herdsman.commands.check import check_sandbox  # noqa: PLC0415 - the check of `herdsman config check`

    [problem] = check_sandbox(config)
    assert problem.path == "sandbox.network" and "slirp4netns" in problem.message


def test_a_stack_that_fails_stops_the_command_before_it_runs(tmp_path: Path) -> None:
    if not netns.stack_status().available:
        pytest.skip(netns.stack_status().reason)
    config = HerdsmanConfig.model_validate(
        {"home": str(tmp_path), "skills": {"enabled": False}, "sandbox": {"isolation": "bwrap", "network": True}}
    )
    provider = LocalSandboxProvider(config)
    sandbox = provider.acquire("t")
    sandbox._shell._slirp = shutil.which("false")  # a stack that exits before it is ready
    with pytest.raises(netns.NetworkSetupError) as failed:
        sandbox._shell.run(sandbox.paths, "echo ran > ran.txt", 10)
    assert "network could not be set up (slirp4netns exited with code 1)" in str(failed.value)
    assert not (sandbox.paths.workspace / "ran.txt").exists()
    provider.close()
