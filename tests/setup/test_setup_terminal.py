"""``herdsman setup`` answered in a real terminal: a tmux session whose keys the test types, as a
person would (a refused key typed again, a channel ticked, memory turned on), editing a config
the user already had."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.setup.fake_provider import fake_provider

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None, reason="tmux is not installed (scripts/install-system.sh installs it)"
)

EXISTING = """\
# my settings; the wizard must keep this comment
lead:
  max_steps: 42      # and this one
"""


class Terminal:
    """One tmux session on a private socket: start a command, read the screen, type keys."""

    def __init__(self, folder: Path) -> None:
        self.socket = str(folder / "tmux.sock")

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-S", self.socket, *args], check=True, capture_output=True, text=True).stdout

    def start(self, command: str) -> None:
        self.tmux("new-session", "-d", "-s", "setup", "-x", "160", "-y", "50", command)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-J", "-S", "-500", "-t", "setup")

    def wait_for(self, text: str, times: int = 1, timeout: float = 90.0) -> str:
        """The screen once ``text`` shows on it ``times`` times (a question asked again)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if screen.count(text) >= times:
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{text!r} never appeared; the screen:\n{self.screen()}")

    def answer(self, prompt: str, *keys: str, times: int = 1) -> None:
        """Wait for the question ``prompt`` (asked ``times`` times), then type ``keys`` (tmux key names)."""
        self.wait_for(prompt, times)
        for key in keys:
            self.tmux("send-keys", "-t", "setup", key)
            time.sleep(0.15)

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True)


@pytest.fixture
def terminal(tmp_path: Path):
    term = Terminal(tmp_path)
    yield term
    term.close()


def setup_command(folder: Path) -> str:
    """``herdsman setup`` in ``folder`` with a clean environment (no keys), then its exit code."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "PYTHONPATH", "LANG")}
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in {**keep, "TERM": "xterm-256color"}.items())
    return (
        f"cd {shlex.quote(str(folder))} && env -i {env} {shlex.quote(sys.executable)} -m herdsman setup;"
        ' echo "setup exited $?"; sleep 120'
    )


def test_wizard_in_a_real_terminal(tmp_path: Path, terminal: Terminal) -> None:
    (tmp_path / "config.yaml").write_text(EXISTING)
    with fake_provider("sk-right") as server:
        terminal.start(setup_command(tmp_path))
        terminal.answer("Which model should the agent use?", "5", "Enter")
        terminal.answer("The server's OpenAI-compatible address:", "C-u", f"{server.url}/v1", "Enter")
        terminal.answer("Model id:", "fake-large", "Enter")
        terminal.answer("leave empty if the server needs none", "sk-wrong", "Enter")
        terminal.answer("Type the key again?", "y")
        terminal.wait_for("refused the key (401)")
        terminal.answer("? API key (kept in .env as CUSTOM_API_KEY", "sk-right", "Enter", times=2)
        terminal.answer("Where should the agent's files and commands live?", "1", "Enter")
        terminal.answer("IM channels to answer in", "Space", "Enter")
        terminal.answer("telegram bot_token (kept in .env as TELEGRAM_BOT_TOKEN)", "123:tg", "Enter")
        terminal.answer("Who may use the agent on telegram?", "42, ann", "Enter")
        terminal.answer("long-term memory", "y")
        terminal.answer("Write config.yaml and .env?", "y")
        screen = terminal.wait_for("setup exited")
        asked = [(path, headers.get("authorization")) for path, headers in server.requests]
    assert "setup exited 0" in screen, screen
    assert asked == [("/v1/models", "Bearer sk-wrong"), ("/v1/models", "Bearer sk-right")]
    assert "the key works" in screen and "OK " in screen and "Next:" in screen
    for secret in ("sk-wrong", "sk-right", "123:tg"):
        assert secret not in screen  # typed into hidden prompts
    text = (tmp_path / "config.yaml").read_text()
    assert "# my settings; the wizard must keep this comment" in text and "# and this one" in text
    data = yaml.safe_load(text)
    assert data["lead"] == {"max_steps": 42, "model": "custom"}
    assert data["models"] == [
        {
            "name": "custom",
            "use": "langchain_openai:ChatOpenAI",
            "model": "fake-large",
            "base_url": f"{server.url}/v1",
            "api_key": "$CUSTOM_API_KEY",
        }
    ]
    assert data["sandbox"]["provider"] == "local"
    assert data["channels"]["telegram"] == {
        "bot_token": "$TELEGRAM_BOT_TOKEN",
        "allowed_users": ["42", "ann"],
        "enabled": True,
    }
    assert data["memory"] == {"enabled": True}
    assert (tmp_path / ".env").read_text() == "CUSTOM_API_KEY='sk-right'\nTELEGRAM_BOT_TOKEN='123:tg'\n"
    assert [p.read_text() for p in tmp_path.glob("config.yaml.*.bak")] == [EXISTING]


def test_ctrl_c_in_the_wizard_writes_nothing(tmp_path: Path, terminal: Terminal) -> None:
    (tmp_path / "config.yaml").write_text(EXISTING)
    terminal.start(setup_command(tmp_path))
    terminal.answer("Which model should the agent use?", "1", "Enter")
    terminal.answer("Model id:", "C-c")
    screen = terminal.wait_for("setup exited")
    assert "Stopped; nothing was written." in screen and "setup exited 130" in screen
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml", "tmux.sock"]
    assert (tmp_path / "config.yaml").read_text() == EXISTING
