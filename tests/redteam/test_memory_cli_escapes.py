"""Red team: `herdsman memory list` and `memory audit` print what the store holds, safely.

Finding (#30, item 7): the memory commands printed Store keys and values as they were. Facts,
their ids (store keys) and the audit trail are written by the memory model, by the agent and by
any client of the gateway's Store API, so a value carrying OSC 52 (a clipboard write), a window
title or a screen clear reached the user's terminal byte for byte, and rich markup such as
``[/x]`` in a key made the command crash (``MarkupError``) instead of listing anything.
Here hostile keys and values are put in a real SQLite memory; both commands run with colours on,
succeed, show the printable text, and write no escape sequence but their own colours (SGR).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from herdsman.config import load_config
from herdsman.memory.audit import Origin, record
from herdsman.memory.backend import close_store, open_store
from herdsman.memory.store import facts_namespace, user_label
from tests.redteam.test_terminal_escapes import HOSTILE, SGR

PAYLOAD = "".join(f"[{name}]{seq}" for name, seq in HOSTILE.items()) + "[/x] [bold"


def _seed(project: Path) -> None:
    (project / "config.yaml").write_text("home: .herdsman\nmemory: {enabled: true, user_id: ann}\n")
    raw = open_store(load_config(project / "config.yaml").config)
    try:
        fact = {
            "content": f"likes tea {PAYLOAD}",
            "category": f"preference{PAYLOAD}",
            "confidence": 0.9,
            "source_thread": f"t-1{PAYLOAD}",
            "created_at": "2026-01-01T00:00:00",
            "updated_at": "2026-01-01T00:00:00",
        }
        raw.put(facts_namespace("ann"), f"fact-key{PAYLOAD}", fact)
        record(
            raw,
            user_label("ann"),
            f"add{PAYLOAD}",
            f"fact{PAYLOAD}",
            f"item{PAYLOAD}",
            Origin(origin=f"api{PAYLOAD}", thread_id=f"thread{PAYLOAD}", run_id=f"run{PAYLOAD}"),
        )
        record(
            raw,
            user_label("ann"),
            "refuse",
            "fact",
            "f1",
            Origin(),  # the user's words and the model's guess
            detail={"content": f"guessed{PAYLOAD}", "quote": f"quoted{PAYLOAD}", "reason": f"reason{PAYLOAD}"},
        )
    finally:
        close_store(raw)


def _memory(command: str, project: Path) -> str:
    """``herdsman memory COMMAND`` with colours on: what it printed, less its own colours."""
    env = {k: v for k, v in os.environ.items() if k not in ("HERDSMAN_CONFIG", "NO_COLOR")}
    env.update({"FORCE_COLOR": "1", "TERM": "xterm-256color", "COLUMNS": "2000"})
    result = subprocess.run(
        [sys.executable, "-m", "herdsman", "memory", command],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert SGR.search(result.stdout), "colours were off: the test would not see the CLI's own sequences"
    rest = SGR.sub("", result.stdout)
    assert "\x1b" not in rest, repr(rest[max(rest.index("\x1b") - 30, 0) : rest.index("\x1b") + 30])
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", rest)
    return rest


def test_memory_list_and_audit_print_hostile_keys_and_values_safely(tmp_path: Path) -> None:
    _seed(tmp_path)
    listed = _memory("list", tmp_path)
    assert "likes tea" in listed and "fact-key" in listed and "[/x]" in listed and "[osc52]" in listed
    audit = _memory("audit", tmp_path)
    assert "add[osc52]" in audit and "thread[osc52]" in audit and "[/x]" in audit
    assert "guessed[osc52]" in audit and "quoted[osc52]" in audit and "reason[osc52]" in audit
