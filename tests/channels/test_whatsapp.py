"""The WhatsApp channel against a fake Cloud API; webhooks signed as Meta signs them.

The tests check the Graph API calls the channel makes (messages, media) and that the webhook
refuses unsigned or forged bodies before anything runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.channels.fake_server import channel_config
from tests.channels.fake_whatsapp import (
    BROKEN_NUMBER,
    MAX_TEXT,
    VERIFY_TOKEN,
    FakeWhatsApp,
    message_payload,
    parameters,
    signed,
)
from tests.gateway.gateway_support import HeldModel, RunningGateway, running_gateway

ALICE = "15551112222"


@pytest.fixture
def bot(home: Path, whatsapp: FakeWhatsApp, model: HeldModel) -> Iterator[RunningGateway]:
    """A gateway whose WhatsApp channel sends through the fake Graph API."""
    config = channel_config(home, "whatsapp", parameters(base_url=whatsapp.url, allowed_users=[ALICE, BROKEN_NUMBER]))
    with running_gateway(config, model=model) as served:
        yield served


def post(bot: RunningGateway, payload: dict[str, Any] | str, secret: str | None = None) -> httpx.Response:
    """POST a signed webhook to the gateway."""
    body, headers = signed(payload) if secret is None else signed(payload, secret)
    return httpx.post(f"{bot.url}/channels/whatsapp/webhook", content=body, headers=headers)


def test_message_gets_progress_answer_document_and_image(bot: RunningGateway, whatsapp: FakeWhatsApp) -> None:
    assert post(bot, message_payload(ALICE, "write plan.txt step one")).status_code == 200
    whatsapp.wait_message("done:")
    assert any("🔧 write_file" in t for t in whatsapp.message_texts(ALICE))
    upload = whatsapp.wait_for(lambda: whatsapp.named("media"), "a media upload")[0]
    assert upload.files["file"] == ("plan.txt", b"step one") and upload.params["type"] == "text/plain"
    document = whatsapp.wait_for(
        lambda: [c for c in whatsapp.named("messages") if c.params["type"] == "document"], "a document"
    )[0]
    assert (
        document.params["document"] == {"id": upload.params["id"], "filename": "plan.txt"}
        and document.params["to"] == ALICE
    )
    post(bot, message_payload(ALICE, "write chart.png pixels"))
    image = whatsapp.wait_for(
        lambda: [c for c in whatsapp.named("messages") if c.params["type"] == "image"], "an image"
    )[0]
    assert whatsapp.named("media")[-1].params["type"] == "image/png" and set(image.params["image"]) == {"id"}


def test_long_answer_is_split_to_the_limit(bot: RunningGateway, whatsapp: FakeWhatsApp) -> None:
    post(bot, message_payload(ALICE, "word " * 1800))  # 9000 characters, echoed back
    whatsapp.wait_for(lambda: "".join(whatsapp.message_texts(ALICE)).count("word") >= 1800, "the whole answer")
    pieces = [t for t in whatsapp.message_texts(ALICE) if "word" in t or "ord" in t]
    assert len(pieces) == 3 and all(len(p) <= MAX_TEXT for p in pieces)


def test_subscription_check(bot: RunningGateway) -> None:
    url = f"{bot.url}/channels/whatsapp/webhook"
    ok = httpx.get(
        url, params={"hub.mode": "subscribe", "hub.verify_token": VERIFY_TOKEN, "hub.challenge": "1158201444"}
    )
    assert ok.status_code == 200 and ok.text == "1158201444"
    wrong = httpx.get(url, params={"hub.mode": "subscribe", "hub.verify_token": "guess", "hub.challenge": "1"})
    assert wrong.status_code == 403 and "verify_token" in wrong.json()["detail"]


def test_signatures_fail_closed(bot: RunningGateway, whatsapp: FakeWhatsApp, model: HeldModel) -> None:
    url = f"{bot.url}/channels/whatsapp/webhook"
    body, headers = signed(message_payload(ALICE, "forged"))
    assert httpx.post(url, content=body, headers={"content-type": "application/json"}).status_code == 401
    assert (
        httpx.post(url, content=body, headers={**headers, "X-Hub-Signature-256": "sha256=" + "0" * 64}).status_code
        == 401
    )
    assert httpx.post(url, content=body + b" ", headers=headers).status_code == 401, (
        "the signature covers the exact body"
    )
    assert post(bot, message_payload(ALICE, "forged"), secret="not-the-secret").status_code == 401
    assert post(bot, "{broken").status_code == 400
    assert post(bot, {"object": "page"}).status_code == 400
    assert post(bot, message_payload(ALICE, "for another number", phone_number_id="999")).status_code == 200
    assert model.calls == [] and not whatsapp.named("messages")


def test_user_not_on_the_list_is_refused(bot: RunningGateway, whatsapp: FakeWhatsApp, model: HeldModel) -> None:
    post(bot, message_payload("15559999999", "hello"))
    refusal = whatsapp.wait_message("only work for people on my list")
    assert "15559999999" in refusal and "channels.whatsapp.allowed_users" in refusal
    assert model.calls == []


def test_repeated_webhook_runs_once_and_commands_work(
    bot: RunningGateway, whatsapp: FakeWhatsApp, model: HeldModel
) -> None:
    event = message_payload(ALICE, "only once", message_id="wamid.fixed")
    assert post(bot, event).status_code == 200
    assert post(bot, event).status_code == 200  # Meta re-delivers
    whatsapp.wait_message("echo: only once")
    post(bot, message_payload(ALICE, "/status"))
    whatsapp.wait_message("Idle.")
    assert len(model.calls) == 1
    post(bot, message_payload(ALICE, "[hold] wait"))
    model.wait_until_held()
    post(bot, message_payload(ALICE, "/cancel"))
    whatsapp.wait_message("Cancelled 1 run(s)")
    post(bot, message_payload(ALICE, "/new"))
    whatsapp.wait_message("Started a new conversation")


def test_api_error_is_logged_and_the_bot_keeps_working(bot: RunningGateway, whatsapp: FakeWhatsApp) -> None:
    post(bot, message_payload(BROKEN_NUMBER, "lost"))
    whatsapp.wait_for(
        lambda: [c for c in whatsapp.named("messages") if c.params["to"] == BROKEN_NUMBER], "the failed send"
    )
    post(bot, message_payload(ALICE, "still there?"))
    whatsapp.wait_message("echo: still there?")


def test_sub_agent_progress_reaches_the_chat(bot: RunningGateway, whatsapp: FakeWhatsApp) -> None:
    post(bot, message_payload(ALICE, "delegate count the files"))
    started = whatsapp.wait_message("🤖 general-purpose started")
    assert "count the files" in started
    whatsapp.wait_message("🤖 general-purpose finished")
