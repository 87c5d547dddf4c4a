"""Helpers shared by tests: configs rooted in a temp home, running the CLI in a new process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from herdsman.config import HerdsmanConfig, parse_config

REPO = Path(__file__).resolve().parents[1]


def make_config(home: Path, **sections: object) -> HerdsmanConfig:
    """A config rooted at ``home`` with retries off (scripted models fail fast) and the completion
    check off (a scripted reply is final as written; tests of the check turn it on), and the
    standard profile for the scripted model that stands in for the embedded one (tests of the
    small profile ask for it) plus ``sections``."""
    data: dict = {
        "home": str(home),
        "lead": {"model_retries": 0, "verify_rounds": 0},
        "local_model": {"profile": "standard"},
        "checkpointer": {"type": "memory"},
    }
    for key, value in sections.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return parse_config(yaml.safe_dump(data), env={})


def run_cli(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``herdsman ARGS`` in a new process and return what it printed."""
    full_env = {k: v for k, v in os.environ.items() if k != "HERDSMAN_CONFIG"}
    full_env.update({"COLUMNS": "200", "NO_COLOR": "1", **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "herdsman", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
