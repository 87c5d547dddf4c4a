"""Several channels in one gateway: each runs, answers on its own platform, and is listed."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from tests.channels.fake_slack import BOT_TOKEN, SIGNING_SECRET, FakeSlack, message_event, signed_headers
from tests.channels.fake_telegram import TOKEN, FakeTelegram
from tests.gateway.gateway_support import running_gateway, scripted_model
from tests.support import make_config


def test_telegram_and_slack_side_by_side(home: Path, telegram: FakeTelegram, slack: FakeSlack) -> None:
    channels = {
        "telegram": {"enabled": True, "bot_token": TOKEN, "base_url": telegram.base_url, "allowed_users": ["42"],
                     "poll_timeout_seconds": 1},
        "slack": {"enabled": True, "bot_token": BOT_TOKEN, "signing_secret": SIGNING_SECRET, "base_url": slack.base_url,
                  "allowed_users": ["U42"]},
    }
    model = scripted_model()
    with running_gateway(make_config(home, channels=channels), model=model) as served:
        listed = httpx.get(f"{served.url}/api/channels").json()
        assert {(c["name"], c["running"]) for c in listed} == {("telegram", True), ("slack", True)}
        telegram.send_user_message(1, 42, "from telegram")
        body = json.dumps(message_event("D1", "U42", "from slack"))
        httpx.post(f"{served.url}/channels/slack/events", content=body, headers=signed_headers(body))
        telegram.wait_text("sendMessage", "echo: from telegram")
        slack.wait_text("chat.postMessage", "echo: from slack")
        threads = httpx.post(f"{served.url}/threads/search", json={"metadata": {"chat_id": "1"}}).json()
        assert [t["metadata"]["channel"] for t in threads] == ["telegram"], "channel threads are visible in the API"
    assert "echo: from slack" not in telegram.texts("sendMessage")
