"""Skills switched on or off at run time, kept in ``<home>/skills_state.json``.

The gateway's ``/api/skills/{name}/enable|disable`` and ``herdsman skills enable|disable`` write
the switches; every lead agent (gateway, CLI, embedded client) is built with ``skills.disabled``
as the switches make it (:func:`disabled_skills`): a switch wins over config.yaml for its skill.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable
from pathlib import Path

from herdsman.config.schema import HerdsmanConfig
from herdsman.logs import get_logger

log = get_logger(__name__)

STATE_FILE = "skills_state.json"
_WRITE_LOCK = threading.Lock()  # one switch written at a time (read, change, replace)


class SkillSwitches:
    """Skills switched on or off through the API, kept as JSON: ``{"skills": {name: bool}}``."""

    def __init__(self, path: Path) -> None:
        """``path``: the JSON file (created on the first switch)."""
        self.path = path

    @classmethod
    def of(cls, config: HerdsmanConfig) -> SkillSwitches:
        """The switches of ``config``'s home."""
        return cls(config.resolve_home() / STATE_FILE)

    def load(self) -> dict[str, bool]:
        """Name -> on/off; empty when nothing was switched (an unreadable file is logged and ignored)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("skills_state_unreadable", file=str(self.path), error=str(exc))
            return {}
        skills = data.get("skills") if isinstance(data, dict) else None
        return {str(k): bool(v) for k, v in skills.items()} if isinstance(skills, dict) else {}

    def set(self, name: str, enabled: bool) -> None:
        """Record a switch (written to a temporary file, then renamed: never half a file)."""
        with _WRITE_LOCK:
            state = self.load()
            state[name] = enabled
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".json.tmp")
            tmp.write_text(json.dumps({"skills": dict(sorted(state.items()))}, indent=2) + "\n", encoding="utf-8")
            os.replace(tmp, self.path)

    def disabled(self, configured: Iterable[str]) -> list[str]:
        """The skills to leave out: config.yaml's ``skills.disabled``, then the switches on top."""
        state = self.load()
        off = {name for name in configured if state.get(name) is not True}
        off |= {name for name, on in state.items() if not on}
        return sorted(off)


def disabled_skills(config: HerdsmanConfig) -> list[str]:
    """The skills the agent leaves out: config.yaml's ``skills.disabled`` with the switches applied."""
    return SkillSwitches.of(config).disabled(config.skills.disabled)
