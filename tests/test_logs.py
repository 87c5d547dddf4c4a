"""Logging: importing Herdsman configures nothing global; its events are structlog key-value
events that reach stdlib logging, where the application (or Herdsman's CLI) shows them."""

from __future__ import annotations

import ast
import json
import logging
import subprocess
import sys

import pytest

from herdsman.logs import get_logger
from tests.support import REPO, logged_events

KNOWN_EXCEPTIONS: set[str] = set()


def test_importing_herdsman_leaves_structlog_and_logging_as_they_were() -> None:
    """A fresh interpreter that imports the library, its client, CLI and gateway app has
    structlog unconfigured and the root logger untouched, as one that imported only structlog."""
    probe = (
        "import json, logging, structlog\n"
        "before = (structlog.is_configured(), repr(structlog.get_config()), logging.getLogger().handlers, logging.getLogger().level)\n"
        "import herdsman, herdsman.client, herdsman.cli, herdsman.agents.lead, herdsman_gateway.app, herdsman_gateway.worker\n"
        "after = (structlog.is_configured(), repr(structlog.get_config()), logging.getLogger().handlers, logging.getLogger().level)\n"
        "print(json.dumps({'configured': after[0], 'same': repr(before) == repr(after)}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=300, check=True
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"configured": False, "same": True}


def test_an_event_reaches_stdlib_logging_with_its_fields(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="herdsman.test_logs"):
        get_logger("herdsman.test_logs").info("thing_done", thread_id="t-1", files=3)
        get_logger("herdsman.test_logs").debug("below_the_level")
    events = logged_events(caplog.records)
    assert [(e["event"], e["thread_id"], e["files"], e["level"]) for e in events] == [("thing_done", "t-1", 3, "info")]
    assert caplog.records[0].name == "herdsman.test_logs"


def test_every_module_logs_structlog_events_through_herdsman_logs() -> None:
    """One logging style: no module logs through stdlib ``logging`` directly (``%``-messages) or
    takes structlog's globally configured logger; each uses ``herdsman.logs.get_logger``."""
    offenders = []
    for path in sorted((REPO / "src").rglob("*.py")):
        name = str(path.relative_to(REPO))
        if name == "src/herdsman/logs.py" or name in KNOWN_EXCEPTIONS:
            continue
        for node in ast.walk(ast.parse(path.read_text(), name)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
            ):
                call = f"{node.func.value.id}.{node.func.attr}"
                own = call == "logging.getLogger" and any(
                    isinstance(a, ast.Name) and a.id == "__name__" for a in node.args
                )
                if own or call in ("structlog.get_logger", "structlog.configure", "logging.basicConfig"):
                    offenders.append(f"{name}:{node.lineno}: {call}")
    assert offenders == [], "log with `log = herdsman.logs.get_logger(__name__)` and key-value events: " + ", ".join(
        offenders
    )
