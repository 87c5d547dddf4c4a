"""The local provider: choosing how commands run, refusing bash clearly, thread safety."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from herdsman.config.schema import HerdsmanConfig
from herdsman.sandbox import (
    CommandNotAllowedError,
    InvalidThreadIdError,
    LocalSandboxProvider,
    Sandbox,
    SandboxProvider,
    build_sandbox_provider,
    make_sandbox_tools,
)
from herdsman.sandbox import bwrap as bwrap_module
from herdsman.sandbox.bwrap import BwrapStatus

NO_BWRAP = BwrapStatus(False, None, "bubblewrap is not installed")


@pytest.fixture
def without_bwrap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bwrap_module, "bwrap_status", lambda: NO_BWRAP)


def test_bash_is_refused_without_bwrap_and_without_opt_in(make_config, make_runner) -> None:
    provider, call = make_runner(make_config(isolation="none", allow_unisolated_bash=False))
    assert provider.isolation == "off"
    message = call("bash", command="echo hi")
    assert message.status == "error"
    assert "bash tool is unavailable" in message.content
    assert "apt-get install bubblewrap" in message.content
    assert "sandbox.allow_unisolated_bash: true" in message.content
    assert "config.yaml" in message.content
    assert call("write_file", path="a.txt", content="files still work").status == "success"
    with pytest.raises(CommandNotAllowedError):
        provider.acquire("t1").execute("echo hi")


def test_auto_without_bubblewrap_says_it_is_not_installed(without_bwrap, make_config, make_runner) -> None:
    provider, call = make_runner(make_config(isolation="auto"))
    assert provider.isolation == "off"
    content = call("bash", command="echo hi").content
    assert "bubblewrap is not installed" in content
    assert "apt-get install bubblewrap" in content
    assert "sandbox.allow_unisolated_bash: true" in content


def test_explicit_bwrap_isolation_without_bubblewrap_is_refused(without_bwrap, make_config, make_runner) -> None:
    _, call = make_runner(make_config(isolation="bwrap", allow_unisolated_bash=True))
    content = call("bash", command="echo hi").content
    assert "sandbox.isolation is bwrap but bubblewrap is not installed" in content


def test_auto_without_bubblewrap_but_opted_in_runs_on_the_host(without_bwrap, make_config, make_runner) -> None:
    provider, call = make_runner(make_config(isolation="auto", allow_unisolated_bash=True))
    assert provider.isolation == "host"
    assert call("bash", command="echo hi").content == "hi"


def test_bwrap_probe_is_cached_and_reports_a_missing_binary(monkeypatch: pytest.MonkeyPatch) -> None:
    assert bwrap_module.bwrap_status() is bwrap_module.bwrap_status()
    monkeypatch.setattr(bwrap_module.shutil, "which", lambda name, **kw: None)
    status = bwrap_module.bwrap_status.__wrapped__()
    assert not status.available and status.reason == "bubblewrap is not installed"


def test_build_sandbox_provider_gives_a_local_provider(make_config) -> None:
    provider = build_sandbox_provider(make_config())
    assert isinstance(provider, LocalSandboxProvider)
    assert isinstance(provider, SandboxProvider)
    assert isinstance(provider.acquire("t1"), Sandbox)


def test_relative_skills_path_is_taken_from_the_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "proj" / "skills" / "public").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "proj")
    provider = LocalSandboxProvider(HerdsmanConfig.model_validate({"home": str(tmp_path / "home")}))
    assert provider.acquire("t1").list_dir("/mnt/skills") == ["/mnt/skills/public/"]


def test_acquire_is_thread_safe_and_release_keeps_files(make_config) -> None:
    provider = LocalSandboxProvider(make_config(isolation="none"))
    got: list[object] = []

    def grab() -> None:
        got.append(provider.acquire("shared"))

    threads = [threading.Thread(target=grab) for _ in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(s) for s in got}) == 1
    sandbox = provider.acquire("shared")
    sandbox.write_text("keep.txt", "kept")
    provider.release("shared")
    assert provider.acquire("shared") is not sandbox
    assert provider.acquire("shared").read_text("keep.txt") == "kept"
    provider.close()


def test_a_thread_whose_folders_are_being_made_holds_up_no_other(make_config, monkeypatch) -> None:
    """One new thread's placement (on the quota volume: ioctls, folders) runs while another
    thread's sandbox is handed out, instead of one after the other."""
    from herdsman.sandbox import local

    provider = LocalSandboxProvider(make_config(isolation="none"))
    entered, other_done = threading.Event(), threading.Event()
    seen: list[bool] = []
    place = local.place_on_volume

    def slow_place(volume, home, thread_id, config) -> None:
        if thread_id == "slow":
            entered.set()
            seen.append(other_done.wait(timeout=30))  # set only once "fast" was handed out
        place(volume, home, thread_id, config)

    monkeypatch.setattr(local, "place_on_volume", slow_place)
    slow = threading.Thread(target=provider.acquire, args=("slow",))
    slow.start()
    assert entered.wait(timeout=30)
    provider.acquire("fast").write_text("a.txt", "made while another thread was being placed")
    other_done.set()
    slow.join()
    assert seen == [True]
    assert provider.acquire("slow").list_dir("/mnt/user-data/workspace") == []
    provider.close()


def test_acquire_validates_the_thread_id(make_config) -> None:
    provider = LocalSandboxProvider(make_config(isolation="none"))
    with pytest.raises(InvalidThreadIdError, match="invalid thread id"):
        provider.acquire("../../etc")


def _named(pid: int, name: str) -> bool:
    """Whether process ``pid`` runs the program ``name`` (not a shell whose command line names it)."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() == name
    except OSError:
        return False


def test_close_kills_running_commands(make_config, find_pids) -> None:
    provider = LocalSandboxProvider(make_config(isolation="none", allow_unisolated_bash=True))
    sandbox = provider.acquire("t1")
    token = f"{uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    results = []
    worker = threading.Thread(target=lambda: results.append(sandbox.execute(f"echo go; sleep {token}", timeout=60)))
    worker.start()
    while not [pid for pid in find_pids(f"sleep {token}") if _named(pid, "sleep")]:  # then "go" was written
        assert worker.is_alive()
    provider.close()
    worker.join(timeout=10)
    assert not worker.is_alive()
    assert results[0].output.startswith("go\n")
    assert "[cancelled: the process tree was killed]" in results[0].output
    assert not results[0].timed_out
    deadline = time.monotonic() + 5  # SIGKILLed processes take a moment to be gone
    while find_pids(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert find_pids(token) == []


async def test_cancelling_a_run_kills_its_bash_command(make_config, find_pids) -> None:
    config = make_config(isolation="none", allow_unisolated_bash=True, command_timeout_seconds=60)
    provider = LocalSandboxProvider(config)
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode(make_sandbox_tools(provider, config.sandbox)))
    graph.add_edge(START, "tools")
    token = f"{uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    call = {"name": "bash", "args": {"command": f"sleep {token}"}, "id": "c1"}
    run = asyncio.ensure_future(
        graph.compile().ainvoke({"messages": [AIMessage("", tool_calls=[call])]}, {"configurable": {"thread_id": "t1"}})
    )
    while not find_pids(f"sleep {token}"):
        await asyncio.sleep(0.02)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    for _ in range(500):  # up to 10 s on a loaded machine: the kill runs in the tool's worker thread
        if not find_pids(token):
            break
        await asyncio.sleep(0.02)
    assert find_pids(token) == []
