"""The Feishu/Lark channel against a fake Open API, with the real lark-oapi client and handler.

Events are POSTed to the gateway as Feishu sends them; the tests check the im/v1 messages and
files the bot creates.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.channels.fake_feishu import (
    APP_ID,
    APP_SECRET,
    BROKEN_CHAT,
    VERIFICATION_TOKEN,
    FakeFeishu,
    encrypted,
    message_event,
)
from tests.channels.fake_server import channel_config
from tests.gateway.gateway_support import HeldModel, RunningGateway, running_gateway
from tests.support import make_config

ALICE, CHAT = "ou_alice", "oc_chat"


@pytest.fixture
def bot(home: Path, feishu: FakeFeishu, model: HeldModel) -> Iterator[RunningGateway]:
    """A gateway whose Feishu channel answers through the fake Open API."""
    section = {
        "enabled": True,
        "app_id": APP_ID,
        "app_secret": APP_SECRET,
        "verification_token": VERIFICATION_TOKEN,
        "base_url": feishu.url,
        "allowed_users": [ALICE],
    }
    config = channel_config(home, "feishu", section)
    with running_gateway(config, model=model) as served:
        yield served


def post(bot: RunningGateway, payload: dict[str, Any] | str) -> httpx.Response:
    """POST an event callback to the gateway."""
    body = payload if isinstance(payload, str) else json.dumps(payload)
    return httpx.post(f"{bot.url}/channels/feishu/events", content=body, headers={"content-type": "application/json"})


def test_message_gets_progress_answer_and_file(bot: RunningGateway, feishu: FakeFeishu) -> None:
    assert post(bot, message_event(CHAT, ALICE, "@_user_1 write plan.txt step one")).status_code == 200
    feishu.wait_message("done:")
    sent = feishu.named("im.message.create")
    assert all(c.params["receive_id"] == CHAT and c.params["receive_id_type"] == "chat_id" for c in sent)
    assert any("🔧 write_file" in t for t in feishu.message_texts())
    upload = feishu.wait_for(lambda: feishu.named("im.file.create"), "a file upload")[0]
    assert upload.files["file"] == ("plan.txt", b"step one")
    file_message = feishu.wait_for(
        lambda: [c for c in feishu.named("im.message.create") if c.params["msg_type"] == "file"], "a file message"
    )[0]
    assert json.loads(file_message.params["content"]) == {"file_key": upload.params["file_key"]}


def test_url_check_token_and_malformed_bodies(bot: RunningGateway, feishu: FakeFeishu, model: HeldModel) -> None:
    check = post(bot, {"challenge": "ch-1", "token": VERIFICATION_TOKEN, "type": "url_verification"})
    assert check.status_code == 200 and check.json() == {"challenge": "ch-1"}
    assert post(bot, message_event(CHAT, ALICE, "forged", token="wrong")).status_code == 401
    assert post(bot, "{broken").status_code == 400
    assert post(bot, "42").status_code == 400
    assert model.calls == [] and not feishu.named("im.message.create")


def test_user_not_on_the_list_is_refused(bot: RunningGateway, feishu: FakeFeishu, model: HeldModel) -> None:
    post(bot, message_event("oc_other", "ou_mallory", "hello"))
    refusal = feishu.wait_message("only work for people on my list")
    assert "ou_mallory" in refusal and "channels.feishu.allowed_users" in refusal
    assert model.calls == []


def test_repeated_event_runs_once_and_commands_work(bot: RunningGateway, feishu: FakeFeishu, model: HeldModel) -> None:
    event = message_event(CHAT, ALICE, "only once", event_id="ev_fixed")
    assert post(bot, event).status_code == 200
    assert post(bot, event).status_code == 200  # Feishu re-delivers
    feishu.wait_message("echo: only once")
    post(bot, message_event(CHAT, ALICE, "/status"))
    feishu.wait_message("Idle.")
    assert len(model.calls) == 1
    post(bot, message_event(CHAT, ALICE, "[hold] wait"))
    model.wait_until_held()
    post(bot, message_event(CHAT, ALICE, "/cancel"))
    feishu.wait_message("Cancelled 1 run(s)")
    post(bot, message_event(CHAT, ALICE, "/new"))
    feishu.wait_message("Started a new conversation")


def test_api_error_is_logged_and_the_bot_keeps_working(bot: RunningGateway, feishu: FakeFeishu) -> None:
    post(bot, message_event(BROKEN_CHAT, ALICE, "lost"))
    feishu.wait_for(
        lambda: [c for c in feishu.named("im.message.create") if c.params["receive_id"] == BROKEN_CHAT],
        "the failed message",
    )
    post(bot, message_event(CHAT, ALICE, "still there?"))
    feishu.wait_message("echo: still there?")


def test_encrypted_and_signed_events(home: Path, feishu: FakeFeishu, model: HeldModel) -> None:
    key = "encrypt-key-for-tests"
    section = {
        "enabled": True,
        "app_id": APP_ID,
        "app_secret": APP_SECRET,
        "verification_token": VERIFICATION_TOKEN,
        "encrypt_key": key,
        "base_url": feishu.url,
        "allowed_users": [ALICE],
    }
    config = make_config(home, channels={"feishu": section})
    with running_gateway(config, model=model) as served:
        url = f"{served.url}/channels/feishu/events"
        body, headers = encrypted(message_event(CHAT, ALICE, "secret hello"), key)
        forged = httpx.post(url, content=body, headers={**headers, "X-Lark-Signature": "0" * 64})
        assert forged.status_code == 401
        assert httpx.post(url, content=body, headers=headers).status_code == 200
        feishu.wait_message("echo: secret hello")
        assert len(model.calls) == 1
