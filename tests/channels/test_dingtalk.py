"""The DingTalk channel in Stream mode against a fake DingTalk, with the official dingtalk-stream SDK.

Robot messages arrive as CALLBACK frames on the websocket the gateway opened; the tests check
the acks, the robot API calls the channel makes, and that a dropped stream comes back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.channels.fake_dingtalk import BROKEN_USER, MAX_TEXT, FakeDingTalk, parameters, robot_message
from tests.channels.fake_server import channel_config
from tests.gateway.gateway_support import HeldModel, RunningGateway, running_gateway

ALICE = "alice01"


@pytest.fixture
def bot(home: Path, dingtalk: FakeDingTalk, model: HeldModel) -> Iterator[RunningGateway]:
    """A gateway whose DingTalk robot is connected to the fake."""
    config = channel_config(home, "dingtalk", parameters(base_url=dingtalk.url, allowed_users=[ALICE, BROKEN_USER]))
    with running_gateway(config, model=model) as served:
        dingtalk.wait_for(lambda: dingtalk.connections == 1, "the stream connection")
        yield served


def test_message_is_acked_and_gets_progress_answer_and_file(bot: RunningGateway, dingtalk: FakeDingTalk) -> None:
    frame = dingtalk.send_robot_message(robot_message(ALICE, "write plan.txt step one"))
    assert dingtalk.ack(frame)["code"] == 200
    dingtalk.wait_message("done:")
    sends = dingtalk.named("batchSend")
    assert all(c.params["userIds"] == [ALICE] and c.params["robotCode"] == "ding_test_app" for c in sends)
    assert any("🔧 write_file" in t for t in dingtalk.message_texts())
    upload = dingtalk.wait_for(lambda: dingtalk.named("media/upload"), "a media upload")[0]
    assert upload.params["type"] == "file" and upload.files["media"] == ("plan.txt", b"step one")
    sent = dingtalk.wait_for(
        lambda: [c for c in dingtalk.named("batchSend") if c.params["msgKey"] == "sampleFile"], "a file"
    )[0]
    assert json.loads(sent.params["msgParam"]) == {
        "mediaId": upload.params["media_id"],
        "fileName": "plan.txt",
        "fileType": "txt",
    }


def test_group_messages_answer_in_the_group_with_one_thread(bot: RunningGateway, dingtalk: FakeDingTalk) -> None:
    dingtalk.send_robot_message(robot_message(ALICE, "hello group", group="cidGROUP=="))
    dingtalk.wait_message("echo: hello group")
    assert {c.params["openConversationId"] for c in dingtalk.named("groupSend")} == {"cidGROUP=="}
    threads = httpx.post(f"{bot.url}/threads/search", json={"metadata": {"channel": "dingtalk"}}).json()
    assert [t["metadata"]["chat_id"] for t in threads] == ["group:cidGROUP=="]


def test_long_answer_is_split_and_pings_are_acked(bot: RunningGateway, dingtalk: FakeDingTalk) -> None:
    ping = dingtalk.ping()
    assert json.loads(dingtalk.ack(ping)["data"]) == {"opaque": ping}
    dingtalk.send_robot_message(robot_message(ALICE, "x" * 9000))
    dingtalk.wait_for(lambda: "".join(dingtalk.message_texts()).count("x") >= 9000, "the whole answer")
    pieces = [t for t in dingtalk.message_texts() if "x" in t]
    assert len(pieces) == 3 and all(len(p) <= MAX_TEXT for p in pieces)


def test_user_not_on_the_list_is_refused(bot: RunningGateway, dingtalk: FakeDingTalk, model: HeldModel) -> None:
    dingtalk.send_robot_message(robot_message("mallory", "hello"))
    refusal = dingtalk.wait_message("only work for people on my list")
    assert "mallory" in refusal and "channels.dingtalk.allowed_users" in refusal
    assert model.calls == []


def test_redelivery_runs_once_commands_work_and_errors_are_survived(
    bot: RunningGateway, dingtalk: FakeDingTalk, model: HeldModel
) -> None:
    message = robot_message(ALICE, "only once", msg_id="msgFIXED")
    dingtalk.send_robot_message(message)
    dingtalk.send_robot_message(message)  # DingTalk re-sends what it thinks was not acked
    dingtalk.wait_message("echo: only once")
    dingtalk.send_robot_message(robot_message(ALICE, "/status"))
    dingtalk.wait_message("Idle.")
    assert len(model.calls) == 1
    dingtalk.send_robot_message(robot_message(BROKEN_USER, "lost"))
    dingtalk.wait_for(
        lambda: [c for c in dingtalk.named("batchSend") if c.params["userIds"] == [BROKEN_USER]], "the failed send"
    )
    dingtalk.send_robot_message(robot_message(ALICE, "/new"))
    dingtalk.wait_message("Started a new conversation")


def test_dropped_stream_reconnects(bot: RunningGateway, dingtalk: FakeDingTalk) -> None:
    dingtalk.push(None)  # DingTalk closes the socket
    dingtalk.wait_for(lambda: dingtalk.connections == 2, "a second connection")
    assert len(dingtalk.named("connections/open")) == 2, "a fresh ticket for each connection"
    dingtalk.send_robot_message(robot_message(ALICE, "back again"))
    dingtalk.wait_message("echo: back again")
