"""Helpers shared by tests: configs rooted in a temp home, running the CLI in a new process or in this one."""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
from pathlib import Path

import yaml

from herdsman.config import HerdsmanConfig, parse_config

REPO = Path(__file__).resolve().parents[1]


def make_config(home: Path, **sections: object) -> HerdsmanConfig:
    """A config rooted at ``home`` with retries off (scripted models fail fast), the completion
    check off (a scripted reply is final as written; tests of the check turn it on) and its clean
    pages off (a script written for the conversation has no reply for a page; their tests turn
    them on), the model's own pick of a skill off (a harness call the script has no reply for; its
    tests turn it on), and the standard profile for the scripted model that stands in for the
    embedded one (tests of the small profile ask for it) plus ``sections``."""
    data: dict = {
        "home": str(home),
        "lead": {
            "model_retries": 0,
            "verify_rounds": 0,
            "program_answers": "off",
            "file_rewrites": "off",
            "task_programs": "off",
            "answer_translations": "off",
        },
        "local_model": {"profile": "standard"},
        "checkpointer": {"type": "memory"},
        "skills": {"ask_model": "off"},
    }
    for key, value in sections.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return parse_config(yaml.safe_dump(data), env={})


def run_cli_here(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``herdsman ARGS`` in this process (typer's test runner) and return what it printed, as
    :func:`run_cli` does: the same command code, exit code, stdout and stderr, in the directory
    ``cwd`` with the same environment, without the new process (whose imports cost seconds of CPU
    a call). An unexpected exception is raised, not turned into exit code 1. The root logger the
    CLI configures is put back afterwards, so later tests log as before."""
    from typer.testing import CliRunner

    from herdsman.cli import app

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    full_env: dict[str, str | None] = {"HERDSMAN_CONFIG": None, "COLUMNS": "200", "NO_COLOR": "1", **(env or {})}
    try:
        with contextlib.chdir(cwd):
            result = CliRunner().invoke(app, list(args), env=full_env, catch_exceptions=False)
    finally:
        root.handlers, root.level = handlers, level
    return subprocess.CompletedProcess(["herdsman", *args], result.exit_code, result.stdout, result.stderr)


def run_cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
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


def logged_events(records: list[logging.LogRecord]) -> list[dict]:
    """The structlog events among stdlib log ``records`` (pytest's ``caplog.records``): Herdsman's
    loggers (``herdsman.logs.get_logger``) hand stdlib logging the event dict as the message."""
    return [r.msg for r in records if isinstance(r.msg, dict)]


def marked(messages: list, key: str) -> list:
    """The AI messages of ``messages`` whose ``additional_kwargs`` carry ``key`` (the harness's own
    calls, each marked by the part that made it)."""
    from langchain_core.messages import AIMessage

    return [m for m in messages if isinstance(m, AIMessage) and m.additional_kwargs.get(key)]


def tool_call(name: str, **args: object) -> dict:
    """A scripted model's reply that calls the tool ``name`` with ``args``."""
    return {"tool_calls": [{"name": name, "args": args}]}


async def small_model_run(
    home: Path, thread: str, message: str, model: object, files: dict[str, str], lead: dict, **sections: object
) -> list:
    """The thread's messages after one run of ``message`` on the small profile with ``model``
    (a scripted model), the workspace first holding ``files`` (name -> text) and the ``lead``
    settings given (the completion check's rounds among them), plus other config ``sections``."""
    from herdsman.client import HerdsmanClient

    ws = home / "threads" / thread / "user-data" / "workspace"
    ws.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (ws / name).write_text(text)
    config = make_config(
        home, local_model={"profile": "small"}, context={"hide_unavailable_tools": False}, lead=lead, **sections
    )
    async with HerdsmanClient(config, model=model) as client:
        [e async for e in client.stream(message, thread_id=thread)]
        state = await client.agent.aget_state({"configurable": {"thread_id": thread}})
    return state.values["messages"]


async def page_run(
    home: Path, thread: str, message: str, model: object, files: dict[str, str], switch: str, mode: str, **lead: str
) -> list:
    """:func:`small_model_run` with the completion check on (two rounds) and the lead's ``switch``
    (a clean page's: ``program_answers``, ``file_rewrites``...) set to ``mode``, plus ``lead``."""
    return await small_model_run(home, thread, message, model, files, {switch: mode, "verify_rounds": 2, **lead})
