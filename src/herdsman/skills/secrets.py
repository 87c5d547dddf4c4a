"""Secrets a skill declares (``env:`` / ``required-secrets:``), set per user and kept out of
everything the model or a trace sees.

Values live in ``<home>/skill_secrets/<hash of the user>.json`` (folder 0700, files 0600, written
to a temporary file and renamed), never in the thread state, a checkpoint or config.yaml. The
bash tool asks :class:`SkillSecrets` for the values of the skills a command runs
(:mod:`herdsman.skills.command_env`) and passes them as environment variables of that one
command; listings name the variables, never the values.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path

from herdsman.config.schema import HerdsmanConfig
from herdsman.logs import get_logger
from herdsman.pools import LOCAL_USER
from herdsman.skills.model import Skill
from herdsman.skills.parse import ENV_NAME_RE, NAME_RE

log = get_logger(__name__)

SECRETS_DIR = "skill_secrets"
MAX_VALUE_BYTES = 16 * 1024
_LOCK = threading.Lock()


class SecretError(ValueError):
    """A secret that cannot be set: names the skill, the variable and what to do."""


def declared(skill: Skill) -> list[str]:
    """The variables ``skill`` declares: its ``env`` names, then its ``required-secrets``."""
    return list(dict.fromkeys([*skill.env, *skill.required_secrets]))


class SkillSecrets:
    """One home's per-user skill secrets: ``{skill: {VAR: value}}`` per user."""

    def __init__(self, folder: Path) -> None:
        """``folder``: where the users' files are (created, mode 0700, on the first write)."""
        self.folder = folder

    @classmethod
    def of(cls, config: HerdsmanConfig) -> SkillSecrets:
        """The secrets of ``config``'s home."""
        return cls(config.resolve_home() / SECRETS_DIR)

    def _file(self, user: str | None) -> Path:
        digest = hashlib.sha256((user or LOCAL_USER).encode()).hexdigest()[:32]
        return self.folder / f"{digest}.json"

    def load(self, user: str | None) -> dict[str, dict[str, str]]:
        """Every secret of ``user`` by skill (empty when none; an unreadable file is logged)."""
        path = self._file(user)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("skill_secrets_unreadable", file=str(path), error=type(exc).__name__)
            return {}
        if not isinstance(data, dict):
            return {}
        return {
            str(skill): {str(k): str(v) for k, v in values.items()}
            for skill, values in data.items()
            if isinstance(values, dict)
        }

    def has_any(self, user: str | None) -> bool:
        """Whether ``user`` set any secret (a cheap check before anything is parsed)."""
        return self._file(user).exists()

    def names(self, user: str | None) -> dict[str, list[str]]:
        """The variables ``user`` set, by skill: names only, never values."""
        return {skill: sorted(values) for skill, values in sorted(self.load(user).items()) if values}

    def values_for(self, user: str | None, skills: Iterable[str]) -> dict[str, str]:
        """The environment ``user``'s secrets give commands of ``skills`` (later skills win)."""
        stored = self.load(user)
        env: dict[str, str] = {}
        for name in skills:
            env.update(stored.get(name, {}))
        return env

    def set(self, user: str | None, skill: Skill, variable: str, value: str) -> None:
        """Keep ``value`` as ``user``'s ``variable`` for ``skill``, which must declare it."""
        if variable not in declared(skill):
            names = ", ".join(declared(skill)) or "none"
            raise SecretError(
                f"skill {skill.name!r} does not declare {variable!r} (it declares: {names}); add it to the "
                "skill's 'env:' in SKILL.md first"
            )
        if not value:
            raise SecretError(f"the value of {variable} is empty; to remove it, unset it instead")
        if len(value.encode()) > MAX_VALUE_BYTES or "\x00" in value:
            raise SecretError(f"the value of {variable} must be text of at most {MAX_VALUE_BYTES} bytes")
        self._change(user, skill.name, variable, value)

    def unset(self, user: str | None, skill: str, variable: str) -> bool:
        """Forget ``user``'s ``variable`` for ``skill``; False when it was not set."""
        if not NAME_RE.fullmatch(skill) or not ENV_NAME_RE.fullmatch(variable):
            return False
        return self._change(user, skill, variable, None)

    def _change(self, user: str | None, skill: str, variable: str, value: str | None) -> bool:
        with _LOCK:
            data = self.load(user)
            values = data.setdefault(skill, {})
            existed = variable in values
            if value is None:
                values.pop(variable, None)
            else:
                values[variable] = value
            data = {k: v for k, v in data.items() if v}
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(self.folder, 0o700)
            fd, tmp = tempfile.mkstemp(prefix=".secrets-", dir=self.folder)  # created 0600
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump(data, fh, indent=1, sort_keys=True)
                os.replace(tmp, self._file(user))
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        log.info("skill_secret_changed", skill=skill, variable=variable, removed=value is None)
        return existed or value is not None
