"""Red team: a gateway without API keys on an address other than loopback.

Without keys, anyone who reaches the gateway's port drives the agent and its sandbox, so
``herdsman serve`` must refuse every address that is not loopback only: the wildcards of both
families (``0.0.0.0``, ``::``), a LAN address, an empty host (which binds every interface), a
name that does not resolve to loopback, and say what to do (keys, or 127.0.0.1). Serving
without keys anyway takes an explicit ``gateway.open_without_keys: true``, and says so at start.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from herdsman_gateway.serve import UnsafeBindError, check_bind
from tests.support import make_config, run_cli

OPEN = ["0.0.0.0", "::", "", "192.0.2.10", "fe80::1", "::ffff:127.0.0.1", "0", "example.invalid"]


@pytest.mark.parametrize("host", OPEN)
def test_an_open_address_without_keys_is_refused(tmp_path: Path, host: str) -> None:
    with pytest.raises(UnsafeBindError) as refused:
        check_bind(make_config(tmp_path), host)
    message = str(refused.value)
    assert "api_keys" in message and "127.0.0.1" in message and "open_without_keys" in message


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", "127.0.0.2"])
def test_loopback_is_served_without_keys(tmp_path: Path, host: str) -> None:
    assert "only listens on loopback" in check_bind(make_config(tmp_path), host)


def test_serving_without_keys_on_the_network_is_an_explicit_choice(tmp_path: Path) -> None:
    note = check_bind(make_config(tmp_path, gateway={"open_without_keys": True}), "0.0.0.0")
    assert note.startswith("WARNING") and "gateway.allowed_hosts" in note
    assert "API keys required" in check_bind(make_config(tmp_path, gateway={"api_keys": ["k"]}), "0.0.0.0")


def test_serve_says_what_to_do(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"home": str(tmp_path / "home"), "checkpointer": {"type": "memory"}}))
    result = run_cli("serve", "--config", str(config), "--host", "::", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "api_keys" in result.stderr and "open_without_keys" in result.stderr and "127.0.0.1" in result.stderr
