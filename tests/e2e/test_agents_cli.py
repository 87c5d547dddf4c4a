"""``herdsman agents`` in real processes: create, list, use with ``run --agent``, edit, delete (#14)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.support import run_cli

SOUL = "You are Captain Parrot."


def write_config(tmp: Path) -> Path:
    """Two scripted models on a SQLite home: the default one, and ``other`` (recording its calls)."""
    cfg = tmp / "config.yaml"
    scripted = {"use": "herdsman.models.scripted:ScriptedChatModel", "on_exhausted": "repeat_last"}
    cfg.write_text(
        yaml.safe_dump(
            {
                "home": "home",
                "lead": {"model_retries": 0, "verify_rounds": 0},
                "title": {"enabled": False},
                "models": [
                    {"name": "scripted", **scripted, "responses": ["from the default model"]},
                    {"name": "other", **scripted, "responses": ["Squawk."], "record_file": str(tmp / "other.jsonl")},
                ],
            }
        )
    )
    return cfg


def test_create_use_edit_and_delete_an_agent(tmp_path: Path) -> None:
    cfg = str(write_config(tmp_path))
    made = run_cli(
        "agents",
        "create",
        "Parrot",
        "--instructions",
        SOUL,
        "--model",
        "other",
        "--tool",
        "read_file",
        "--tool",
        "ls",
        "--no-delegation",
        "--max-steps",
        "4",
        "--config",
        cfg,
        cwd=tmp_path,
    )
    assert made.returncode == 0, made.stderr
    assert "Created agent Parrot" in made.stdout

    bad = run_cli("agents", "create", "Bad", "--tool", "teleport", "--config", cfg, cwd=tmp_path)
    assert bad.returncode == 1
    assert "agent.tools" in bad.stderr and "teleport" in bad.stderr and "read_file" in bad.stderr
    bad = run_cli("agents", "create", "Bad", "--model", "gpt-9", "--config", cfg, cwd=tmp_path)
    assert bad.returncode == 1 and "other" in bad.stderr

    listed = run_cli("agents", "list", "--config", cfg, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "Parrot" in listed.stdout and "lead_agent" in listed.stdout and "Bad" not in listed.stdout

    out = run_cli("run", "hi", "--agent", "Parrot", "--config", cfg, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "Squawk." in out.stdout
    call = json.loads((tmp_path / "other.jsonl").read_text().splitlines()[0])
    assert sorted(call["tools"]) == ["ls", "read_file"]
    assert SOUL in call["messages"][0]["content"]

    edited = run_cli(
        "agents",
        "edit",
        "Parrot",
        "--instructions",
        "Be brief.",
        "--name",
        "Brief parrot",
        "--config",
        cfg,
        cwd=tmp_path,
    )
    assert edited.returncode == 0, edited.stderr
    assert "version 2" in edited.stdout
    plain = run_cli("run", "hi", "--config", cfg, cwd=tmp_path)
    assert "from the default model" in plain.stdout  # without --agent: the plain lead

    assert run_cli("agents", "delete", "Brief parrot", "--config", cfg, cwd=tmp_path).returncode == 0
    gone = run_cli("run", "hi", "--agent", "Brief parrot", "--config", cfg, cwd=tmp_path)
    assert gone.returncode == 1 and "herdsman agents list" in gone.stderr
    assert "Parrot" not in run_cli("agents", "list", "--config", cfg, cwd=tmp_path).stdout
