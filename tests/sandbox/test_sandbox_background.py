"""Background servers of the local sandbox (``background.py``): bounded per thread, stopped with
the sandbox, refused where commands do not run in a jail of their own; ``sandbox.preview.ports``."""

from __future__ import annotations

import os

import pytest
from pydantic import ValidationError

from herdsman.config.schema import SandboxPreviewConfig
from herdsman.sandbox import LocalSandboxProvider
from herdsman.sandbox.base import CommandNotAllowedError, SandboxError
from herdsman.sandbox.jail_ports import PortUnreachable
from herdsman.sandbox.process import marked_pids


def test_without_a_jail_a_background_server_is_refused(make_config) -> None:
    provider = LocalSandboxProvider(make_config(isolation="none", allow_unisolated_bash=True))
    with pytest.raises(CommandNotAllowedError, match="bubblewrap"):
        provider.acquire("t1").start_background("python3 -m http.server 8000")
    assert provider.serves_background is False


@pytest.mark.bwrap
def test_servers_per_thread_are_bounded_and_die_with_the_sandbox(make_config) -> None:
    provider = LocalSandboxProvider(make_config(preview={"max_servers_per_thread": 2}))
    assert provider.serves_background is True
    sandbox = provider.acquire("t1")
    jobs = [sandbox.start_background(f"exec python3 -m http.server {port} --bind 127.0.0.1") for port in (3001, 3002)]
    assert [job.wait_listening(10) for job in jobs] == [[3001], [3002]]
    with pytest.raises(SandboxError, match="max_servers_per_thread is 2"):
        sandbox.start_background("sleep 100")
    with pytest.raises(PortUnreachable, match="nothing is listening on port 3003.*listening: 3001, 3002"):
        sandbox.preview_connection(3003)
    sock = sandbox.preview_connection(3001)
    sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
    assert sock.recv(12) == b"HTTP/1.0 200"
    sock.close()
    other = provider.acquire("t2")  # another thread's sandbox has no way to them
    with pytest.raises(PortUnreachable, match="no background server"):
        other.preview_connection(3001)
    provider.release("t1")
    assert not any(job.running for job in jobs)
    assert not any(marked_pids(job.run_id) for job in jobs) and all(job.forwarder_pid is None for job in jobs)
    provider.close()


def test_port_ranges_parse_and_say_what_to_write() -> None:
    preview = SandboxPreviewConfig(ports="3000-3999, 8080")
    assert [preview.allows(p) for p in (2999, 3000, 3999, 4000, 8080)] == [False, True, True, False, True]
    assert SandboxPreviewConfig.model_validate({"ports": 8080}).allows(8080)
    for bad in ("80-", "9000-3000", "0-10", "http"):
        with pytest.raises(ValidationError, match="e.g. 3000-9000"):
            SandboxPreviewConfig(ports=bad)


FETCH = "python3 -c \"import urllib.request as u; print(u.urlopen('http://{host}:{port}/a.txt', timeout=5).read().decode())\""
CONNECT = (
    "python3 -c \"import socket; s = socket.socket(); s.settimeout(3); print('reached' if s.connect_ex(('127.0.0.1', {port})) == 0 "
    "else 'refused')\""
)


@pytest.mark.bwrap
def test_a_later_command_reaches_the_threads_background_server_and_nothing_else(make_config) -> None:
    """``curl localhost:PORT`` after starting a server in the background reaches it (the command
    runs in the job's network namespace); that namespace holds no route to the host's loopback,
    a command naming no job's port keeps a namespace of its own, and another thread's command
    naming the port does not reach this thread's server."""
    import socket

    host = socket.socket()
    host.bind(("127.0.0.1", 0))
    host.listen()
    host_port = host.getsockname()[1]
    provider = LocalSandboxProvider(make_config())
    try:
        sandbox = provider.acquire("t1")
        sandbox.write_text("/mnt/user-data/workspace/a.txt", "served from the jail")
        job = sandbox.start_background("python3 -m http.server 8123 --bind 127.0.0.1")
        assert job.wait_listening(10) == [8123]
        assert sandbox.servers_reachable == (os.geteuid() == 0)  # joining the job's namespace needs root
        for name in ("127.0.0.1", "localhost"):
            got = sandbox.execute(FETCH.format(host=name, port=8123))
            if sandbox.servers_reachable:
                assert got.exit_code == 0 and got.output.strip() == "served from the jail", got.output
            else:  # not root: the command keeps a namespace of its own, and the tool says so
                assert got.exit_code != 0 and "served from the jail" not in got.output
        joined = sandbox.execute(f"echo 127.0.0.1:8123 && {CONNECT.format(port=host_port)}")
        assert joined.output.split() == ["127.0.0.1:8123", "refused"]  # the job's namespace: no host loopback
        own = sandbox.execute(CONNECT.format(port=8123))
        assert own.output.strip() == "refused"  # no port of a job named: a namespace of its own
        other = provider.acquire("t2").execute(FETCH.format(host="127.0.0.1", port=8123))
        assert other.exit_code != 0 and "served from the jail" not in other.output
    finally:
        host.close()
        provider.close()


@pytest.mark.bwrap
def test_a_later_command_says_once_that_a_background_job_has_ended(make_config, monkeypatch) -> None:
    """A job started in the background that ends on its own (a batch job, not a server): the next
    bash command's result says so, with its exit code and its last lines, and later ones do not
    say it again; a job that ended before the tool answered is told at its start only."""
    from herdsman.sandbox import tools as sandbox_tools
    from herdsman.sandbox.tools import SandboxTools

    monkeypatch.setattr(sandbox_tools, "SERVER_STARTUP_SECONDS", 0.3)  # the tool's wait for a port, shortened

    config = make_config()
    provider = LocalSandboxProvider(config)
    tools = SandboxTools(provider, config.sandbox)
    runtime = type("Runtime", (), {"config": {"configurable": {"thread_id": "t1"}}})()
    try:
        started, _ = tools.bash("sleep 1; echo step 1; echo checksum: 1f2e", runtime, background=True)
        assert started.startswith("Started in the background (job 1)") and "says when it has ended" in started
        later, _ = tools.bash("sleep 3; echo waited", runtime)
        assert later.startswith("waited\n"), later
        assert "[background job 1 (sleep 1; echo step 1; echo checksum: 1f2e) has ended with exit code 0" in later
        assert later.rstrip().endswith("its last lines:\nstep 1\nchecksum: 1f2e]")
        again, _ = tools.bash("echo again", runtime)
        assert again.strip() == "again"
        quick, _ = tools.bash("exit 3", runtime, background=True)
        assert quick.startswith("The background command has already ended") and "[exit code 3]" in quick
        assert "background job 2" not in tools.bash("echo once", runtime)[0]
    finally:
        provider.close()
