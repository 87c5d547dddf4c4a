"""``herdsman setup --non-interactive`` end to end in new processes, then ``herdsman config
check`` in another one that has no key in its environment (it comes from .env)."""

from __future__ import annotations

import re
import stat
from pathlib import Path

import pytest
import yaml

from tests.setup.fake_provider import fake_provider
from tests.support import REPO, run_cli

KEYS = ("OPENAI_API_KEY", "DEEPSEEK_API_KEY", "CUSTOM_API_KEY", "TELEGRAM_BOT_TOKEN", "HERDSMAN_CONFIG")


@pytest.fixture(autouse=True)
def no_keys_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The wizard's processes see no key but those the test gives (a developer may have some set)."""
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)


def cli(*args: str, cwd: Path):
    return run_cli(*args, cwd=cwd)


def test_non_interactive_setup_then_config_check_passes(tmp_path: Path) -> None:
    with fake_provider("sk-live-1") as server:
        done = cli(
            "setup",
            "--non-interactive",
            "--provider",
            "custom",
            "--base-url",
            f"{server.url}/v1",
            "--model",
            "fake-large",
            "--api-key",
            "sk-live-1",
            "--sandbox",
            "local",
            "--memory",
            "--channel",
            "telegram",
            "--secret",
            "TELEGRAM_BOT_TOKEN=123:tg",
            "--allowed-users",
            "telegram=42,ann",
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "API key: the key works" in done.stdout
        assert "sk-live-1" not in done.stdout + done.stderr and "123:tg" not in done.stdout + done.stderr
        assert "herdsman config check" in done.stdout and "OK " in done.stdout
        assert "herdsman chat" in done.stdout and "--config" not in done.stdout.split("Next:")[1]
        text = (tmp_path / "config.yaml").read_text()
        assert "sk-live-1" not in text and "123:tg" not in text
        data = yaml.safe_load(text)
        assert data["models"][0] == {
            "name": "custom",
            "use": "langchain_openai:ChatOpenAI",
            "model": "fake-large",
            "base_url": f"{server.url}/v1",
            "api_key": "$CUSTOM_API_KEY",
        }
        assert data["channels"]["telegram"] == {
            "bot_token": "$TELEGRAM_BOT_TOKEN",
            "allowed_users": ["42", "ann"],
            "enabled": True,
        }
        assert stat.S_IMODE((tmp_path / ".env").stat().st_mode) == 0o600
        checked = cli("config", "check", cwd=tmp_path)  # a new process: the keys come from .env
        assert checked.returncode == 0, checked.stderr
        assert "lead model 'custom'" in checked.stdout
        again = cli("setup", "--non-interactive", "--provider", "custom", "--model", "fake-large", cwd=tmp_path)
        assert again.returncode == 0 and "nothing to change" in again.stdout
        assert list(tmp_path.glob("config.yaml.*.bak")) == []


def test_existing_config_is_edited_with_a_backup(tmp_path: Path) -> None:
    original = (REPO / "config.example.yaml").read_text()
    (tmp_path / "config.yaml").write_text(original)
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-old\nDEEPSEEK_API_KEY=sk-ds\n")
    # an address that resolves nowhere (.invalid): the key check cannot reach it, on any machine
    done = cli(
        "setup",
        "--non-interactive",
        "--provider",
        "deepseek",
        "--base-url",
        "http://deepseek.invalid/v1",
        "--no-memory",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "API key: cannot reach http://deepseek.invalid/v1" in done.stdout and "saved unchecked" in done.stdout
    assert "no network probe" in done.stdout and "OK " in done.stdout
    text = (tmp_path / "config.yaml").read_text()
    assert text.count("\n") == original.count("\n")  # the deepseek entry existed: two lines changed in place
    assert re.search(r"\n  model: deepseek +# default: the first model above", text)
    assert "\n    base_url: http://deepseek.invalid/v1\n" in text
    assert "# Herdsman configuration. Copy to config.yaml" in text
    backups = list(tmp_path.glob("config.yaml.*.bak"))
    assert len(backups) == 1 and backups[0].read_text() == original
    assert (tmp_path / ".env").read_text() == "OPENAI_API_KEY=sk-old\nDEEPSEEK_API_KEY=sk-ds\n"  # nothing new to keep


def test_a_refused_key_or_a_missing_one_writes_nothing(tmp_path: Path) -> None:
    with fake_provider("sk-right") as server:
        refused = cli(
            "setup",
            "--non-interactive",
            "--provider",
            "openai",
            "--base-url",
            f"{server.url}/v1",
            "--api-key",
            "sk-wrong",
            cwd=tmp_path,
        )
    assert refused.returncode == 1 and "refused the key (401)" in refused.stdout
    assert "Nothing was written" in refused.stderr
    missing = cli("setup", "--non-interactive", "--provider", "openai", cwd=tmp_path)
    assert missing.returncode == 2
    assert "pass --api-key, or export OPENAI_API_KEY" in missing.stderr
    bad_pair = cli("setup", "--non-interactive", "--secret", "no-equals-sign", cwd=tmp_path)
    assert bad_pair.returncode == 2 and "is not NAME=VALUE" in bad_pair.stderr
    two_lines = cli(
        "setup", "--non-interactive", "--provider", "openai", "--api-key", "sk-1\nsk-2", "--no-check-key", cwd=tmp_path
    )
    assert two_lines.returncode == 2 and "line break" in two_lines.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_without_a_terminal_the_wizard_says_to_use_flags(tmp_path: Path) -> None:
    done = cli("setup", cwd=tmp_path)
    assert done.returncode == 2 and "--non-interactive" in done.stderr
    assert not (tmp_path / "config.yaml").exists()
