"""Commands jailed by bubblewrap: what they can see, write, reach, and how they die."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from herdsman.sandbox import LocalSandboxProvider, netns
from herdsman.sandbox.bwrap import build_bwrap_argv, bwrap_status

pytestmark = pytest.mark.bwrap


@pytest.fixture
def provider(bwrap_tools) -> LocalSandboxProvider:
    return bwrap_tools[0]


@pytest.fixture
def call(bwrap_tools):
    return bwrap_tools[1]


def ok(message) -> str:
    assert message.status == "success", message.content
    return str(message.content)


def test_provider_uses_bubblewrap(provider: LocalSandboxProvider) -> None:
    assert provider.isolation == "bwrap"


def test_argv_shape(provider: LocalSandboxProvider, bwrap_config) -> None:
    paths = provider.acquire("t1").paths
    argv = build_bwrap_argv(bwrap_status().path or "bwrap", paths, "echo hi")
    joined = " ".join(argv)
    for flag in ("--unshare-all", "--die-with-parent", "--new-session", "--cap-drop ALL", "--clearenv"):
        assert flag in joined
    assert "--share-net" not in argv
    assert f"--bind {paths.workspace} /mnt/user-data/workspace" in joined
    assert f"--ro-bind {paths.skills}/public /mnt/skills/public" in joined  # the shared folders, one by one
    assert f"--ro-bind {paths.skills} /mnt/skills" not in joined  # never the whole skills folder
    assert "--chdir /mnt/user-data/workspace" in joined
    assert "--setenv HOME /mnt/user-data/workspace" in joined
    assert argv[-3:] == [argv[-3], "-c", "echo hi"]
    networked = build_bwrap_argv("bwrap", paths, "true", network=True, network_args=["--info-fd", "7"])
    assert "--share-net" not in networked and "--info-fd" in networked


def test_jail_sees_virtual_paths_and_a_clean_environment(call, monkeypatch) -> None:
    out = ok(
        call(
            "bash",
            command="pwd; echo $HOME; ls /mnt/user-data; ls /mnt/skills/public; env | sort; python3 -c 'print(6*7)'",
        )
    )
    lines = out.splitlines()
    assert lines[0] == "/mnt/user-data/workspace"
    assert lines[1] == "/mnt/user-data/workspace"
    assert {"outputs", "uploads", "workspace"} <= set(lines)
    assert "demo" in lines
    assert "42" in lines
    env_keys = {ln.split("=", 1)[0] for ln in lines if "=" in ln}
    assert env_keys <= {
        "PATH",
        "HOME",
        "LANG",
        "TERM",
        "MPLCONFIGDIR",
        "XDG_CACHE_HOME",
        "XDG_CONFIG_HOME",
        "HERDSMAN_RUN_ID",
        "PWD",
        "SHLVL",
        "_",
    }
    assert "XDG_CACHE_HOME=/tmp/.cache" in lines and "XDG_CONFIG_HOME=/tmp/.config" in lines  # not in the workspace


def test_files_written_in_the_jail_land_in_the_threads_directories(call, provider) -> None:
    ok(
        call(
            "bash",
            command="echo hi > w.txt; echo up > /mnt/user-data/uploads/u.txt; echo r > /mnt/user-data/outputs/r.md",
        )
    )
    paths = provider.acquire("t1").paths
    assert (paths.workspace / "w.txt").read_text() == "hi\n"
    assert (paths.uploads / "u.txt").read_text() == "up\n"
    assert (paths.outputs / "r.md").read_text() == "r\n"
    assert ok(call("read_file", path="/mnt/user-data/outputs/r.md")) == "     1\tr"


def test_outputs_in_a_jailed_command_is_the_outputs_folder_and_nothing_more(call, provider) -> None:
    """``outputs/...`` in a jailed command is /mnt/user-data/outputs whatever the working
    directory; climbing out of it from there is still refused, and nothing appears in the workspace."""
    out = ok(
        call(
            "bash",
            command="cd /tmp && echo c > outputs/c.txt && printf '%s' \"$(pwd)\"; echo x > outputs/../../../etc/evil",
        )
    )
    paths = provider.acquire("t1").paths
    assert (paths.outputs / "c.txt").read_text() == "c\n"
    assert out.startswith("/tmp") and "[exit code 1]" in out
    assert not (paths.workspace / "outputs").exists() and not os.listdir(paths.workspace)


def test_writes_outside_the_user_data_dirs_are_refused(call, provider, tmp_path: Path) -> None:
    other = provider.acquire("t2").paths.workspace
    targets = [
        "/usr/evil",
        "/etc/evil",
        "/evil",
        "/mnt/skills/evil",
        "/mnt/user-data/evil",
        f"{other}/evil",
        f"{tmp_path}/evil",
    ]
    for target in targets:
        out = ok(call("bash", command=f"echo pwned > {target}"))
        assert "[exit code 1]" in out, (target, out)
    for host in ("/usr/evil", "/etc/evil", "/evil", str(other / "evil"), str(tmp_path / "evil")):
        assert not os.path.exists(host)
    assert "skills/evil" not in " ".join(os.listdir(provider.acquire("t1").paths.skills))


def test_other_threads_and_the_host_are_invisible(call, provider, tmp_path: Path) -> None:
    other = provider.acquire("t2").paths.workspace
    (other / "secret.txt").write_text("t2 secret")
    out = ok(
        call("bash", command=f"cat {other}/secret.txt; ls {tmp_path}; ls /root /home /work 2>&1 | head -3; ls /tmp")
    )
    assert "t2 secret" not in out
    assert "No such file or directory" in out


def test_network_is_off_by_default(call) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        script = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('connected')"
        out = ok(call("bash", command=f'python3 -c "{script}"'))
    assert "connected" not in out
    assert "[exit code 1]" in out


@pytest.mark.skipif(not netns.stack_status().available, reason=f"no network stack: {netns.stack_status().reason}")
def test_network_turned_on_is_a_namespace_of_its_own(make_config, make_runner) -> None:
    _, call = make_runner(make_config(isolation="bwrap", network=True))
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        script = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('connected')"
        out = ok(call("bash", command=f'cat /proc/net/dev /proc/net/fib_trie /etc/resolv.conf; python3 -c "{script}"'))
    assert f"{netns.TAP_NAME}:" in out and netns.JAIL_ADDRESS in out
    assert f"nameserver {netns.DNS_ADDRESS}" in out
    assert "connected" not in out  # the host's loopback is not the jail's (tests/redteam/test_networked_jail.py)


def test_symlinks_made_inside_the_jail_cannot_escape_through_file_tools(call, provider) -> None:
    ok(call("write_file", path="/mnt/user-data/uploads/data.csv", content="a,b\n"))
    other = provider.acquire("t2").paths.workspace
    (other / "secret.txt").write_text("t2 secret")
    ok(call("bash", command=(
        "ln -s /etc/passwd pw; ln -s /etc etcdir; ln -s ../../../../../../.. up; "
        f"ln -s {other}/secret.txt other; ln -s /mnt/user-data/uploads/data.csv data.csv"
    )))  # fmt: skip
    for path in ("pw", "etcdir/hostname", "up/etc/passwd", "other"):
        message = call("read_file", path=path)
        assert message.status == "error"
        assert "leaves the sandbox" in message.content
        write = call("write_file", path=path, content="pwned")
        assert write.status == "error"
    assert ok(call("read_file", path="data.csv")) == "     1\ta,b"
    assert (other / "secret.txt").read_text() == "t2 secret"


def test_timeout_kills_sleep_and_daemonized_grandchildren(
    make_config, make_runner, find_pids: Callable[[str], list[int]]
) -> None:
    provider, _ = make_runner(
        make_config(isolation="bwrap", command_timeout_seconds=4)
    )  # python starts in time on a loaded machine
    sandbox = provider.acquire("t1")
    token = f"{uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    daemon = (
        "import os, sys, time\n"
        "if os.fork(): sys.exit(0)\n"
        "os.setsid()\n"
        "if os.fork(): sys.exit(0)\n"
        f"time.sleep({token})\n"
    )
    result = sandbox.execute(f"python3 -c '{daemon}' > /dev/null 2>&1; setsid sleep {token} & echo started; sleep 100")
    assert result.timed_out
    assert result.output.startswith("started")
    assert find_pids(token) == []


def test_background_processes_end_with_their_command(provider, find_pids) -> None:
    token = f"{uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    result = provider.acquire("t1").execute(f"nohup setsid sleep {token} > /dev/null 2>&1 & echo ok")
    assert not result.timed_out and result.output == "ok\n"
    assert find_pids(token) == []


def test_no_host_path_in_jail_output(call, tmp_path: Path) -> None:
    out = ok(
        call(
            "bash", command="cat /proc/self/mountinfo; cat /proc/mounts; df 2>&1; ls -la /mnt/user-data; readlink -f ."
        )
    )
    assert str(tmp_path) not in out
    assert os.path.realpath(tmp_path) not in out
    assert "/mnt/user-data/workspace" in out


def test_ten_megabytes_from_the_jail_are_cut_and_say_so(call) -> None:
    out = ok(call("bash", command="printf 'FIRST\\n'; head -c 10000000 /dev/zero | tr '\\0' x; printf '\\nLAST'"))
    assert out.startswith("FIRST\n") and out.endswith("\nLAST")
    assert f"... [{10_000_011 - 20_000} characters cut] ..." in out


@pytest.mark.bwrap
def test_python_names_python3_in_the_jail(bwrap_config) -> None:
    sandbox = LocalSandboxProvider(bwrap_config).acquire("t1")
    out = sandbox.execute("python -c 'import sys; print(sys.version_info[0])'")
    assert out.exit_code == 0 and out.output.strip() == "3", out.output


def test_a_python_under_opt_binds_only_its_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 30, item 7: all of /opt (other software, its keys) was bound when python3 lived there."""
    from herdsman.sandbox import bwrap

    real_which, real_realpath, real_isdir = bwrap.shutil.which, os.path.realpath, os.path.isdir
    opt_python = "/opt/python3.12/bin/python3.12"

    def which(name: str, path: str | None = None) -> str | None:
        if name == "python3":
            return None if path == bwrap.SANDBOX_PATH else "/opt/python3.12/bin/python3"
        return real_which(name, path=path)

    monkeypatch.setattr(bwrap.shutil, "which", which)
    monkeypatch.setattr(
        os.path, "realpath", lambda p, **kw: opt_python if "python3" in str(p) else real_realpath(p, **kw)
    )
    monkeypatch.setattr(os.path, "isdir", lambda p: str(p).startswith("/opt") or real_isdir(p))
    args = bwrap._system_args()
    binds = [args[i + 1] for i, arg in enumerate(args) if arg == "--ro-bind"]
    assert "/opt/python3.12" in binds and "/opt" not in binds
