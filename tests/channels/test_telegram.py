"""The Telegram channel against a fake Bot API, with the real python-telegram-bot client.

Users write through getUpdates (or webhook POSTs); the tests check the sendMessage and
sendDocument calls the bot makes, as a person in the chat would see them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.messages import BaseMessage

from herdsman.models.scripted import ScriptedChatModel
from tests.channels.fake_server import channel_config, channel_row
from tests.channels.fake_telegram import BROKEN_CHAT, TOKEN, FakeTelegram
from tests.gateway.gateway_support import HeldModel, RunningGateway, running_gateway
from tests.support import make_config

ALICE, CHAT = 42, 4200
MALLORY, MALLORY_CHAT = 7, 700


def telegram_config(home: Path, fake: FakeTelegram, **extra: Any):
    """A config whose telegram channel talks to ``fake``."""
    section = {
        "enabled": True,
        "bot_token": TOKEN,
        "base_url": fake.base_url,
        "allowed_users": [str(ALICE), "bob"],
        "poll_timeout_seconds": 1,
        **extra,
    }
    return channel_config(home, "telegram", section)


@pytest.fixture
def bot(home: Path, telegram: FakeTelegram, model: HeldModel) -> Iterator[RunningGateway]:
    """A gateway whose Telegram channel polls the fake API."""
    with running_gateway(telegram_config(home, telegram), model=model) as served:
        yield served


def humans_in_last_call(model: HeldModel) -> int:
    """How many user messages the model saw in its latest call."""
    return sum(1 for m in model.calls[-1].messages if m.type == "human")


def test_answer_progress_and_output_file_come_back_to_the_chat(bot: RunningGateway, telegram: FakeTelegram) -> None:
    telegram.send_user_message(CHAT, ALICE, "write notes.txt hello from telegram")
    telegram.wait_text("sendMessage", "done:")
    assert any("🔧 write_file" in t for t in telegram.texts("sendMessage")), telegram.texts("sendMessage")
    document = telegram.wait_for(lambda: telegram.named("sendDocument"), "sendDocument")[0]
    assert document.params["chat_id"] == str(CHAT)
    name, data = document.files["document"]
    assert name == "notes.txt" and data == b"hello from telegram"


def test_user_not_on_the_list_is_refused_and_nothing_runs(
    bot: RunningGateway, telegram: FakeTelegram, model: HeldModel
) -> None:
    telegram.send_user_message(MALLORY_CHAT, MALLORY, "delete everything", username="mallory")
    refusal = telegram.wait_text("sendMessage", "only work for people on my list")
    assert str(MALLORY) in refusal and "channels.telegram.allowed_users" in refusal
    telegram.send_user_message(CHAT, 99, "hi, I am bob", username="bob")  # allowed by name
    telegram.wait_text("sendMessage", "echo: hi, I am bob")
    assert len(model.calls) == 1, "only bob's message reached the agent"


def test_chat_keeps_its_thread_until_new(bot: RunningGateway, telegram: FakeTelegram, model: HeldModel) -> None:
    telegram.send_user_message(CHAT, ALICE, "first")
    telegram.wait_text("sendMessage", "echo: first")
    telegram.send_user_message(CHAT, ALICE, "second")
    telegram.wait_text("sendMessage", "echo: second")
    assert humans_in_last_call(model) == 2, "the second message continued the chat's thread"
    telegram.send_user_message(CHAT, ALICE, "/new")
    telegram.wait_text("sendMessage", "Started a new conversation")
    telegram.send_user_message(CHAT, ALICE, "third")
    telegram.wait_text("sendMessage", "echo: third")
    assert humans_in_last_call(model) == 1, "/new gave the chat a fresh thread"


def test_status_and_cancel_of_a_running_run(bot: RunningGateway, telegram: FakeTelegram, model: HeldModel) -> None:
    telegram.send_user_message(CHAT, ALICE, "/status")
    telegram.wait_text("sendMessage", "No conversation yet")
    telegram.send_user_message(CHAT, ALICE, "[hold] take your time")
    model.wait_until_held()
    telegram.send_user_message(CHAT, ALICE, "/status")
    assert "1 run(s) in progress" in telegram.wait_text("sendMessage", "in progress")
    telegram.send_user_message(CHAT, ALICE, "another one")
    telegram.wait_text("sendMessage", "still working on your previous message")
    telegram.send_user_message(CHAT, ALICE, "/cancel")
    telegram.wait_text("sendMessage", "Cancelled 1 run(s)")
    telegram.wait_text("sendMessage", "Stopped")
    telegram.send_user_message(CHAT, ALICE, "/status")
    telegram.wait_text("sendMessage", "Idle.")
    telegram.send_user_message(CHAT, ALICE, "/cancel")
    telegram.wait_text("sendMessage", "Nothing is running")


def test_api_error_is_logged_and_the_bot_keeps_working(bot: RunningGateway, telegram: FakeTelegram) -> None:
    telegram.send_user_message(BROKEN_CHAT, ALICE, "this answer cannot be delivered")
    telegram.wait_for(
        lambda: [c for c in telegram.named("sendMessage") if c.params["chat_id"] == str(BROKEN_CHAT)],
        "the failed sendMessage",
    )
    telegram.send_user_message(CHAT, ALICE, "still there?")
    telegram.wait_text("sendMessage", "echo: still there?")


def test_failing_get_updates_is_retried(bot: RunningGateway, telegram: FakeTelegram) -> None:
    telegram.fail_polls = 2
    telegram.wait_for(lambda: telegram.fail_polls == 0, "two failed getUpdates")
    telegram.send_user_message(CHAT, ALICE, "after an outage")
    telegram.wait_text("sendMessage", "echo: after an outage")


def test_webhook_mode_checks_secret_and_body_then_answers(home: Path, telegram: FakeTelegram, model: HeldModel) -> None:
    config = telegram_config(home, telegram, mode="webhook", webhook_secret="s3cret")
    with running_gateway(config, model=model) as served:
        url = f"{served.url}/channels/telegram/webhook"
        good = {"X-Telegram-Bot-Api-Secret-Token": "s3cret"}
        update = telegram.update(CHAT, ALICE, "via webhook")
        assert httpx.post(url, json=update, headers={"X-Telegram-Bot-Api-Secret-Token": "nope"}).status_code == 403
        bad = httpx.post(url, content=b"{not json", headers={**good, "content-type": "application/json"})
        assert bad.status_code == 400 and "malformed" in bad.json()["detail"]
        assert httpx.post(url, json={"hello": "world"}, headers=good).status_code == 400
        assert httpx.post(url, json=update, headers=good).status_code == 200
        telegram.wait_text("sendMessage", "echo: via webhook")
    assert telegram.polls == 0, "webhook mode does not poll"


def test_chat_thread_survives_a_gateway_restart(home: Path, telegram: FakeTelegram, model: HeldModel) -> None:
    config = make_config(
        home,
        checkpointer={"type": "sqlite"},
        channels={
            "progress_interval_seconds": 0,
            "telegram": {
                "enabled": True,
                "bot_token": TOKEN,
                "base_url": telegram.base_url,
                "allowed_users": [str(ALICE)],
                "poll_timeout_seconds": 1,
            },
        },
    )
    with running_gateway(config, model=model):
        telegram.send_user_message(CHAT, ALICE, "before restart")
        telegram.wait_text("sendMessage", "echo: before restart")
    with running_gateway(config, model=model):
        telegram.send_user_message(CHAT, ALICE, "after restart")
        telegram.wait_text("sendMessage", "echo: after restart")
    assert humans_in_last_call(model) == 2, "the chat went on in the same thread"
    assert telegram.texts("sendMessage").count("echo: before restart") == 1, "no update was handled twice"


def test_a_channel_that_cannot_log_in_leaves_the_gateway_running(
    home: Path, telegram: FakeTelegram, model: HeldModel
) -> None:
    config = make_config(
        home,
        channels={
            "telegram": {
                "enabled": True,
                "bot_token": "999:WRONG",
                "base_url": telegram.base_url,
                "allowed_users": ["*"],
            }
        },
    )
    with running_gateway(config, model=model) as served:
        assert httpx.get(f"{served.url}/info").status_code == 200
        status = channel_row(served.url, "telegram")
        assert status["state"] == "failed" and status["running"] is False
        assert "InvalidToken" in status["error"]


def test_a_question_from_the_agent_is_answered_by_the_next_message(home: Path, telegram: FakeTelegram) -> None:
    def respond(messages: list[BaseMessage]) -> Any:
        last = messages[-1]
        if last.type == "tool":
            return f"You chose {last.text}."
        return {"tool_calls": [{"name": "ask_clarification", "args": {"question": "Which colour?"}}]}

    with running_gateway(telegram_config(home, telegram), model=ScriptedChatModel(respond=respond)):
        telegram.send_user_message(CHAT, ALICE, "paint the fence")
        question = telegram.wait_text("sendMessage", "Which colour?")
        assert question.startswith("❓")
        telegram.send_user_message(CHAT, ALICE, "blue")
        assert "blue" in telegram.wait_text("sendMessage", "You chose")


def test_a_user_past_the_run_limits_is_told_in_the_chat(home: Path, telegram: FakeTelegram, model: HeldModel) -> None:
    """runs.max_running_per_user counts a chat user's runs over all their chats; past it the
    chat says so (and the run is not started), and other users are not held up."""
    config = channel_config(
        home,
        "telegram",
        {
            "enabled": True,
            "bot_token": TOKEN,
            "base_url": telegram.base_url,
            "allowed_users": [str(ALICE), str(MALLORY)],
            "poll_timeout_seconds": 1,
        },
        runs={"max_running_per_user": 1, "max_queued_per_user": 0},
    )
    with running_gateway(config, model=model):
        telegram.send_user_message(CHAT, ALICE, "[hold] take your time")
        model.wait_until_held()
        telegram.send_user_message(CHAT + 1, ALICE, "meanwhile, elsewhere")
        telegram.wait_text("sendMessage", "too many messages in progress")
        telegram.send_user_message(MALLORY_CHAT, MALLORY, "hello")
        telegram.wait_text("sendMessage", "echo: hello")  # while alice's run is still held
        model.release()
        telegram.wait_text("sendMessage", "echo: take your time")
