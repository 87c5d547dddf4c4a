"""Red team: `herdsman run` never passes a control sequence from a tool or a model to the terminal.

Finding 8 of the hardening issue: a command's output with OSC 52 (clipboard write), a window
title sequence or a screen clear reached the user's terminal byte for byte. Here a scripted model
makes bash print each hostile sequence and puts more in its own text and tool arguments; the CLI
runs with colours on, and the only escape sequences in what it writes are its own colours (SGR).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.e2e.test_cli import write_config

HOSTILE = {
    "osc52": "\x1b]52;c;cm0gLXJmIH4=\x07",
    "title": "\x1b]0;pwned\x1b\\",
    "clear": "\x1b[2J\x1b[H\x1bc",
    "cursor": "\x1b[5A\x1b[2K",
    "dcs": "\x1bP1$r0m\x1b\\",
    "apc": "\x1b_payload\x1b\\",
    "c1_csi": "\x9b6n",
    "c1_osc": "\x9d0;t\x9c",
    "bell": "\x07",
    "bidi": "\u202etxt.exe",
}
SGR = re.compile(r"\x1b\[[0-9;]*m")


def test_run_prints_no_hostile_control_sequence(tmp_path: Path) -> None:
    payload = "".join(f"[{name}]{seq}" for name, seq in HOSTILE.items())
    printf = payload.replace("\\", "\\\\").replace("'", "'\\''")
    cfg = write_config(
        tmp_path,
        "esc",
        [
            {"tool_calls": [{"name": "bash", "args": {"command": f"printf '%s' '{printf}'"}}]},
            f"Done {payload} end-of-answer",
        ],
    )
    env = {k: v for k, v in os.environ.items() if k not in ("HERDSMAN_CONFIG", "NO_COLOR")}
    env.update({"FORCE_COLOR": "1", "TERM": "xterm-256color", "COLUMNS": "400"})
    out = subprocess.run(
        [sys.executable, "-m", "herdsman", "run", "show me", "--config", str(cfg)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr.decode(errors="replace")
    text = out.stdout.decode("utf-8")
    assert SGR.search(text), "colours were off: the test would not see the CLI's own sequences"
    rest = SGR.sub("", text)
    assert "\x1b" not in rest, repr(rest[rest.index("\x1b") - 20 : rest.index("\x1b") + 20])
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", rest)
    for name in HOSTILE:  # the printable text around the sequences is still shown
        assert f"[{name}]" in rest
    assert "end-of-answer" in rest and "▶ bash" in rest
