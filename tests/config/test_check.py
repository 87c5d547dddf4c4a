"""`herdsman config check`'s deeper checks: model classes, API keys, base_url reachability."""

from __future__ import annotations

import socket

from herdsman.commands.check import check_base_url, check_config
from herdsman.config import parse_config


def test_unknown_model_class_and_missing_key() -> None:
    config = parse_config(
        """
models:
  - name: ghost
    use: no_such_module:Chat
  - name: wrong
    use: herdsman.models.scripted:NoSuchClass
  - name: scripted
    use: herdsman.models.scripted:ScriptedChatModel
    responses: ["hi"]
""",
        env={},
    )
    found = {p.path: p.message for p in check_config(config, probe_network=False)}
    assert "cannot import 'no_such_module'" in found["models.0"]
    assert "has no 'NoSuchClass'" in found["models.1"]
    assert "models.2" not in found


def test_missing_api_key_for_openai(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = parse_config("models:\n  - {name: gpt, use: 'langchain_openai:ChatOpenAI', model: gpt-4o-mini}\n", env={})
    found = {p.path: p.message for p in check_config(config, probe_network=False)}
    assert "api_key" in found["models.0"]
    assert "set api_key for model 'gpt'" in found["models.0"]


def test_unreachable_base_url() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # nothing listens on the port now
    reason = check_base_url(f"http://127.0.0.1:{port}/v1")
    assert reason is not None and f"cannot reach 127.0.0.1:{port}" in reason
    assert "not an http(s) URL" in (check_base_url("ftp://x") or "")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert check_base_url(f"http://127.0.0.1:{server.getsockname()[1]}") is None
