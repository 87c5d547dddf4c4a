"""With auth on, a run always acts as the caller's user (its memory), whatever the client sends."""

from __future__ import annotations

from herdsman_gateway.routes.runs import run_config_for


def test_caller_user_overrides_a_user_id_sent_by_the_client() -> None:
    sent = {"configurable": {"user_id": "someone-else", "model": "x"}, "tags": ["t"]}
    config = run_config_for(sent, "alice")
    assert config["configurable"] == {"user_id": "alice", "model": "x"}
    assert config["tags"] == ["t"]
    assert sent["configurable"]["user_id"] == "someone-else"  # the request body is not mutated
    assert run_config_for(None, "bob") == {"configurable": {"user_id": "bob"}}


def test_without_auth_the_config_is_passed_as_sent() -> None:
    sent = {"configurable": {"user_id": "carol"}}
    assert run_config_for(sent, None) is sent
