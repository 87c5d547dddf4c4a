"""The CLI acts as the host's owner on a home whose gateway has API keys: a thread made by the
embedded client (``herdsman run``) is the first admin key's in the web UI's list, nobody else's;
a user's thread keeps its owner when the CLI continues it; the CLI lists every thread of the home;
threads made before keys were set become the admin's when the gateway starts."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest

from herdsman.client import HerdsmanClient
from herdsman.models.scripted import ScriptedChatModel
from herdsman.runtime.storage.record_store import open_record_store
from herdsman.runtime.storage.threads import ThreadStore
from tests.gateway.gateway_support import running_gateway
from tests.support import logged_events, make_config

ADMIN = {"key": "key-admin-0001", "role": "admin", "user": "ana"}
BO = "key-bo-0002"


def keyed(home: Path, keys: list) -> object:
    return make_config(home, checkpointer={"type": "sqlite"}, gateway={"api_keys": keys})


async def cli_run(config: object, thread: str, text: str = "Write a haiku about rain") -> None:
    async with HerdsmanClient(
        config, model=ScriptedChatModel(responses=["Rain on the roof."], on_exhausted="repeat_last")
    ) as client:
        await client.run(text, thread_id=thread)


async def listed(http: httpx.AsyncClient, url: str, key: str) -> list[str]:
    found = await http.post(f"{url}/threads/search", json={"limit": 100}, headers={"x-api-key": key})
    assert found.status_code == 200, found.text
    return [t["thread_id"] for t in found.json()]


async def test_a_cli_thread_is_the_admin_s_in_the_gateway_and_nobody_else_s(home: Path) -> None:
    config = keyed(home, [BO, ADMIN])  # the admin key need not come first
    await cli_run(config, "cli-thread")
    with running_gateway(config) as gw:
        async with httpx.AsyncClient(timeout=30) as http:
            assert "cli-thread" in await listed(http, gw.url, ADMIN["key"])
            state = await http.get(f"{gw.url}/threads/cli-thread/state", headers={"x-api-key": ADMIN["key"]})
            assert state.status_code == 200 and state.json()["values"]["messages"][1]["content"] == "Rain on the roof."
            assert "cli-thread" not in await listed(http, gw.url, BO)
            assert (await http.get(f"{gw.url}/threads/cli-thread", headers={"x-api-key": BO})).status_code == 404
            made = await http.post(f"{gw.url}/threads", json={"thread_id": "bo-thread"}, headers={"x-api-key": BO})
            assert made.status_code == 200, made.text
    # the CLI continues Bo's thread: it stays Bo's; and it lists every thread of the home
    await cli_run(config, "bo-thread", "go on")
    async with HerdsmanClient(config, model=ScriptedChatModel(responses=[])) as client:
        assert {"cli-thread", "bo-thread"} <= {t.thread_id for t in await client.threads()}
    with running_gateway(config) as gw:
        async with httpx.AsyncClient(timeout=30) as http:
            assert "bo-thread" in await listed(http, gw.url, BO)
            assert "bo-thread" not in await listed(http, gw.url, ADMIN["key"])


async def test_threads_from_before_the_keys_become_the_admin_s(home: Path) -> None:
    """Made by the CLI with no keys (the one local user), then keys are set: the admin sees it; an
    IM chat's thread (no owner either) stays out of the admin's list."""
    await cli_run(make_config(home, checkpointer={"type": "sqlite"}), "before-keys")
    async with open_record_store(make_config(home, checkpointer={"type": "sqlite"})) as store:
        await ThreadStore(store).create(
            "a-chat", {"channel": "telegram", "chat_id": "42"}
        )  # an IM chat's: not the admin's
    config = keyed(home, [ADMIN, BO])
    with running_gateway(config) as gw:
        async with httpx.AsyncClient(timeout=30) as http:
            assert "before-keys" in await listed(http, gw.url, ADMIN["key"])
            assert "before-keys" not in await listed(http, gw.url, BO)
            assert "a-chat" not in await listed(http, gw.url, ADMIN["key"])


async def test_without_an_admin_key_the_cli_says_how_to_make_its_threads_visible(
    home: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = keyed(home, [BO])
    assert config.gateway.host_owner() is None
    with caplog.at_level(logging.WARNING, logger="herdsman.client"):
        await cli_run(config, "nobody-s")
    assert any("role: admin" in str(entry.get("fix")) for entry in logged_events(caplog.records))
    async with open_record_store(config) as store:
        record = await ThreadStore(store).get("nobody-s")
    assert record is not None and "owner" not in record.metadata
