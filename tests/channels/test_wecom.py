"""The WeCom channel against a fake WeCom API, with wechatpy's client and crypto in the gateway.

Callbacks are encrypted and signed by the fake's own implementation of WeCom's scheme and
POSTed to the gateway as WeCom sends them; the tests check the messages and media the app sends.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.channels.fake_server import channel_config
from tests.channels.fake_wecom import (
    BROKEN_USER,
    MAX_TEXT_BYTES,
    TOKEN,
    FakeWeCom,
    callback,
    encrypt,
    parameters,
    signature,
)
from tests.gateway.gateway_support import HeldModel, RunningGateway, running_gateway

ALICE = "alice"


@pytest.fixture
def bot(home: Path, wecom: FakeWeCom, model: HeldModel) -> Iterator[RunningGateway]:
    """A gateway whose WeCom channel sends through the fake API."""
    config = channel_config(home, "wecom", parameters(base_url=wecom.base_url, allowed_users=[ALICE]))
    with running_gateway(config, model=model) as served:
        yield served


def post(bot: RunningGateway, user: str, text: str, msg_id: str | None = None) -> httpx.Response:
    """POST a message callback to the gateway, encrypted and signed as WeCom does."""
    body, query = callback(user, text, msg_id)
    return httpx.post(f"{bot.url}/channels/wecom/callback", params=query, content=body)


def test_message_gets_progress_answer_and_file(bot: RunningGateway, wecom: FakeWeCom) -> None:
    assert post(bot, ALICE, "write plan.txt step one").status_code == 200
    wecom.wait_message("done:")
    assert any("🔧 write_file" in t for t in wecom.message_texts(ALICE))
    upload = wecom.wait_for(lambda: wecom.named("media/upload"), "a media upload")[0]
    assert upload.params["type"] == "file" and upload.files["media"] == ("plan.txt", b"step one")
    sent = wecom.wait_for(
        lambda: [c for c in wecom.named("message/send") if c.params["msgtype"] == "file"], "a file message"
    )[0]
    assert sent.params["file"] == {"media_id": upload.params["media_id"]} and sent.params["touser"] == ALICE


def test_long_answer_is_split_by_bytes(bot: RunningGateway, wecom: FakeWeCom) -> None:
    long = "长" * 1500  # 4500 UTF-8 bytes, echoed back
    post(bot, ALICE, long)
    wecom.wait_for(lambda: "".join(t for t in wecom.message_texts(ALICE)).count("长") >= 1500, "the whole answer")
    pieces = [t for t in wecom.message_texts(ALICE) if "长" in t]
    assert len(pieces) == 3 and all(len(p.encode()) <= MAX_TEXT_BYTES for p in pieces)


def test_url_check_and_signatures_fail_closed(bot: RunningGateway, wecom: FakeWeCom, model: HeldModel) -> None:
    url = f"{bot.url}/channels/wecom/callback"
    echo = encrypt("echo-12345")
    timestamp, nonce = "1700000000", "n"
    good = {
        "msg_signature": signature(TOKEN, timestamp, nonce, echo),
        "timestamp": timestamp,
        "nonce": nonce,
        "echostr": echo,
    }
    check = httpx.get(url, params=good)
    assert check.status_code == 200 and check.text == "echo-12345"
    assert httpx.get(url, params={**good, "msg_signature": "0" * 40}).status_code == 401
    body, query = callback(ALICE, "forged")
    assert httpx.post(url, params={**query, "msg_signature": "0" * 40}, content=body).status_code == 401
    assert (
        httpx.post(url, params={k: v for k, v in query.items() if k != "msg_signature"}, content=body).status_code
        == 401
    )
    forged_body, forged_query = callback(ALICE, "forged", token="not-the-token")
    assert httpx.post(url, params=forged_query, content=forged_body).status_code == 401
    assert httpx.post(url, params=query, content=b"<xml><broken").status_code in (400, 401)
    assert model.calls == [] and not wecom.named("message/send")


def test_user_not_on_the_list_is_refused(bot: RunningGateway, wecom: FakeWeCom, model: HeldModel) -> None:
    post(bot, "mallory", "hello")
    refusal = wecom.wait_message("only work for people on my list")
    assert "mallory" in refusal and "channels.wecom.allowed_users" in refusal
    assert model.calls == []


def test_repeated_callback_runs_once_and_commands_work(bot: RunningGateway, wecom: FakeWeCom, model: HeldModel) -> None:
    assert post(bot, ALICE, "only once", msg_id="777").status_code == 200
    assert post(bot, ALICE, "only once", msg_id="777").status_code == 200  # WeCom re-sends
    wecom.wait_message("echo: only once")
    post(bot, ALICE, "/status")
    wecom.wait_message("Idle.")
    assert len(model.calls) == 1
    post(bot, ALICE, "[hold] wait")
    model.wait_until_held()
    post(bot, ALICE, "/cancel")
    wecom.wait_message("Cancelled 1 run(s)")
    post(bot, ALICE, "/new")
    wecom.wait_message("Started a new conversation")
    post(bot, ALICE, "/help")
    wecom.wait_message("/new - start a new conversation")


def test_api_error_is_logged_and_the_app_keeps_working(home: Path, wecom: FakeWeCom, model: HeldModel) -> None:
    config = channel_config(home, "wecom", parameters(base_url=wecom.base_url, allowed_users=[ALICE, BROKEN_USER]))
    with running_gateway(config, model=model) as served:
        post(served, BROKEN_USER, "lost")
        wecom.wait_for(
            lambda: [c for c in wecom.named("message/send") if c.params["touser"] == BROKEN_USER], "the failed send"
        )
        post(served, ALICE, "still there?")
        wecom.wait_message("echo: still there?")
