"""Find the skills under the skills folder: public ones, then custom ones that override them,
then (for one user) that user's own ones under ``users/<user>/``, which override both.

A broken SKILL.md never stops the agent: it is left out and reported in
:attr:`SkillCatalog.problems` (logged, and shown by ``herdsman skills list`` / ``validate``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from herdsman.config.schema import HerdsmanConfig
from herdsman.logs import get_logger
from herdsman.skills.model import SKILL_FILE, USER_PREFIX, USERS_FOLDER, Skill, SkillError, Source
from herdsman.skills.parse import parse_skill_file
from herdsman.skills.secrets import SkillSecrets
from herdsman.skills.switches import disabled_skills

log = get_logger(__name__)

SOURCES: tuple[Source, ...] = ("public", "custom")


@dataclass
class SkillCatalog:
    """The skills found under one folder, resolved by name.

    ``skills`` holds the usable ones (enabled, secrets present), custom before public of the same
    name. ``overridden`` lists public skills hidden by a custom one, ``disabled`` and
    ``unavailable`` (name -> missing secrets) the ones left out, ``problems`` the broken files.
    """

    root: Path | None
    skills: dict[str, Skill] = field(default_factory=dict)
    overridden: list[Skill] = field(default_factory=list)
    disabled: list[Skill] = field(default_factory=list)
    unavailable: dict[str, list[str]] = field(default_factory=dict)
    problems: list[SkillError] = field(default_factory=list)
    all_skills: list[Skill] = field(default_factory=list)

    def get(self, name: str) -> Skill | None:
        """The usable skill called ``name``, or None."""
        return self.skills.get(name)

    def __len__(self) -> int:
        return len(self.skills)

    def reasons(self) -> dict[str, str]:
        """Why each known skill that cannot be used is left out, by name."""
        why = {s.name: "it is turned off in config.yaml (skills.disabled)" for s in self.disabled}
        for name, missing in self.unavailable.items():
            why[name] = f"it needs the environment variable(s) {', '.join(missing)}, which are not set"
        return why

    def sorted(self) -> list[Skill]:
        """The usable skills by name."""
        return [self.skills[n] for n in sorted(self.skills)]


def resolve_skills_root(config: HerdsmanConfig, *, when_disabled: bool = False) -> Path | None:
    """The skills folder of ``config`` (relative to the cwd, like the sandbox mount).

    None when skills are off, unless ``when_disabled`` (the CLI still shows them).
    """
    if not config.skills.enabled and not when_disabled:
        return None
    root = config.skills.path.expanduser()
    return root if root.is_absolute() else Path.cwd() / root


def _shown(root: Path, directory: Path) -> str:
    try:
        return str(directory.relative_to(Path.cwd()) / SKILL_FILE)
    except ValueError:
        return str(directory / SKILL_FILE)


def user_folder(root: Path, user: str) -> Path:
    """The folder of ``user``'s own skills: ``<root>/users/<user>``."""
    return root / USERS_FOLDER / user


def _folders(base: Path) -> list[Path]:
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith((".", "_", USER_PREFIX)))


def load_skills(
    root: Path | None,
    disabled: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
    user: str | None = None,
    secrets: Mapping[str, Mapping[str, str]] | None = None,
) -> SkillCatalog:
    """Discover and parse every skill under ``root`` (and ``user``'s own, when given); never
    raises for a bad skill. A required secret is present when ``environ`` (default the
    process's) has it, or ``secrets`` (skill -> variable -> value, a user's
    :class:`~herdsman.skills.secrets.SkillSecrets`) has it for that skill."""
    catalog = SkillCatalog(root=root)
    if root is None or not root.is_dir():
        return catalog
    off = set(disabled)
    env = dict(os.environ if environ is None else environ)
    found: dict[str, Skill] = {}
    places: list[tuple[Source, Path, str | None]] = [(source, root / source, None) for source in SOURCES]
    if user is not None:
        places.append(("custom", user_folder(root, user), user))
    for source, base, owner in places:
        for directory in _folders(base):
            try:
                skill = parse_skill_file(directory, source, shown=_shown(root, directory), owner=owner)
            except SkillError as exc:
                catalog.problems.append(exc)
                log.warning("skill_invalid", error=str(exc))
                continue
            catalog.all_skills.append(skill)
            previous = found.get(skill.name)
            if previous is not None:
                catalog.overridden.append(previous)
                log.info("skill_overridden", name=skill.name, by=skill.source, own=owner is not None)
            found[skill.name] = skill
    for name, skill in found.items():
        missing = skill.missing_secrets({**env, **(secrets or {}).get(name, {})})
        if name in off:
            catalog.disabled.append(skill)
        elif missing:
            catalog.unavailable[name] = missing
            log.warning("skill_unavailable", name=name, missing_secrets=missing)
        else:
            catalog.skills[name] = skill
    return catalog


def agent_skills(config: HerdsmanConfig) -> SkillCatalog:
    """The skills an agent built from ``config`` offers: config.yaml's ``skills.disabled`` with
    the switches applied; a required secret counts when the environment has it or the local
    user set it (``herdsman skills secret set``)."""
    return load_skills(resolve_skills_root(config), disabled_skills(config), secrets=SkillSecrets.of(config).load(None))
