"""Several channels in one gateway: each runs, answers on its own platform, is listed, and fails alone."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from tests.channels.fake_dingtalk import FakeDingTalk
from tests.channels.fake_dingtalk import parameters as dingtalk_section
from tests.channels.fake_server import channel_row
from tests.channels.fake_slack import BOT_TOKEN, SIGNING_SECRET, FakeSlack, message_event, signed_headers
from tests.channels.fake_telegram import TOKEN, FakeTelegram
from tests.channels.fake_wecom import FakeWeCom
from tests.channels.fake_wecom import callback as wecom_callback
from tests.channels.fake_wecom import parameters as wecom_section
from tests.channels.fake_whatsapp import FakeWhatsApp
from tests.channels.fake_whatsapp import parameters as whatsapp_section
from tests.gateway.gateway_support import running_gateway, scripted_model
from tests.support import make_config


def test_telegram_and_slack_side_by_side(home: Path, telegram: FakeTelegram, slack: FakeSlack) -> None:
    channels = {
        "telegram": {
            "enabled": True,
            "bot_token": TOKEN,
            "base_url": telegram.base_url,
            "allowed_users": ["42"],
            "poll_timeout_seconds": 1,
        },
        "slack": {
            "enabled": True,
            "bot_token": BOT_TOKEN,
            "signing_secret": SIGNING_SECRET,
            "base_url": slack.base_url,
            "allowed_users": ["U42"],
        },
    }
    model = scripted_model()
    with running_gateway(make_config(home, channels=channels), model=model) as served:
        listed = httpx.get(f"{served.url}/api/channels").json()
        assert {c["name"]: c["state"] for c in listed} == {
            "telegram": "running",
            "slack": "running",
            "feishu": "off",
            "discord": "off",
            "dingtalk": "off",
            "wecom": "off",
            "whatsapp": "off",
            "bark": "off",
        }
        telegram.send_user_message(1, 42, "from telegram")
        body = json.dumps(message_event("D1", "U42", "from slack"))
        httpx.post(f"{served.url}/channels/slack/events", content=body, headers=signed_headers(body))
        telegram.wait_text("sendMessage", "echo: from telegram")
        slack.wait_text("chat.postMessage", "echo: from slack")
        threads = httpx.post(f"{served.url}/threads/search", json={"metadata": {"chat_id": "1"}}).json()
        assert [t["metadata"]["channel"] for t in threads] == ["telegram"], "channel threads are visible in the API"
    assert "echo: from slack" not in telegram.texts("sendMessage")


def test_broken_channels_fail_alone(
    home: Path, dingtalk: FakeDingTalk, wecom: FakeWeCom, whatsapp: FakeWhatsApp
) -> None:
    """A wrong DingTalk secret and an expired WhatsApp token leave WeCom and the gateway working."""
    channels = {
        "dingtalk": dingtalk_section(base_url=dingtalk.url, client_secret="not-the-secret-42", allowed_users=["*"]),
        "whatsapp": whatsapp_section(base_url=whatsapp.url, access_token="expired-token-42", allowed_users=["*"]),
        "wecom": wecom_section(base_url=wecom.base_url, allowed_users=["alice"]),
    }
    with running_gateway(make_config(home, channels=channels), model=scripted_model()) as served:
        rows = {name: channel_row(served.url, name) for name in ("dingtalk", "whatsapp", "wecom")}
        assert rows["dingtalk"]["state"] == "failed" and "clientSecret is wrong" in rows["dingtalk"]["error"]
        assert rows["whatsapp"]["state"] == "failed" and "Invalid OAuth access token" in rows["whatsapp"]["error"]
        assert rows["wecom"]["state"] == "running" and rows["wecom"]["error"] is None
        assert "-42" not in httpx.get(f"{served.url}/api/channels").text, "no secret in the status"
        body, query = wecom_callback("alice", "still here")
        httpx.post(f"{served.url}/channels/wecom/callback", params=query, content=body)
        wecom.wait_message("echo: still here")
        assert httpx.post(f"{served.url}/channels/whatsapp/webhook", content=b"{}").status_code == 503
    assert dingtalk.connections == 0
