"""Bark pushes for runs started through the langgraph-sdk client, against a fake Bark server.

The notifier hears every run that ends in the run manager, so runs of the API are covered like
those of chats or schedules.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import tool
from langgraph.types import interrupt
from langgraph_sdk import get_client

from tests.channels.fake_bark import DEVICE_KEY, FakeBark
from tests.channels.fake_server import channel_config, channel_row
from tests.gateway.gateway_support import HeldModel, RunningGateway, running_gateway, user_message

WEB = "https://herd.example.com"


@tool
def ask_user(question: str) -> str:
    """Ask the user a question and wait for the answer."""
    return f"the user said {interrupt({'question': question})}"


@contextmanager
def gateway(home: Path, bark: FakeBark, model: HeldModel, **section: Any) -> Iterator[RunningGateway]:
    """A gateway pushing to the fake Bark server."""
    settings = {
        "enabled": True,
        "device_key": DEVICE_KEY,
        "base_url": bark.url,
        "web_url": WEB,
        "min_seconds": 0,
        **section,
    }
    with running_gateway(channel_config(home, "bark", settings), model=model, extra_tools=[ask_user]) as served:
        yield served


@pytest.fixture
def quick(home: Path, bark: FakeBark, model: HeldModel) -> Iterator[RunningGateway]:
    """Every run is long enough to push."""
    with gateway(home, bark, model) as served:
        yield served


@pytest.fixture
def patient(home: Path, bark: FakeBark, model: HeldModel) -> Iterator[RunningGateway]:
    """Only runs of an hour or more push, and runs waiting for an answer."""
    with gateway(home, bark, model, min_seconds=3600) as served:
        yield served


async def test_finished_run_is_pushed_with_a_link_to_its_thread(quick: RunningGateway, bark: FakeBark) -> None:
    sdk = get_client(url=quick.url, api_key=None)
    thread_id = (await sdk.threads.create())["thread_id"]
    await sdk.runs.wait(thread_id, "lead_agent", input=user_message("summarise the report"))
    push = bark.wait_for(lambda: bark.named("push"), "a push")[0].params
    assert (
        push["title"] == "Herdsman finished a run" and push["device_key"] == DEVICE_KEY and push["group"] == "Herdsman"
    )
    assert "summarise the report" in push["body"] and thread_id in push["body"]
    assert push["url"] == f"{WEB}/?thread={thread_id}"
    assert channel_row(quick.url, "bark") == {
        "name": "bark",
        "kind": "notify",
        "enabled": True,
        "running": True,
        "state": "running",
        "error": None,
    }


async def test_short_runs_are_quiet_but_a_question_is_pushed(patient: RunningGateway, bark: FakeBark) -> None:
    sdk = get_client(url=patient.url, api_key=None)
    thread_id = (await sdk.threads.create())["thread_id"]
    await sdk.runs.wait(thread_id, "lead_agent", input=user_message("hello"))
    await sdk.runs.wait(thread_id, "lead_agent", input=user_message("ask shall I deploy"))
    assert (await sdk.threads.get(thread_id))["status"] == "interrupted"
    waiting = bark.wait_for(lambda: bark.named("push"), "the push of the question")
    assert [p.params["title"] for p in waiting] == ["Herdsman is waiting for you"], "the short run pushed nothing"
    assert waiting[0].params["level"] == "timeSensitive" and waiting[0].params["url"].endswith(thread_id)


async def test_refused_push_shows_in_the_status_and_runs_go_on(home: Path, bark: FakeBark, model: HeldModel) -> None:
    with gateway(home, bark, model, device_key="unknown-key") as served:
        sdk = get_client(url=served.url, api_key=None)
        thread_id = (await sdk.threads.create())["thread_id"]
        first = await sdk.runs.wait(thread_id, "lead_agent", input=user_message("one"))
        bark.wait_for(lambda: bark.named("push"), "the refused push")

        def degraded() -> dict[str, Any] | None:
            row = channel_row(served.url, "bark")
            return row if row["state"] == "degraded" else None

        row = bark.wait_for(degraded, "bark to show the failure")
        assert "device key not found" in row["error"] and row["running"] is True
        second = await sdk.runs.wait(thread_id, "lead_agent", input=user_message("two"))
        assert first["messages"][-1]["content"] == "echo: one" and second["messages"][-1]["content"] == "echo: two"


async def test_on_a_shared_gateway_only_the_chosen_users_runs_are_pushed(
    home: Path, bark: FakeBark, model: HeldModel
) -> None:
    keys = [{"key": "alice-key", "user": "alice"}, {"key": "bob-key", "user": "bob"}]
    settings = {"enabled": True, "device_key": DEVICE_KEY, "base_url": bark.url, "min_seconds": 0, "users": ["alice"]}
    config = channel_config(home, "bark", settings, gateway={"api_keys": keys})
    with running_gateway(config, model=model) as served:
        bob, alice = (get_client(url=served.url, api_key=key) for key in ("bob-key", "alice-key"))
        bobs = (await bob.threads.create(metadata={"owner": "alice"}))["thread_id"]  # a forged owner is ignored
        await bob.runs.wait(bobs, "lead_agent", input=user_message("bob's secret plan"))
        alices = (await alice.threads.create())["thread_id"]
        await alice.runs.wait(alices, "lead_agent", input=user_message("alice's report"))
        pushes = bark.wait_for(lambda: bark.named("push"), "alice's push")
        assert [p.params["body"].split("\n")[-1] for p in pushes] == [f"Thread {alices}"]
        assert not any("bob" in p.params["body"] for p in pushes)
