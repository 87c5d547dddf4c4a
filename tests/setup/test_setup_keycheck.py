"""The key check makes one real call with the provider's client: against a local OpenAI- and
Anthropic-shaped server it tells a good key from a refused one, and with nothing to reach it says
so and keeps the key unchecked."""

from __future__ import annotations

import socket

from herdsman.setup.keycheck import check_key
from herdsman.setup.providers import PROVIDERS
from tests.setup.fake_provider import MODELS, fake_provider


def test_openai_compatible_key_good_refused_and_model_missing() -> None:
    with fake_provider("sk-good") as server:
        good = check_key(PROVIDERS["custom"], "sk-good", f"{server.url}/v1", "fake-large")
        assert good.status == "ok" and good.models == MODELS
        bad = check_key(PROVIDERS["custom"], "sk-wrong", f"{server.url}/v1", "fake-large")
        assert bad.status == "rejected" and "refused the key (401)" in bad.message
        other = check_key(PROVIDERS["openai"], "sk-good", f"{server.url}/v1", "gpt-9")
        assert other.status == "ok" and "'gpt-9' is not among them" in other.message
        assert len(server.requests) == 3  # one call each, no retries
        assert server.requests[1][1]["authorization"] == "Bearer sk-wrong"


def test_anthropic_key_through_its_own_client() -> None:
    with fake_provider("sk-ant-good") as server:
        good = check_key(PROVIDERS["anthropic"], "sk-ant-good", server.url, "fake-small")
        assert good.status == "ok" and "fake-small" in good.models
        bad = check_key(PROVIDERS["anthropic"], "sk-ant-bad", server.url, "fake-small")
        assert bad.status == "rejected"
        sent = server.requests[0][1]
        assert "anthropic-version" in sent and "sk-ant-good" in (
            sent.get("x-api-key"),
            sent.get("authorization", "")[7:],
        )


def test_no_network_is_said_plainly_and_keeps_the_key() -> None:
    nowhere = check_key(PROVIDERS["deepseek"], "sk-1", "http://provider.invalid/v1", None, timeout=3)
    assert nowhere.status == "unreachable"
    assert "cannot reach http://provider.invalid/v1" in nowhere.message and "saved unchecked" in nowhere.message
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    closed = check_key(PROVIDERS["openai"], "sk-1", f"http://127.0.0.1:{port}/v1", None, timeout=3)
    assert closed.status == "unreachable"


def test_a_server_without_a_models_list_leaves_the_key_unchecked() -> None:
    with fake_provider("k") as server:
        result = check_key(PROVIDERS["custom"], "k", f"{server.url}/elsewhere", "m")
    assert result.status == "unchecked" and "answered 404" in result.message
