"""The Slack channel (Events API) against a fake Web API, with the real slack-bolt and slack-sdk.

Events are POSTed to the gateway signed with the signing secret, like Slack does; the tests
check the chat.postMessage calls and uploads the app makes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.channels.fake_server import channel_config
from tests.channels.fake_slack import (
    APP_TOKEN,
    BOT_TOKEN,
    BROKEN_CHANNEL,
    SIGNING_SECRET,
    FakeSlack,
    message_event,
    signed_headers,
)
from tests.gateway.gateway_support import HeldModel, RunningGateway, running_gateway
from tests.support import make_config

ALICE, DM = "U42", "D42"


@pytest.fixture
def app(home: Path, slack: FakeSlack, model: HeldModel) -> Iterator[RunningGateway]:
    """A gateway whose Slack channel answers through the fake Web API."""
    section = {
        "enabled": True,
        "bot_token": BOT_TOKEN,
        "signing_secret": SIGNING_SECRET,
        "base_url": slack.base_url,
        "allowed_users": [ALICE],
    }
    config = channel_config(home, "slack", section)
    with running_gateway(config, model=model) as served:
        yield served


def post_event(app: RunningGateway, payload: dict[str, Any] | str, **headers: str) -> httpx.Response:
    """POST a signed Events API request to the gateway."""
    body = payload if isinstance(payload, str) else json.dumps(payload)
    return httpx.post(f"{app.url}/channels/slack/events", content=body, headers={**signed_headers(body), **headers})


def test_message_gets_progress_answer_and_file(app: RunningGateway, slack: FakeSlack) -> None:
    assert post_event(app, message_event(DM, ALICE, "<@UBOT> write report.md # Report")).status_code == 200
    answer = slack.wait_text("chat.postMessage", "done:")
    posts = slack.named("chat.postMessage")
    assert all(p.params["channel"] == DM for p in posts)
    assert any("🔧 write_file" in p.params["text"] for p in posts), [p.params["text"] for p in posts]
    assert answer.startswith("done:")
    upload = slack.wait_for(lambda: slack.named("upload"), "a file upload")[0]
    assert upload.files["file"] == ("report.md", b"# Report")
    complete = slack.wait_for(lambda: slack.named("files.completeUploadExternal"), "completeUploadExternal")[0]
    assert complete.params["channel_id"] == DM


def test_channel_mention_is_answered_in_its_thread_and_other_messages_ignored(
    app: RunningGateway, slack: FakeSlack, model: HeldModel
) -> None:
    post_event(app, message_event("C1", ALICE, "people talking"))
    post_event(app, message_event("C1", ALICE, "<@UBOT> also for people?", kind="message"))
    post_event(app, message_event(DM, "U99", "a bot's own message", bot_id="BBOT"))
    post_event(app, message_event("C1", ALICE, "<@UBOT> in a thread", thread_ts="111.222", kind="app_mention"))
    slack.wait_text("chat.postMessage", "echo: in a thread")
    assert slack.named("chat.postMessage")[-1].params["thread_ts"] == "111.222"
    assert len(model.calls) == 1, "only the app_mention reached the agent"


def test_user_not_on_the_list_is_refused(app: RunningGateway, slack: FakeSlack, model: HeldModel) -> None:
    post_event(app, message_event("D7", "U7", "hello"))
    refusal = slack.wait_text("chat.postMessage", "only work for people on my list")
    assert "U7" in refusal and "channels.slack.allowed_users" in refusal
    assert model.calls == []


def test_bad_signature_and_malformed_body_are_rejected(app: RunningGateway, slack: FakeSlack, model: HeldModel) -> None:
    body = json.dumps(message_event(DM, ALICE, "forged"))
    forged = httpx.post(f"{app.url}/channels/slack/events", content=body, headers=signed_headers(body, secret="wrong"))
    assert forged.status_code == 401
    assert post_event(app, "{not json").status_code == 400
    assert post_event(app, "[1, 2]").status_code == 400
    challenge = post_event(app, {"type": "url_verification", "challenge": "c-123", "token": "legacy"})
    assert challenge.status_code == 200 and "c-123" in challenge.text
    assert model.calls == [] and not slack.named("chat.postMessage")


def test_bang_and_slash_commands(app: RunningGateway, slack: FakeSlack, model: HeldModel) -> None:
    post_event(app, message_event(DM, ALICE, "[hold] long job"))
    model.wait_until_held()
    form = "command=%2Fherd-status&text=&user_id=U42&user_name=alice&channel_id=D42&team_id=T1&trigger_id=t1"
    response = post_event(app, form, **{"content-type": "application/x-www-form-urlencoded"})
    assert response.status_code == 200
    slack.wait_text("chat.postMessage", "1 run(s) in progress")
    post_event(app, message_event(DM, ALICE, "!cancel"))
    slack.wait_text("chat.postMessage", "Cancelled 1 run(s)")
    post_event(app, message_event(DM, ALICE, "!new"))
    slack.wait_text("chat.postMessage", "Started a new conversation")


def test_api_error_is_logged_and_the_app_keeps_working(app: RunningGateway, slack: FakeSlack) -> None:
    post_event(app, message_event(BROKEN_CHANNEL, ALICE, "<@UBOT> lost answer", kind="app_mention"))
    slack.wait_for(
        lambda: [p for p in slack.named("chat.postMessage") if p.params["channel"] == BROKEN_CHANNEL],
        "the failed chat.postMessage",
    )
    post_event(app, message_event(DM, ALICE, "still there?"))
    slack.wait_text("chat.postMessage", "echo: still there?")


def test_socket_mode_receives_events_over_the_websocket(home: Path, slack: FakeSlack, model: HeldModel) -> None:
    section = {
        "enabled": True,
        "mode": "socket",
        "bot_token": BOT_TOKEN,
        "app_token": APP_TOKEN,
        "base_url": slack.base_url,
        "allowed_users": [ALICE],
    }
    config = make_config(home, channels={"slack": section})
    with running_gateway(config, model=model) as served:
        slack.wait_for(slack.connected, "the Socket Mode connection")
        envelope = slack.push_event(message_event(DM, ALICE, "over the socket"))
        slack.wait_text("chat.postMessage", "echo: over the socket")
        slack.wait_for(lambda: envelope in slack.acks, "the ack of the envelope")
        assert httpx.post(f"{served.url}/channels/slack/events", json={}).status_code == 404, "no Events API route"
