"""Find, read and validate ``config.yaml``.

Lookup order: an explicit path (``--config``), ``$HERDSMAN_CONFIG``, ``./config.yaml``,
``~/.herdsman/config.yaml``, else the built-in defaults. ``$VAR`` and ``${VAR}`` in string
values are replaced from the environment, then from a ``.env`` file beside the config file
(python-dotenv's format; the environment wins, as with ``load_dotenv``); an unset variable is an
error naming it and its YAML path. Every problem is reported with its YAML path and a fix, all
at once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from dotenv import dotenv_values
from pydantic import ValidationError

from herdsman.config.schema import HerdsmanConfig

ENV_CONFIG = "HERDSMAN_CONFIG"
ENV_FILE = ".env"
_VAR = re.compile(r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)\}|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))")


@dataclass(frozen=True)
class ConfigProblem:
    """One thing wrong with a config file: where (YAML path), what, and what to do."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path or '<root>'}: {self.message}"


@dataclass
class ConfigError(Exception):
    """A config file that cannot be used. ``problems`` lists every issue found."""

    source: str
    problems: list[ConfigProblem] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"{self.source}: {len(self.problems)} problem(s) in the configuration"]
        lines += [f"  - {p}" for p in self.problems]
        return "\n".join(lines)


@dataclass(frozen=True)
class LoadedConfig:
    """A validated config and where it came from (a file path, or ``None`` for defaults)."""

    config: HerdsmanConfig
    source: Path | None

    @property
    def base_dir(self) -> Path:
        """The folder relative paths in the config are taken from (the cwd for defaults)."""
        return self.source.parent if self.source else Path.cwd()


def find_config_file(explicit: str | Path | None = None, env: Mapping[str, str] | None = None) -> Path | None:
    """The config file to use, by the lookup order above; ``None`` means built-in defaults.

    An explicit path or ``$HERDSMAN_CONFIG`` that does not exist is an error, not a fallback.
    """
    env = os.environ if env is None else env
    for origin, candidate in (("--config", explicit), (ENV_CONFIG, env.get(ENV_CONFIG))):
        if candidate:
            path = Path(candidate).expanduser()
            if not path.is_file():
                raise ConfigError(
                    str(path),
                    [ConfigProblem("", f"{origin} names {path}, which is not a file; fix the path or unset it")],
                )
            return path
    for path in (Path.cwd() / "config.yaml", Path.home() / ".herdsman" / "config.yaml"):
        if path.is_file():
            return path
    return None


def substitute_env(data: Any, env: Mapping[str, str], where: str = "") -> tuple[Any, list[ConfigProblem]]:
    """Replace ``$VAR`` / ``${VAR}`` in every string of ``data``; ``$$`` is a literal ``$``.

    Returns the new data and a problem for each unset variable.
    """
    problems: list[ConfigProblem] = []
    if isinstance(data, dict):
        out: dict[Any, Any] = {}
        for key, value in data.items():
            out[key], sub = substitute_env(value, env, _join(where, key))
            problems += sub
        return out, problems
    if isinstance(data, list):
        items = []
        for i, value in enumerate(data):
            item, sub = substitute_env(value, env, _join(where, i))
            items.append(item)
            problems += sub
        return items, problems
    if not isinstance(data, str) or "$" not in data:
        return data, problems

    def repl(match: re.Match[str]) -> str:
        name = match.group("braced") or match.group("bare")
        if name not in env:
            problems.append(
                ConfigProblem(where, f"environment variable ${name} is not set; export {name}=... or remove it")
            )
            return ""
        return env[name]

    parts = data.split("$$")
    return "$".join(_VAR.sub(repl, part) for part in parts), problems


def parse_config(text: str, source: str = "<config>", env: Mapping[str, str] | None = None) -> HerdsmanConfig:
    """Parse YAML text into a validated :class:`HerdsmanConfig`, or raise :class:`ConfigError`."""
    env = os.environ if env is None else env
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        reason = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(source, [ConfigProblem("", f"malformed YAML at {where}: {reason}; fix the syntax")]) from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(
            source, [ConfigProblem("", f"the top level must be a mapping of sections, not a {type(raw).__name__}")]
        )
    data, problems = substitute_env(raw, env)
    config: HerdsmanConfig | None = None
    try:
        config = HerdsmanConfig.model_validate(data)
    except ValidationError as exc:
        problems += [_problem_from_pydantic(err) for err in exc.errors()]
    if problems:
        raise ConfigError(source, problems)
    assert config is not None
    return config


def env_file_values(config_path: Path) -> dict[str, str]:
    """The variables of the ``.env`` file beside ``config_path`` (none when there is no file).

    Values are taken literally (no ``${VAR}`` expansion inside ``.env``): a secret may hold a ``$``.
    """
    path = config_path.parent / ENV_FILE
    if not path.is_file():
        return {}
    try:
        values = dotenv_values(path, interpolate=False, encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(str(path), [ConfigProblem("", f"cannot read the file: {exc}")]) from None
    return {key: value for key, value in values.items() if value is not None}


def load_config(explicit: str | Path | None = None, env: Mapping[str, str] | None = None) -> LoadedConfig:
    """Find and load the config by the lookup order; defaults when there is no file.

    ``$VAR`` comes from ``env`` (default the environment), else from the ``.env`` beside the file.
    """
    path = find_config_file(explicit, env)
    if path is None:
        return LoadedConfig(HerdsmanConfig(), None)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(str(path), [ConfigProblem("", f"cannot read the file: {exc}")]) from None
    config = parse_config(text, str(path), {**env_file_values(path), **(os.environ if env is None else env)})
    # Relative paths in a config file are relative to the file, not the cwd.
    if not config.home.is_absolute() and not str(config.home).startswith("~"):
        config = config.model_copy(update={"home": path.parent.resolve() / config.home})
    return LoadedConfig(config, path)


def _join(where: str, key: Any) -> str:
    return f"{where}.{key}" if where else str(key)


_HINTS = {
    "extra_forbidden": "unknown key; check the spelling against config.example.yaml",
    "missing": "required key is missing; add it",
}


def _problem_from_pydantic(err: Mapping[str, Any]) -> ConfigProblem:
    loc = ".".join(str(part) for part in err.get("loc", ()))
    kind = err.get("type", "")
    msg = str(err.get("msg", "invalid value"))
    if kind in _HINTS:
        msg = _HINTS[kind]
    elif kind == "literal_error":
        msg = f"{msg}; got {err.get('input')!r}"
    elif msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    return ConfigProblem(loc, msg)
