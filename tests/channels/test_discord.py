"""The Discord channel against a fake REST API and gateway, with the real discord.py client.

Users' messages arrive as MESSAGE_CREATE over the fake gateway websocket; the tests check the
messages (and attachments) the bot posts.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import discord
import pytest
from discord.gateway import DiscordWebSocket

from tests.channels.fake_discord import BROKEN_CHANNEL, TOKEN, FakeDiscord
from tests.channels.fake_server import channel_config
from tests.gateway.gateway_support import HeldModel, RunningGateway, running_gateway

ALICE, DM = 42, 4200
GUILD, GUILD_CHANNEL = 9, 900


@pytest.fixture
def bot(home: Path, discord_api: FakeDiscord, model: HeldModel) -> Iterator[RunningGateway]:
    """A gateway whose Discord channel is connected to the fake."""
    section = {"enabled": True, "bot_token": TOKEN, "base_url": discord_api.base_url, "allowed_users": [str(ALICE)]}
    config = channel_config(home, "discord", section)
    original = (discord.http.Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY)
    with running_gateway(config, model=model) as served:
        discord_api.wait_for(discord_api.connected, "the bot to identify")
        yield served
    assert (discord.http.Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY) == original, (
        "stopping restores discord.py's addresses"
    )


def contents(fake: FakeDiscord) -> list[str]:
    return fake.texts("create_message", "content")


def test_dm_gets_progress_answer_and_file(bot: RunningGateway, discord_api: FakeDiscord) -> None:
    assert discord_api.identified[0]["intents"] & (1 << 15), "the message content intent is asked for"
    discord_api.send_user_message(DM, ALICE, "write haiku.txt old pond")
    discord_api.wait_text("create_message", "done:", key="content")
    assert any("🔧 write_file" in t for t in contents(discord_api))
    upload = discord_api.wait_for(lambda: [c for c in discord_api.named("create_message") if c.files], "an attachment")[
        0
    ]
    assert upload.params["channel_id"] == DM
    assert list(upload.files.values()) == [("haiku.txt", b"old pond")]


def test_server_messages_need_a_mention(bot: RunningGateway, discord_api: FakeDiscord, model: HeldModel) -> None:
    discord_api.send_user_message(GUILD_CHANNEL, ALICE, "just chatting", guild_id=GUILD)
    discord_api.send_user_message(GUILD_CHANNEL, ALICE, "<@1000> hello bot", guild_id=GUILD)
    discord_api.wait_text("create_message", "echo: hello bot", key="content")
    assert len(model.calls) == 1, "the message without a mention was ignored"


def test_user_not_on_the_list_is_refused_and_commands_work(
    bot: RunningGateway, discord_api: FakeDiscord, model: HeldModel
) -> None:
    discord_api.send_user_message(700, 7, "hi", username="mallory")
    refusal = discord_api.wait_text("create_message", "only work for people on my list", key="content")
    assert "channels.discord.allowed_users" in refusal and model.calls == []
    discord_api.send_user_message(DM, ALICE, "[hold] slow")
    model.wait_until_held()
    discord_api.send_user_message(DM, ALICE, "/status")
    discord_api.wait_text("create_message", "1 run(s) in progress", key="content")
    discord_api.send_user_message(DM, ALICE, "/cancel")
    discord_api.wait_text("create_message", "Cancelled 1 run(s)", key="content")
    discord_api.send_user_message(DM, ALICE, "/new")
    discord_api.wait_text("create_message", "Started a new conversation", key="content")


def test_api_error_is_logged_and_the_bot_keeps_working(bot: RunningGateway, discord_api: FakeDiscord) -> None:
    discord_api.send_user_message(BROKEN_CHANNEL, ALICE, "lost")
    discord_api.wait_for(
        lambda: [c for c in discord_api.named("create_message") if c.params["channel_id"] == BROKEN_CHANNEL],
        "the failed message",
    )
    discord_api.send_user_message(DM, ALICE, "still there?")
    discord_api.wait_text("create_message", "echo: still there?", key="content")
