"""The platform-free parts of the channels: commands, progress notes, throttling, answers,
access rules, the chat -> thread map and the channels section of config.yaml.
"""

from __future__ import annotations

import pytest
from langgraph.store.memory import InMemoryStore

from herdsman.config import ConfigError, parse_config
from herdsman.config.schema import WeComChannelConfig
from herdsman_gateway.channels.base import InboundMessage
from herdsman_gateway.channels.commands import parse_command
from herdsman_gateway.channels.dispatcher import Dispatcher, final_answer, is_allowed, split_text
from herdsman_gateway.channels.manager import redact
from herdsman_gateway.channels.progress import Throttle, progress_lines
from herdsman_gateway.channels.slack import slash_command_text
from herdsman_gateway.channels.threads import ChatThreads


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("/new", "new"),
        ("/status@herd_bot", "status"),
        ("  !cancel now", "cancel"),
        ("/HELP", "help"),
        ("/frobnicate", None),
    ],
)
def test_commands_are_recognised(text: str, name: str | None) -> None:
    command = parse_command(text)
    assert command is not None and command.name == name


@pytest.mark.parametrize("text", ["hello /new", "", "/", "/ spaced", "!!!", "/etc/passwd is a path"])
def test_ordinary_text_is_not_a_command(text: str) -> None:
    command = parse_command(text)
    assert command is None or command.name is None


def test_slash_commands_map_to_their_last_word() -> None:
    assert slash_command_text("/herd-status", "") == "/status"
    assert slash_command_text("/new", "please") == "/new please"
    assert slash_command_text("/deploy", "x") == "/deploy x"


def test_progress_tells_tool_calls_and_sub_agents() -> None:
    update = {
        "model": {
            "messages": [
                {
                    "type": "ai",
                    "content": "",
                    "tool_calls": [
                        {"name": "write_file", "args": {"path": "/mnt/user-data/outputs/a.txt", "content": "x"}},
                        {"name": "task", "args": {"description": "dig"}},
                    ],
                }
            ]
        }
    }
    assert progress_lines("updates", update) == ["🔧 write_file: /mnt/user-data/outputs/a.txt"]
    assert progress_lines("updates|tools:call_1", update) == [], "sub-agents' own steps stay quiet"
    started = {"type": "task_started", "subagent_type": "researcher", "description": "find sources"}
    assert progress_lines("custom|tools:call_1", started) == ["🤖 researcher started: find sources"]
    assert progress_lines("custom", {"type": "task_completed", "subagent_type": "researcher"}) == [
        "🤖 researcher finished"
    ]
    assert progress_lines("values", {"messages": []}) == []


def test_a_note_of_the_completion_check_is_one_progress_line_never_the_answer() -> None:
    note = {
        "type": "human",
        "name": "harness",
        "content": "[harness check] Not done yet:\n- a.txt does not exist",
        "additional_kwargs": {"herdsman_findings": [{"rule": "missing_file"}, {"rule": "no_tool_used"}]},
    }
    update = {"CompletionCheckMiddleware.after_model": {"messages": [note]}}
    assert progress_lines("updates", update) == ["🔎 checked: 2 findings, sent back to the agent"]
    untyped = {**note, "additional_kwargs": {}}
    assert progress_lines("updates", {"check": {"messages": [untyped]}}) == [
        "🔎 checked: 1 note, sent back to the agent"
    ]
    assert progress_lines("updates", update, "zh") == ["🔎 已检查：2 个问题，已退回给智能体"]  # a chat in Chinese
    answered = {
        "messages": [
            {"type": "human", "content": "save a.txt"},
            {"type": "ai", "content": "Here it is"},
            note,
            {"type": "ai", "content": "Saved a.txt"},
        ]
    }
    assert final_answer(answered) == "Saved a.txt"


def test_a_call_written_as_text_is_a_failed_step_in_a_chat_not_the_answer() -> None:
    raw = {
        "type": "ai",
        "content": '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>',
        "additional_kwargs": {"herdsman_call_as_text": ["bash"]},
    }
    assert progress_lines("updates", {"model": {"messages": [raw]}}) == ["✗ bash: tool call written as text, not run"]
    answer = final_answer({"messages": [{"type": "human", "content": "list the files"}, raw]})
    assert "<tool_call>" not in answer and "not run" in answer


def test_throttle_sends_at_most_once_per_interval() -> None:
    now = [100.0]
    throttle = Throttle(3.0, clock=lambda: now[0])
    assert throttle.take() is None
    throttle.add(["a"])
    assert throttle.take() == "a"
    throttle.add(["b"])
    now[0] += 1
    assert throttle.take() is None, "too soon"
    throttle.add(["c"])
    now[0] += 2.5
    assert throttle.take() == "b\nc", "held lines come together"
    throttle.add(["d"])
    assert throttle.take(force=True) == "d"


def test_long_answers_are_split_at_line_ends() -> None:
    text = "\n".join(f"line {i:03d}" for i in range(100))
    pieces = split_text(text, 100)
    assert all(len(p) <= 100 for p in pieces) and "\n".join(pieces) == text
    assert split_text("x" * 250, 100) == ["x" * 100, "x" * 100, "x" * 50]


def test_split_by_bytes_keeps_characters_whole() -> None:
    def utf8(t: str) -> int:
        return len(t.encode())

    text = "说明" * 1500 + "\nend"  # 3 bytes a character
    pieces = split_text(text, 2048, utf8)
    assert all(utf8(p) <= 2048 for p in pieces) and "".join(pieces).replace("\n", "") == text.replace("\n", "")
    assert len(pieces) == 5


def test_answer_texts_for_each_ending() -> None:
    values = {
        "messages": [{"type": "human", "content": "q"}, {"type": "ai", "content": [{"type": "text", "text": "42"}]}]
    }
    assert final_answer(values) == "42"
    assert Dispatcher.answer_text({"status": "success"}, values) == "42"
    failed = Dispatcher.answer_text({"status": "error"}, {"__error__": {"message": "model down"}})
    assert "model down" in failed and "/new" in failed
    assert "Stopped" in Dispatcher.answer_text({"status": "interrupted"}, {})
    interrupt = {"value": {"question": "Which file?", "choices": ["a.txt", "b.txt"]}}
    asked = Dispatcher.answer_text({"status": "success"}, {"__interrupt__": [interrupt]})
    assert "Which file?" in asked and "a.txt, b.txt" in asked


def test_allowed_users_by_id_name_or_star() -> None:
    alice = InboundMessage("telegram", "1", "42", "hi", user_name="alice")
    assert is_allowed(["42"], alice) and is_allowed(["alice"], alice) and is_allowed(["*"], alice)
    assert not is_allowed([], alice) and not is_allowed(["43", "bob"], alice)


async def test_chat_threads_are_per_chat_and_new_replaces() -> None:
    chats = ChatThreads(InMemoryStore())
    assert await chats.get("slack", "C1") is None
    first = await chats.current("slack", "C1")
    assert await chats.current("slack", "C1") == first
    assert await chats.current("telegram", "C1") != first, "the same chat id on another platform is another chat"
    fresh = await chats.new("slack", "C1")
    assert fresh != first and await chats.get("slack", "C1") == fresh


def test_enabled_channel_without_its_secret_names_the_fix() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config("channels:\n  slack:\n    enabled: true\n    bot_token: xoxb-1\n", env={})
    assert "signing_secret" in str(info.value) and "SLACK_SIGNING_SECRET" in str(info.value)
    with pytest.raises(ConfigError) as info:
        parse_config("channels:\n  telegram:\n    enabled: true\n    bot_token: $TELEGRAM_BOT_TOKEN\n", env={})
    assert "TELEGRAM_BOT_TOKEN" in str(info.value)
    config = parse_config(
        "channels:\n  discord:\n    enabled: true\n    bot_token: $DISCORD_BOT_TOKEN\n",
        env={"DISCORD_BOT_TOKEN": "abc"},
    )
    assert config.channels.discord.bot_token == "abc" and config.channels.discord.allowed_users == []


def test_errors_shown_for_a_channel_hide_its_secrets() -> None:
    section = WeComChannelConfig(
        enabled=True, corp_id="ww1", secret="s3cr3t-value", agent_id=1, token="tok-value", encoding_aes_key="a" * 43
    )
    error = (
        "ConnectionError: HTTPConnectionPool(host='127.0.0.1'): Max retries exceeded with url: "
        "/cgi-bin/gettoken?corpid=ww1&corpsecret=x9 (token tok-value, s3cr3t-value)"
    )
    shown = redact(error, section)
    assert "x9" not in shown and "tok-value" not in shown and "s3cr3t-value" not in shown
    assert "corpid=ww1" in shown and "corpsecret=***" in shown and "Max retries exceeded" in shown


async def test_a_chat_gets_its_answer_when_following_the_run_failed(monkeypatch) -> None:
    """Red team (h-rt30): Redis away longer than ``follow_run`` waits: the follow-up raised, was
    logged, and the chat never got the run's answer, though the run ended well (its record and
    state do not need Redis). The answer is now sent once the run is over."""
    from functools import partial
    from types import SimpleNamespace

    import herdsman_gateway.channels.dispatcher as dispatcher_module
    from herdsman.config.schema import ChannelsConfig
    from herdsman.runtime.streaming.stream_bridge import follow_run

    class DownBridge:
        closed = False

        async def subscribe(self, run_id, *, last_event_id=None, heartbeat=15.0):
            raise ConnectionError("Redis is away")
            yield  # pragma: no cover

    async def join(thread_id, run_id):
        return {"messages": [{"type": "ai", "content": "the answer"}]}

    async def get(thread_id, run_id):
        return {"status": "success"}

    async def ended(thread_id, run_id):
        return False

    sent: list[str] = []

    class Chat:
        name, max_text = "fake", 4000

        def text_size(self, text):
            return len(text)

        async def send_text(self, chat_id, text, reply_to=None):
            sent.append(text)

    monkeypatch.setattr(dispatcher_module, "follow_run", partial(follow_run, give_up_after=0.0))
    runs = SimpleNamespace(join=join, get=get, ended=ended)
    gateway = SimpleNamespace(bridge=DownBridge(), runs=runs, threads=SimpleNamespace(store=InMemoryStore()))
    dispatcher = Dispatcher(gateway, ChannelsConfig(send_files=False), {})
    await dispatcher.follow(Chat(), InboundMessage("fake", "1", "42", "hi"), "t", "r", {})
    assert sent == ["the answer"]
