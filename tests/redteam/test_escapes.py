"""The escape and abuse suite: every case against every provider available here (the first red-team file).

Providers: ``local`` (commands on the host, unisolated by explicit opt-in: only the file-tool
and resource cases apply to it), ``local_bwrap`` (bubblewrap jail) and ``docker`` (a container
on podman's Docker-compatible service). Each case states in its docstring what must happen.
Nothing may escape: no file outside the thread's roots is read or written, no host path shows,
no process outlives its command, and the sandbox keeps working after each abuse.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from herdsman.config.schema import HerdsmanConfig
from herdsman.sandbox import LocalSandboxProvider, make_sandbox_tools
from herdsman.sandbox.bwrap import bwrap_status
from herdsman.sandbox.limits import cgroup_v1_parents
from tests.sandbox.conftest import pids_with
from tests.sandbox.podman_engine import EngineUnavailable, shared_engine

LIMITS = {"memory_mb": 128, "pids": 64, "cpus": 1, "file_size_mb": 16}
PROVIDERS = ["local", "local_bwrap", "docker"]
ISOLATED = ["local_bwrap", "docker"]  # the providers whose commands run jailed


@dataclass
class Box:
    """One provider under test, with what the cases need to drive and inspect it."""

    name: str
    provider: Any
    config: HerdsmanConfig
    root: Path
    isolated: bool
    _app: Any = field(default=None, repr=False)

    def call(self, tool: str, thread_id: str = "t1", **args: Any) -> ToolMessage:
        """Call one sandbox tool through a ToolNode, as the agent does."""
        if self._app is None:
            graph = StateGraph(MessagesState)
            graph.add_node("tools", ToolNode(make_sandbox_tools(self.provider, self.config.sandbox)))
            graph.add_edge(START, "tools")
            self._app = graph.compile()
        message = AIMessage("", tool_calls=[{"name": tool, "args": args, "id": "c1"}])
        out = self._app.invoke({"messages": [message]}, {"configurable": {"thread_id": thread_id}})
        return [m for m in out["messages"] if isinstance(m, ToolMessage)][0]

    def sh(self, command: str, thread_id: str = "t1", timeout: float | None = None) -> Any:
        """Run ``command`` in the thread's sandbox."""
        return self.provider.acquire(thread_id).execute(command, timeout=timeout)

    def survivors(self, token: str) -> int:
        """How many processes whose command line holds ``token`` are still alive."""
        if self.name == "docker":
            out = self.sh(f"ps -o args | grep -v grep | grep -c '{token}'").output.strip()
            return int(out or 0)
        return len(pids_with(token))

    def host_leaks(self, text: str) -> bool:
        """Whether ``text`` shows where this box's files really are."""
        return str(self.root) in text or os.path.realpath(self.root) in text


def _config(root: Path, **sandbox: Any) -> HerdsmanConfig:
    skills = root / "skills" / "public" / "demo"
    skills.mkdir(parents=True, exist_ok=True)
    (skills / "SKILL.md").write_text("---\nname: demo\n---\nDemo.\n")
    section = {"command_timeout_seconds": 20, "limits": LIMITS, **sandbox}
    return HerdsmanConfig.model_validate(
        {"home": str(root / "home"), "skills": {"path": str(root / "skills")}, "sandbox": section}
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every case runs against every provider; a case for isolated commands (it takes
    ``isolated``) only against the providers that jail them, rather than skipping ``local``."""
    if "box" in metafunc.fixturenames:
        names = ISOLATED if "isolated" in metafunc.fixturenames else PROVIDERS
        metafunc.parametrize("box", names, indirect=True, scope="module")


@pytest.fixture(scope="module")
def box(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Box]:
    """The provider named by the case's parameter, shared by the module's cases (see pytest_generate_tests)."""
    name = request.param
    root = tmp_path_factory.mktemp(f"escape-{name}")
    if name == "local":
        config = _config(root, isolation="none", allow_unisolated_bash=True)
        yield Box(name, LocalSandboxProvider(config), config, root, isolated=False)
        return
    if name == "local_bwrap":
        if not bwrap_status().available:
            pytest.skip(f"bubblewrap unusable here: {bwrap_status().reason}")
        config = _config(root, isolation="bwrap")
        yield Box(name, LocalSandboxProvider(config), config, root, isolated=True)
        return
    try:
        engine = shared_engine()
    except EngineUnavailable as exc:
        pytest.skip(str(exc))
    from herdsman.sandbox.docker import DockerSandboxProvider

    config = _config(
        root, provider="docker", docker={"base_url": engine.base_url, "image": engine.image, "pull": "never"}
    )
    provider = DockerSandboxProvider(config)
    yield Box(name, provider, config, root, isolated=True)
    provider.cleanup()
    provider.close()


@pytest.fixture
def isolated(box: Box) -> Box:
    """The box, for cases that only hold for isolated commands (``local`` runs commands on the
    host by explicit opt-in, ``allow_unisolated_bash``: these cases are not generated for it)."""
    assert box.isolated, box.name
    return box


def refused(message: ToolMessage) -> str:
    assert message.status == "error", message.content
    return str(message.content)


def token() -> str:
    return f"{uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"


# -- path traversal through every file tool ------------------------------------------------


def test_read_file_refuses_dot_dot_traversal(box: Box) -> None:
    """read_file of ../../../../etc/passwd is refused as leaving the sandbox."""
    assert "leaves the sandbox" in refused(box.call("read_file", path="../../../../../../etc/passwd"))


def test_write_file_refuses_system_paths(box: Box) -> None:
    """write_file to /etc or /usr is refused and nothing is created."""
    for target in ("/etc/herdsman-evil", "/usr/herdsman-evil", "/mnt/user-data/../../tmp/herdsman-evil"):
        refused(box.call("write_file", path=target, content="pwned"))
    assert not os.path.exists("/etc/herdsman-evil") and not os.path.exists("/tmp/herdsman-evil")


def test_str_replace_refuses_outside_files(box: Box) -> None:
    """str_replace of /etc/hostname is refused."""
    assert "leaves the sandbox" in refused(box.call("str_replace", path="/etc/hostname", old="a", new="b"))


def test_ls_refuses_climbing_out(box: Box) -> None:
    """ls of /mnt/user-data/workspace/../../../ is refused."""
    refused(box.call("ls", path="/mnt/user-data/workspace/../../../"))


def test_glob_cannot_list_outside(box: Box) -> None:
    """glob with ../ patterns finds nothing outside the roots (or is refused)."""
    message = box.call("glob", pattern="../../../../*")
    assert "etc" not in str(message.content) and not box.host_leaks(str(message.content))


def test_grep_refuses_outside_dirs(box: Box) -> None:
    """grep over /etc is refused."""
    refused(box.call("grep", pattern="root", path="/etc"))


def test_file_tools_refuse_host_paths_of_another_thread(box: Box) -> None:
    """A host path of another thread's workspace is not a virtual path: refused."""
    other = box.provider.acquire("t2")
    other.write_text("secret.txt", "t2 secret")
    content = refused(box.call("read_file", path=str(other.paths.workspace / "secret.txt")))
    assert "t2 secret" not in content and "leaves the sandbox" in content


def test_nul_byte_in_a_path_is_refused(box: Box) -> None:
    """A path with a NUL byte is refused with a clear message."""
    assert "NUL" in refused(box.call("read_file", path="a\x00b"))


# -- symlinks and hardlinks ----------------------------------------------------------------


def test_symlink_to_a_system_file_cannot_be_read_by_tools(box: Box) -> None:
    """A symlink made by bash to /etc/passwd is refused by read_file and write_file."""
    box.sh("ln -sf /etc/passwd pw-link")
    assert "leaves the sandbox" in refused(box.call("read_file", path="pw-link"))
    refused(box.call("write_file", path="pw-link", content="pwned"))


def test_symlinked_directory_to_root_cannot_be_written_through(box: Box) -> None:
    """A symlink to / cannot be used to write /etc/x through the tools."""
    box.sh("ln -sfn / rootdir")
    refused(box.call("write_file", path="rootdir/etc/herdsman-evil", content="x"))
    assert not os.path.exists("/etc/herdsman-evil")


def test_symlink_to_another_threads_host_dir_is_refused(box: Box) -> None:
    """A symlink to the other thread's host directory is refused by the tools."""
    other = box.provider.acquire("t2")
    other.write_text("secret.txt", "t2 secret")
    box.sh(f"ln -sfn {other.paths.workspace} other-ws")
    content = refused(box.call("read_file", path="other-ws/secret.txt"))
    assert "t2 secret" not in content


def test_hardlink_to_a_system_file_fails(isolated: Box) -> None:
    """ln /etc/passwd fails (read-only or another filesystem) and no link appears."""
    result = isolated.sh("ln /etc/passwd hard-pw; echo rc=$?")
    assert "rc=0" not in result.output
    assert not isolated.provider.acquire("t1").exists("hard-pw")


def test_hardlink_into_another_thread_is_impossible(isolated: Box) -> None:
    """The other thread's files are not even visible, so they cannot be hard-linked."""
    other = isolated.provider.acquire("t2")
    other.write_text("secret.txt", "t2 secret")
    result = isolated.sh(f"ln {other.paths.workspace}/secret.txt stolen; cat stolen")
    assert "t2 secret" not in result.output


# -- /proc tricks --------------------------------------------------------------------------


def test_proc_self_root_is_the_sandbox_root(isolated: Box) -> None:
    """/proc/self/root leads to the sandbox's own root, not the host's."""
    result = isolated.sh(f"ls /proc/self/root{isolated.root} 2>/dev/null; echo rc=$?; ls /proc/self/root/mnt/user-data")
    assert "home" not in result.output.split() and "rc=0" not in result.output
    assert sorted(result.output.split()[-3:]) == ["outputs", "uploads", "workspace"]


def test_proc_1_is_not_the_host_init(isolated: Box) -> None:
    """/proc/1 is the sandbox's first process; its root is the sandbox root."""
    result = isolated.sh(f"ls /proc/1/root{isolated.root} 2>/dev/null; echo rc=$?; tr '\\0' ' ' < /proc/1/cmdline")
    assert "rc=0" not in result.output
    assert "systemd" not in result.output and "/sbin/init" not in result.output


def test_host_processes_are_invisible(isolated: Box) -> None:
    """The gateway's own pid cannot be seen or signalled."""
    result = isolated.sh(
        f"kill -0 {os.getpid()} 2>/dev/null; echo rc=$?; ls /proc/{os.getpid()} >/dev/null 2>&1; echo rc=$?"
    )
    assert "rc=0" not in result.output


def test_no_host_path_in_mount_tables(box: Box) -> None:
    """mountinfo, mounts and readlink show virtual paths, never the host's."""
    result = box.sh("cat /proc/self/mountinfo /proc/mounts 2>/dev/null; readlink -f .")
    assert not box.host_leaks(result.output)
    assert "/mnt/user-data/workspace" in result.output


# -- system directories and other threads ----------------------------------------------------


def test_writes_to_system_dirs_fail(isolated: Box) -> None:
    """Writes to /, /etc, /usr, /bin and /mnt/skills fail; the host is untouched."""
    targets = ["/herdsman-evil", "/etc/herdsman-evil", "/usr/herdsman-evil", "/bin/herdsman-evil", "/mnt/skills/evil"]
    result = isolated.sh("; ".join(f"echo x > {t} 2>/dev/null && echo WROTE {t}" for t in targets) + "; true")
    assert "WROTE" not in result.output
    for target in targets[:4]:
        assert not os.path.exists(target)


def test_another_threads_files_are_invisible_to_bash(isolated: Box) -> None:
    """Thread t1 cannot read t2's file by its host path, and sees only its own user data."""
    other = isolated.provider.acquire("t2")
    other.write_text("secret.txt", "t2 secret")
    result = isolated.sh(f"cat {other.paths.workspace}/secret.txt 2>&1; ls /mnt/user-data")
    assert "t2 secret" not in result.output
    assert sorted(result.output.split()[-3:]) == ["outputs", "uploads", "workspace"]


def test_tmp_is_not_shared_between_threads(isolated: Box) -> None:
    """A file t1 leaves in /tmp is not visible to t2."""
    mark = token()
    isolated.sh(f"echo {mark} > /tmp/shared.txt")
    assert mark not in isolated.sh("cat /tmp/shared.txt 2>&1", thread_id="t2").output


def test_no_capabilities(isolated: Box) -> None:
    """Commands run with no effective capabilities."""
    result = isolated.sh("grep CapEff /proc/self/status")
    assert result.output.split()[-1] == "0000000000000000"


def test_gateway_environment_does_not_leak(box: Box, monkeypatch: pytest.MonkeyPatch) -> None:
    """A secret in the gateway's environment is not in the command's."""
    monkeypatch.setenv("HERDSMAN_TEST_SECRET", "sk-do-not-leak")
    assert "sk-do-not-leak" not in box.sh("env").output


# -- network -------------------------------------------------------------------------------


def test_host_loopback_is_unreachable(isolated: Box) -> None:
    """With the network off, the host's loopback services cannot be reached."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        result = isolated.sh(f"(echo hi > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo CONNECTED; "
                             f"nc -w 2 127.0.0.1 {port} </dev/null 2>/dev/null && echo CONNECTED; true")  # fmt: skip
        server.settimeout(0.2)
        with pytest.raises(OSError):
            server.accept()
    assert "CONNECTED" not in result.output


def test_only_loopback_interface_exists(isolated: Box) -> None:
    """The network namespace has no interface but lo."""
    result = isolated.sh("cat /proc/net/dev")
    names = {line.split(":")[0].strip() for line in result.output.splitlines() if ":" in line}
    assert names == {"lo"}


# -- resource abuse --------------------------------------------------------------------------


def test_fork_bomb_is_contained(box: Box) -> None:
    """A fork bomb hits the pid limit, the command ends, nothing survives, the sandbox works."""
    if box.name == "local" and not cgroup_v1_parents().get("pids") and os.geteuid() == 0:
        pytest.skip("no writable pids cgroup and RLIMIT_NPROC does not bind root: not run unisolated")
    name = f"bomb{uuid.uuid4().hex[:6]}"
    result = box.sh(f"{name}() {{ {name} | {name} & }}; {name}; sleep 1; echo done", timeout=10)
    assert "fork" in result.output.lower() or "resource temporarily unavailable" in result.output.lower()
    assert box.survivors(name) == 0
    assert box.sh("echo alive").output == "alive\n"


def test_memory_bomb_is_killed(box: Box) -> None:
    """A command doubling a string forever is stopped by the memory limit; the sandbox lives on."""
    result = box.sh('a=xxxxxxxxxxxxxxxx; while :; do a="$a$a"; done', timeout=20)
    assert result.exit_code != 0 and not result.timed_out
    assert box.sh("echo alive").output == "alive\n"


def test_disk_fill_stops_at_the_file_size_limit(box: Box) -> None:
    """Writing 100 MB to one file stops at limits.file_size_mb (16 MB here)."""
    result = box.sh("head -c 100000000 /dev/zero > fill.bin; echo rc=$?")
    assert "rc=0" not in result.output
    assert (box.provider.acquire("t1").paths.workspace / "fill.bin").stat().st_size <= 16 * 1024 * 1024
    box.sh("rm -f fill.bin")


def test_a_process_ignoring_sigterm_is_killed_at_the_timeout(box: Box) -> None:
    """trap '' TERM does not save a command from its timeout."""
    mark = token()
    result = box.sh(f"trap '' TERM; echo armed; sleep {mark}", timeout=1)
    assert result.timed_out and result.output.startswith("armed")
    assert box.survivors(f"sleep {mark}") == 0


def test_daemonized_grandchild_dies_with_the_timeout(box: Box) -> None:
    """setsid + nohup + background does not outlive a timed-out command."""
    mark = token()
    result = box.sh(f"(setsid nohup sleep {mark} > /dev/null 2>&1 &); echo started; sleep 100", timeout=1)
    assert result.timed_out and result.output.startswith("started")
    assert box.survivors(f"sleep {mark}") == 0


def test_background_job_dies_when_its_command_ends(box: Box) -> None:
    """A background job does not outlive a command that ends normally."""
    mark = token()
    result = box.sh(f"sleep {mark} > /dev/null 2>&1 & echo ok")
    assert result.output == "ok\n" and not result.timed_out
    assert box.survivors(f"sleep {mark}") == 0


def test_hundred_megabytes_of_output_are_cut(box: Box) -> None:
    """100 MB of output come back as head and tail with the cut stated."""
    result = box.sh("echo FIRST; head -c 100000000 /dev/zero | tr '\\0' x; echo; echo LAST")
    assert result.output.startswith("FIRST\n") and result.output.rstrip().endswith("LAST")
    assert result.truncated_chars > 99_000_000
    assert "characters cut" in result.output and len(result.output) < 25_000


def test_binary_output_is_replaced_not_fatal(box: Box) -> None:
    """Invalid UTF-8 from a command becomes replacement characters."""
    result = box.sh("head -c 2048 /dev/urandom; printf '\\377\\376 done'")
    assert result.output.endswith("\ufffd\ufffd done")


def test_non_utf8_file_names_do_not_break_the_tools(box: Box) -> None:
    """A file whose name is not UTF-8 is listed by ls and glob and shown by bash."""
    box.sh("printf x > \"$(printf 'bad\\377\\376')\".txt")
    for tool, args in (("ls", {}), ("glob", {"pattern": "bad*"})):
        message = box.call(tool, **args)
        assert message.status == "success" and "bad" in str(message.content), (tool, message.content)
    shown = box.sh("ls bad*").output  # GNU ls shows replacement characters, busybox ls '?'
    assert shown.startswith("bad") and shown.rstrip().endswith(".txt")
    box.sh("rm -f bad*")
