"""The docker provider against a real Docker-API engine (podman's compatible service).

Each test checks what a user of the bash and file tools would: where files land, what the
container may do, how commands end, and that containers come and go as promised.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from herdsman.config.schema import HerdsmanConfig
from herdsman.sandbox import Sandbox, SandboxProvider, build_sandbox_provider, make_sandbox_tools
from herdsman.sandbox.docker import (
    LABEL_OWNER,
    LABEL_THREAD,
    DockerEngineError,
    DockerSandboxProvider,
)
from tests.sandbox.podman_engine import EngineUnavailable, PodmanEngine, shared_engine


@pytest.fixture(scope="module")
def engine() -> PodmanEngine:
    try:
        return shared_engine()
    except EngineUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture
def docker_config(tmp_path: Path, skills_dir: Path, engine: PodmanEngine) -> Callable[..., HerdsmanConfig]:
    """``docker_config(**sandbox)``: a docker-provider config on the test engine."""

    def factory(**sandbox: Any) -> HerdsmanConfig:
        docker = {"base_url": engine.base_url, "image": engine.image, "pull": "never", **sandbox.pop("docker", {})}
        limits = {"memory_mb": 128, "pids": 64, "cpus": 1, "file_size_mb": 16, **sandbox.pop("limits", {})}
        section = {"provider": "docker", "command_timeout_seconds": 20, "docker": docker, "limits": limits, **sandbox}
        return HerdsmanConfig.model_validate(
            {"home": str(tmp_path / "home"), "skills": {"path": str(skills_dir)}, "sandbox": section}
        )

    return factory


@pytest.fixture
def provider(docker_config) -> Iterator[DockerSandboxProvider]:
    built = build_sandbox_provider(docker_config())
    assert isinstance(built, DockerSandboxProvider)
    yield built
    built.cleanup()
    built.close()


@pytest.fixture
def call(provider: DockerSandboxProvider, docker_config):
    """Tool calls through a ToolNode, as the agent makes them."""
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode(make_sandbox_tools(provider, docker_config().sandbox)))
    graph.add_edge(START, "tools")
    app = graph.compile()

    def run(name: str, thread_id: str = "t1", **args: Any) -> ToolMessage:
        message = AIMessage("", tool_calls=[{"name": name, "args": args, "id": "c1"}])
        out = app.invoke({"messages": [message]}, {"configurable": {"thread_id": thread_id}})
        return [m for m in out["messages"] if isinstance(m, ToolMessage)][0]

    return run


def ok(message) -> str:
    assert message.status == "success", message.content
    return str(message.content)


def test_provider_satisfies_the_protocols(provider: DockerSandboxProvider) -> None:
    assert isinstance(provider, SandboxProvider)
    assert isinstance(provider.acquire("t1"), Sandbox)
    assert provider.acquire("t1") is provider.acquire("t1")


def test_container_is_locked_down(provider: DockerSandboxProvider) -> None:
    sandbox = provider.acquire("t1")
    sandbox.ensure_running()
    attrs = provider.client.containers.get(provider.container_name("t1")).attrs
    host = attrs["HostConfig"]
    assert host["ReadonlyRootfs"] is True
    assert host["NetworkMode"] == "none"
    assert host["Memory"] == 128 * 1024 * 1024
    assert host["PidsLimit"] == 64
    assert host["NanoCpus"] == 1_000_000_000
    dropped = {c.upper().removeprefix("CAP_") for c in host["CapDrop"] or []}
    assert "ALL" in dropped or {"CHOWN", "DAC_OVERRIDE", "SETUID", "SETGID", "NET_RAW"} <= dropped
    assert not host.get("CapAdd")
    assert "no-new-privileges" in host["SecurityOpt"]
    fsize = [u for u in host["Ulimits"] if u["Name"].upper().endswith("FSIZE")]
    assert fsize and fsize[0]["Hard"] == 16 * 1024 * 1024
    assert attrs["Config"]["User"] == "1000:1000"
    assert attrs["Config"]["Labels"][LABEL_THREAD] == "t1"
    assert attrs["Config"]["Labels"][LABEL_OWNER] == provider.owner


def test_commands_run_as_a_non_root_user_without_capabilities(call) -> None:
    out = ok(call("bash", command="id -u; grep CapEff /proc/self/status; pwd; echo $HOME"))
    lines = out.splitlines()
    assert lines[0] == "1000"
    assert lines[1].split()[1] == "0000000000000000"
    assert lines[2:] == ["/mnt/user-data/workspace", "/mnt/user-data/workspace"]


def test_outputs_in_a_container_command_is_the_outputs_folder(call, provider: DockerSandboxProvider) -> None:
    """The container's working directory is the workspace too: ``outputs/...`` still lands in outputs."""
    ok(call("bash", command="cd /tmp && echo c > outputs/c.txt && mkdir -p ./outputs/sub"))
    paths = provider.acquire("t1").paths
    assert (paths.outputs / "c.txt").read_text() == "c\n" and (paths.outputs / "sub").is_dir()
    assert not (paths.workspace / "outputs").exists()


def test_files_cross_between_tools_and_the_container(call, provider: DockerSandboxProvider) -> None:
    ok(call("write_file", path="notes/plan.md", content="step one\n"))
    assert (
        ok(call("bash", command="cat notes/plan.md; echo two >> notes/plan.md; echo r > /mnt/user-data/outputs/r.txt"))
        == "step one"
    )
    assert ok(call("read_file", path="/mnt/user-data/workspace/notes/plan.md")) == "     1\tstep one\n     2\ttwo"
    ok(call("str_replace", path="notes/plan.md", old="two", new="three"))
    assert ok(call("bash", command="tail -1 notes/plan.md")) == "three"
    paths = provider.acquire("t1").paths
    assert (paths.outputs / "r.txt").read_text() == "r\n"
    assert ok(call("bash", command="ls /mnt/skills/public")) == "demo"
    assert "Demo skill" in ok(call("read_file", path="/mnt/skills/public/demo/SKILL.md"))


def test_root_skills_and_other_dirs_are_read_only(call) -> None:
    out = ok(
        call("bash", command="touch /etc/x /usr/x /mnt/skills/x /mnt/user-data/x 2>&1; echo tmp > /tmp/t && cat /tmp/t")
    )
    assert out.count("Read-only file system") == 4
    assert out.splitlines()[-1] == "tmp"


def test_network_is_none_by_default(call) -> None:
    out = ok(call("bash", command="ls /sys/class/net; nc -w 2 127.0.0.1 22 </dev/null; echo rc=$?"))
    assert out.splitlines()[0] == "lo"
    assert "rc=0" not in out


def test_exit_codes_and_stderr_come_back(provider: DockerSandboxProvider) -> None:
    result = provider.acquire("t1").execute("echo out; echo err >&2; exit 3")
    assert result.exit_code == 3
    assert sorted(result.output.splitlines()) == ["err", "out"]
    assert not result.timed_out


def test_timeout_kills_the_command_and_its_background_jobs(provider: DockerSandboxProvider) -> None:
    sandbox = provider.acquire("t1")
    result = sandbox.execute("echo started; (sleep 300 &) ; setsid sleep 301 & sleep 302", timeout=1)
    assert result.timed_out
    assert result.exit_code == 137
    assert result.output.startswith("started")
    after = sandbox.execute("ps -o args | grep -c '^sleep 30[012]'")
    assert after.output.strip() == "0"


def test_background_jobs_end_with_their_command(provider: DockerSandboxProvider) -> None:
    sandbox = provider.acquire("t1")
    result = sandbox.execute("nohup sleep 303 > /dev/null 2>&1 & echo ok")
    assert result.output == "ok\n" and not result.timed_out
    assert sandbox.execute("ps -o args | grep -c '^sleep 303'").output.strip() == "0"


def test_large_output_is_cut_in_the_middle(provider: DockerSandboxProvider) -> None:
    result = provider.acquire("t1").execute("echo FIRST; yes x | head -c 5000000; echo; echo LAST")
    assert result.output.startswith("FIRST\n") and result.output.endswith("LAST\n")
    assert result.truncated_chars > 4_900_000
    assert "characters cut" in result.output


def test_output_limit_comes_from_sandbox_limits(docker_config) -> None:
    provider = DockerSandboxProvider(docker_config(limits={"output": 1000}))
    try:
        result = provider.acquire("t1").execute("yes y | head -c 50000")
        assert len(result.output) < 1100 and result.truncated_chars == 50_000 - 1000
    finally:
        provider.cleanup()
        provider.close()


def test_a_dead_container_is_recreated_with_files_intact(provider: DockerSandboxProvider) -> None:
    sandbox = provider.acquire("t1")
    sandbox.execute("echo kept > keep.txt")
    first = sandbox.ensure_running()
    provider.client.containers.get(first).kill()
    assert sandbox.execute("cat keep.txt").output == "kept\n"
    assert sandbox.box.container_id != first
    provider.client.containers.get(sandbox.box.container_id).remove(force=True)
    assert sandbox.execute("cat keep.txt").output == "kept\n"


def test_idle_containers_are_reaped_and_come_back(provider: DockerSandboxProvider) -> None:
    sandbox = provider.acquire("t1")
    sandbox.execute("echo x > x.txt")
    assert provider.reap_idle(max_idle_seconds=3600) == []
    assert provider.reap_idle(max_idle_seconds=0) == ["t1"]
    assert provider.containers() == []
    assert sandbox.read_text("x.txt") == "x\n"
    assert sandbox.execute("cat x.txt").output == "x\n"
    assert len(provider.containers()) == 1


def test_release_removes_the_container_but_keeps_files(provider: DockerSandboxProvider) -> None:
    provider.acquire("t1").execute("echo x > x.txt")
    provider.acquire("t2").execute("true")
    assert {c.labels[LABEL_THREAD] for c in provider.containers()} == {"t1", "t2"}
    provider.release("t1")
    assert {c.labels[LABEL_THREAD] for c in provider.containers()} == {"t2"}
    assert provider.acquire("t1").read_text("x.txt") == "x\n"


def test_cleanup_by_label_removes_containers_of_an_earlier_process(docker_config) -> None:
    first = DockerSandboxProvider(docker_config())
    first.acquire("t1").execute("true")  # the process "crashes" without close()
    second = DockerSandboxProvider(docker_config())
    assert second.acquire("t1").execute("echo adopted").output == "adopted\n"
    assert len(second.containers()) == 1
    assert second.cleanup() == 1
    assert second.containers() == []
    second.close()
    first.close()


def test_threads_cannot_see_each_other(provider: DockerSandboxProvider) -> None:
    provider.acquire("t2").write_text("secret.txt", "t2 secret")
    out = provider.acquire("t1").execute("cat /mnt/user-data/workspace/secret.txt; ls / /mnt/user-data")
    assert "t2 secret" not in out.output


def test_no_host_path_in_output(provider: DockerSandboxProvider, tmp_path: Path) -> None:
    out = provider.acquire("t1").execute("cat /proc/self/mountinfo; readlink -f .; df")
    assert str(tmp_path) not in out.output
    assert os.path.realpath(tmp_path) not in out.output
    assert "/mnt/user-data/workspace" in out.output


def test_parallel_commands_in_one_thread(provider: DockerSandboxProvider) -> None:
    sandbox = provider.acquire("t1")
    results: list[str] = []
    workers = [
        threading.Thread(target=lambda i=i: results.append(sandbox.execute(f"echo {i}").output)) for i in range(4)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert sorted(results) == [f"{i}\n" for i in range(4)]


def test_files_written_by_tools_are_writable_by_the_container(call) -> None:
    ok(call("write_file", path="deep/dir/f.txt", content="a"))
    assert ok(call("bash", command="echo b >> deep/dir/f.txt && touch deep/dir/new && cat deep/dir/f.txt")) == "ab"


def test_unreachable_engine_says_what_to_do(docker_config, tmp_path: Path) -> None:
    config = docker_config(docker={"base_url": f"unix://{tmp_path}/missing.sock"})
    with pytest.raises(DockerEngineError) as info:
        DockerSandboxProvider(config)
    message = str(info.value)
    assert "cannot reach the Docker engine" in message
    assert "sandbox.docker.base_url" in message


def test_missing_image_says_how_to_build_it(docker_config) -> None:
    provider = DockerSandboxProvider(docker_config(docker={"image": "localhost/no-such-image:1"}))
    try:
        with pytest.raises(DockerEngineError, match="python -m herdsman.sandbox.image"):
            provider.acquire("t1").execute("true")
    finally:
        provider.close()


def test_memory_bomb_is_killed_and_the_sandbox_lives_on(provider: DockerSandboxProvider) -> None:
    sandbox = provider.acquire("t1")
    result = sandbox.execute('a=xxxxxxxxxxxxxxxx; while :; do a="$a$a"; done')
    assert result.exit_code == 137 and not result.timed_out  # the OOM killer's SIGKILL
    assert sandbox.execute("echo alive").output == "alive\n"


def test_fork_bomb_is_contained_by_the_pid_limit(provider: DockerSandboxProvider) -> None:
    sandbox = provider.acquire("t1")
    result = sandbox.execute("bomb() { bomb | bomb & }; bomb; sleep 2; echo survived", timeout=5)
    assert "can't fork" in result.output  # the limit was hit, and the command still ended
    assert sandbox.execute("echo alive").output == "alive\n"
    assert sandbox.execute("ps -o pid | wc -l").output.strip() in {str(n) for n in range(2, 8)}


def test_file_size_limit_stops_a_disk_fill(provider: DockerSandboxProvider) -> None:
    sandbox = provider.acquire("t1")
    result = sandbox.execute("head -c 100000000 /dev/zero > big.bin; echo rc=$?")
    assert "rc=0" not in result.output
    assert (sandbox.paths.workspace / "big.bin").stat().st_size <= 16 * 1024 * 1024


def test_a_leftover_container_with_other_settings_is_replaced(docker_config) -> None:
    first = DockerSandboxProvider(docker_config())
    old = first.acquire("t1").ensure_running()
    second = DockerSandboxProvider(docker_config(limits={"memory_mb": 96}))
    try:
        new = second.acquire("t1").ensure_running()
        assert new != old
        assert second.client.containers.get(new).attrs["HostConfig"]["Memory"] == 96 * 1024 * 1024
        assert len(second.containers()) == 1
    finally:
        second.cleanup()
        second.close()
        first.close()


def test_the_reaper_removes_idle_containers_by_itself(docker_config) -> None:
    provider = DockerSandboxProvider(docker_config(docker={"idle_timeout_seconds": 1}))
    try:
        provider.acquire("t1").execute("echo x > x.txt")
        for _ in range(100):  # the reaper looks every second
            if not provider.containers():
                break
            threading.Event().wait(0.1)
        assert provider.containers() == []
        assert provider.acquire("t1").execute("cat x.txt").output == "x\n"
    finally:
        provider.cleanup()
        provider.close()


def test_listing_survives_a_container_removed_mid_list(provider: DockerSandboxProvider, monkeypatch) -> None:
    """The engine answers 'no such container' when one is reaped between its list and inspection."""
    from docker.models.containers import ContainerCollection

    import docker

    provider.acquire("t1").execute("true")
    real_list = ContainerCollection.list
    failures = [
        docker.errors.NotFound("gone"),
        docker.errors.APIError("500 Server Error: container abc does not exist in database: no such container"),
    ]

    def flaky_list(self, *args, **kwargs):
        if failures:
            raise failures.pop(0)
        return real_list(self, *args, **kwargs)

    monkeypatch.setattr(ContainerCollection, "list", flaky_list)  # a new collection per .containers
    assert len(provider.containers()) == 1
    assert failures == []


def test_exec_frames_split_anywhere_are_decoded() -> None:
    from herdsman.sandbox.docker_stream import FrameDecoder
    from herdsman.sandbox.process import StreamCapture

    stream = b"\x01\x00\x00\x00\x00\x00\x00\x06hello\n" + b"\x02\x00\x00\x00\x00\x00\x00\x04err\n"
    for cut in range(len(stream) + 1):
        capture = StreamCapture(1000)
        decoder = FrameDecoder(capture)
        decoder.feed(stream[:cut])
        decoder.feed(stream[cut:])
        capture.finish()
        assert capture.text() == "hello\nerr\n", cut
        assert (capture.stdout.text(), capture.stderr.text()) == ("hello\n", "err\n"), cut


def test_host_home_translates_the_mount_sources(tmp_path: Path) -> None:
    from herdsman.config.schema import SandboxConfig
    from herdsman.sandbox.docker import container_options
    from herdsman.sandbox.limits import Limits
    from herdsman.sandbox.paths import ThreadPaths

    paths = ThreadPaths.for_thread(tmp_path / "home", "t1")
    sandbox = SandboxConfig.model_validate({"docker": {"host_home": "/srv/herdsman"}})
    options = container_options(paths, sandbox, Limits(), name="n", owner="o", user="1000:1000")
    sources = {m["Target"]: m["Source"] for m in options["mounts"]}
    assert sources["/mnt/user-data/workspace"] == "/srv/herdsman/threads/t1/user-data/workspace"
    assert sources["/mnt/user-data/outputs"] == "/srv/herdsman/threads/t1/user-data/outputs"


def _wait_until(predicate: Callable[[], bool]) -> bool:
    for _ in range(300):
        if predicate():
            return True
        threading.Event().wait(0.05)
    return predicate()


def test_warm_pool_hands_started_containers_to_new_threads(docker_config, tmp_path: Path) -> None:
    provider = DockerSandboxProvider(docker_config(docker={"warm_pool": 2}))
    try:
        assert _wait_until(lambda: provider.pool_ready == 2)
        sandbox = provider.acquire("fresh")
        assert sandbox.box.container_id is not None  # started before the thread existed
        sandbox.write_text("hello.txt", "from the tool\n")
        result = sandbox.execute("cat hello.txt; ls /mnt/user-data; cat /proc/self/mountinfo")
        assert result.output.startswith("from the tool\n")
        assert "outputs" in result.output and str(tmp_path) not in result.output
        assert provider.client.containers.get(sandbox.box.container_id).name == provider.container_name("fresh")
        assert (sandbox.paths.workspace / "hello.txt").exists()
        assert _wait_until(lambda: provider.pool_ready == 2)  # refilled

        (tmp_path / "home" / "threads" / "old" / "user-data").mkdir(parents=True)
        assert provider.acquire("old").box.container_id is None  # a thread with files gets its own
    finally:
        provider.close()
        provider.cleanup()
    assert provider.containers() == []
    assert not any((tmp_path / "home" / "sandbox-pool").iterdir())


def test_network_follows_sandbox_network(tmp_path: Path) -> None:
    from herdsman.config.schema import SandboxConfig
    from herdsman.sandbox.docker import container_options
    from herdsman.sandbox.limits import Limits
    from herdsman.sandbox.paths import ThreadPaths

    paths = ThreadPaths.for_thread(tmp_path / "home", "t1")
    off = container_options(paths, SandboxConfig(), Limits(), name="n", owner="o", user="1:1")
    on = container_options(paths, SandboxConfig(network=True, docker={"network": "sandbox-net"}), Limits(),
                           name="n", owner="o", user="1:1")  # fmt: skip
    assert off["network_mode"] == "none" and on["network_mode"] == "sandbox-net"
    assert off["labels"]["herdsman.spec"] != on["labels"]["herdsman.spec"]


def test_file_versions_restore_what_the_container_wrote(provider: DockerSandboxProvider, docker_config) -> None:
    """Versions work on the docker provider: files the container wrote come back, owned by the
    container's user, so the next command can change them."""
    from herdsman.sandbox.history import thread_history

    box = provider.acquire("t1")
    assert box.execute("mkdir -p d && echo one > d/a.txt && echo keep > k.txt").exit_code == 0
    history = thread_history(provider, docker_config(), "t1")
    assert history is not None
    first = history.capture()
    assert box.execute("echo two > d/a.txt && rm k.txt && echo new > b.txt").exit_code == 0
    history.restore(first)
    out = box.execute("cat d/a.txt k.txt; ls; echo more >> d/a.txt && echo appended")
    assert out.exit_code == 0, out.output
    assert out.output.split() == ["one", "keep", "d", "k.txt", "appended"]


def test_the_change_journal_sees_what_the_container_writes(provider: DockerSandboxProvider, docker_config) -> None:
    """A step that changed nothing in the container costs no capture; an in-place rewrite of the
    same size by the container is seen through the bind mount and lists only its folder."""
    from herdsman.sandbox.history import thread_history

    history, box = thread_history(provider, docker_config(), "t1"), provider.acquire("t1")
    assert history is not None and box.execute("mkdir -p d && echo one > d/a.txt").exit_code == 0
    first = history.capture()
    assert box.execute("cat d/a.txt").exit_code == 0
    assert history.capture() == first and history.capture_counts["skipped"] == 1
    assert box.execute("echo two > d/a.txt").exit_code == 0
    second = history.capture()
    assert history.diff(first, second)["changed"] == ["/mnt/user-data/workspace/d/a.txt"]
    assert history.capture_counts["walked"] == 1 and history.capture_counts["folders"] == 1


def test_output_read_with_the_response_headers_is_not_lost() -> None:
    """A quick command's output can arrive with the exec's HTTP response headers; the HTTP client
    then holds it in its buffer, not the socket. It must still be the command's output."""
    import io
    import socket
    import time
    from types import SimpleNamespace

    from herdsman.sandbox.docker_stream import StreamReader
    from herdsman.sandbox.process import StreamCapture

    engine, ours = socket.socketpair()
    raw = socket.SocketIO(ours, "rb")
    engine.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\n\r\n"
        b"\x01\x00\x00\x00\x00\x00\x00\x03hi\n"
    )
    response = io.BufferedReader(raw)
    while response.readline() != b"\r\n":  # the HTTP client reads the headers...
        pass
    raw._response = SimpleNamespace(raw=SimpleNamespace(_fp=SimpleNamespace(fp=response)))  # as docker's SDK does
    capture = StreamCapture(1000)
    reader = StreamReader(raw, capture)
    engine.sendall(b"\x01\x00\x00\x00\x00\x00\x00\x06there\n")
    engine.close()
    assert reader.read(time.monotonic() + 5) == "eof"
    reader.close()
    capture.finish()
    assert capture.text() == "hi\nthere\n"
