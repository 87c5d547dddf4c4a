"""Fixtures for sandbox tests: a config with a tmp home, providers, and a ToolNode runner."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from herdsman.config.schema import HerdsmanConfig
from herdsman.sandbox import LocalSandboxProvider, make_sandbox_tools
from herdsman.sandbox.bwrap import bwrap_status

HAVE_BWRAP = bwrap_status().available


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("bwrap") and not HAVE_BWRAP:
        pytest.skip(f"bubblewrap unusable here: {bwrap_status().reason}")


@pytest.fixture
def skills_dir(tmp_path: Path) -> Path:
    skills = tmp_path / "skills"
    (skills / "public" / "demo").mkdir(parents=True)
    (skills / "public" / "demo" / "SKILL.md").write_text("---\nname: demo\n---\nDemo skill.\n")
    return skills


@pytest.fixture
def make_config(tmp_path: Path, skills_dir: Path) -> Callable[..., HerdsmanConfig]:
    """A config with home and skills under tmp_path; keyword arguments go to ``sandbox:``."""

    def factory(**sandbox: Any) -> HerdsmanConfig:
        return HerdsmanConfig.model_validate(
            {"home": str(tmp_path / "home"), "skills": {"path": str(skills_dir)}, "sandbox": sandbox}
        )

    return factory


@pytest.fixture
def host_config(make_config: Callable[..., HerdsmanConfig]) -> HerdsmanConfig:
    """Commands run on the host (explicit opt-in), so tests work without bubblewrap."""
    return make_config(isolation="none", allow_unisolated_bash=True, command_timeout_seconds=20)


@pytest.fixture
def bwrap_config(make_config: Callable[..., HerdsmanConfig]) -> HerdsmanConfig:
    """Commands jailed by bubblewrap (tests using it are marked ``bwrap``)."""
    return make_config(isolation="bwrap", command_timeout_seconds=20)


ToolCaller = Callable[..., ToolMessage]


def tool_runner(config: HerdsmanConfig) -> tuple[LocalSandboxProvider, Callable[..., Any]]:
    """A provider and ``call(name, thread_id="t1", **args) -> ToolMessage`` through a ToolNode.

    ``call_many([(name, args), ...])`` sends several tool calls in one AI message, which the
    ToolNode runs in parallel, as it does for a model's parallel tool calls.
    """
    provider = LocalSandboxProvider(config)
    tools = make_sandbox_tools(provider, config.sandbox)
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "tools")
    app = graph.compile()

    def call_many(calls: list[tuple[str, dict[str, Any]]], thread_id: str = "t1") -> list[ToolMessage]:
        message = AIMessage(
            "",
            tool_calls=[{"name": n, "args": a, "id": f"call-{i}"} for i, (n, a) in enumerate(calls)],
        )
        out = app.invoke({"messages": [message]}, {"configurable": {"thread_id": thread_id}})
        results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
        assert len(results) == len(calls)
        return results

    def call(name: str, thread_id: str = "t1", **args: Any) -> ToolMessage:
        return call_many([(name, args)], thread_id=thread_id)[0]

    call.many = call_many  # type: ignore[attr-defined]
    return provider, call


@pytest.fixture
def host_tools(host_config: HerdsmanConfig) -> tuple[LocalSandboxProvider, Callable[..., Any]]:
    return tool_runner(host_config)


@pytest.fixture
def call(host_tools: tuple[LocalSandboxProvider, Callable[..., Any]]) -> Callable[..., Any]:
    """Run a tool in thread t1 of a host-run sandbox: ``call(name, **args)`` gives its ToolMessage."""
    return host_tools[1]


@pytest.fixture
def ws(host_tools: tuple[LocalSandboxProvider, Callable[..., Any]]) -> Path:
    """The workspace folder of thread t1 of :func:`call`'s sandbox."""
    return host_tools[0].acquire("t1").paths.workspace


@pytest.fixture
def bwrap_tools(bwrap_config: HerdsmanConfig) -> tuple[LocalSandboxProvider, Callable[..., Any]]:
    return tool_runner(bwrap_config)


def pids_with(token: str) -> list[int]:
    """Live (non-zombie) processes whose command line contains ``token``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{name}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if token in cmdline and state != b"Z":
            found.append(int(name))
    return found


@pytest.fixture
def find_pids() -> Callable[[str], list[int]]:
    """``find_pids(token)``: live processes whose command line contains ``token``."""
    return pids_with


@pytest.fixture
def make_runner() -> Callable[[HerdsmanConfig], tuple[LocalSandboxProvider, Callable[..., Any]]]:
    """``make_runner(config)`` -> (provider, call) as in :func:`tool_runner`."""
    return tool_runner
