"""Skills under ``/api/skills``: list them, read one, switch one on or off, install one from a
``.skill`` archive or a Git URL, export one, and set the secrets a skill declares.

Switches made here are kept in ``<home>/skills_state.json`` (``herdsman.skills.switches``), so
they survive a restart and the CLI honours them too: every lead agent is built with
``skills.disabled`` as the switches make it (a switch wins over config.yaml for its skill).
After a switch the gateway builds the lead agent again (:meth:`Gateway.rebuild_agent`): runs
that start afterwards see the change; runs in progress finish with the skills they started with.

Public and shared custom skills are seen by every user of the gateway; any valid API key may
read them, only an admin key switch them. A user's own skills (``skills/users/<user>/``,
installed with ``POST /api/skills/install``) are listed, read and exported by that user only;
another user gets 404, as for a skill that does not exist. An install for everyone
(``shared=true``) needs an admin key; so does a Git URL other than ``https://``. Secrets
(``/api/skills/{name}/secrets/{VAR}``) are the caller's own, and no answer ever holds a value.
Paths are shown as the agent sees them (``/mnt/skills/...``), never as host paths.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, HTTPException

from herdsman.config.schema import HerdsmanConfig
from herdsman.logs import get_logger
from herdsman.sandbox.base import SKILLS_ROOT
from herdsman.skills import Skill, SkillCatalog, SkillError, load_skills, resolve_skills_root
from herdsman.skills.model import SKILL_FILE, USERS_FOLDER
from herdsman.skills.parse import NAME_RE
from herdsman.skills.secrets import SkillSecrets, declared
from herdsman.skills.switches import SkillSwitches, disabled_skills
from herdsman_gateway.auth import current_user, require_admin
from herdsman_gateway.container import Gateway, get_gateway

log = get_logger(__name__)

router = APIRouter(prefix="/api/skills", tags=["skills"], dependencies=[Depends(current_user)])


def _catalog(config: HerdsmanConfig, user: str | None = None) -> SkillCatalog:
    """Every skill of the skills folder (even when skills are off) and ``user``'s own, with the
    switches applied and required secrets counted as the lead agent counts them
    (:func:`~herdsman.skills.catalog.agent_skills`: the environment, or set by the local user)."""
    root = resolve_skills_root(config, when_disabled=True)
    return load_skills(root, disabled_skills(config), user=user, secrets=SkillSecrets.of(config).load(None))


def _status(catalog: SkillCatalog, skill: Skill) -> tuple[str, list[str]]:
    """What the agent makes of ``skill``, and why it cannot use it (if it cannot)."""
    if catalog.skills.get(skill.name) is skill:
        return "enabled", []
    if any(s is skill for s in catalog.overridden):
        return "overridden", [f"the custom skill {skill.name!r} replaces this public one"]
    if any(s is skill for s in catalog.disabled):
        return "disabled", []
    missing = catalog.unavailable.get(skill.name)
    if missing:
        return "unavailable", [
            f"needs the environment variable(s) {', '.join(missing)}; set them in the gateway's environment and "
            "restart it (or, on a gateway without API keys, with PUT /api/skills/{name}/secrets/{VAR})"
        ]
    return "disabled", []


def _skill_json(catalog: SkillCatalog, skill: Skill, off: set[str]) -> dict[str, Any]:
    status, problems = _status(catalog, skill)
    return {
        "name": skill.name,
        "description": skill.description,
        "source": skill.source,
        "enabled": skill.name not in off,
        "status": status,
        "path": skill.virtual_path,
        "license": skill.license,
        "allowed_tools": list(skill.allowed_tools) if skill.allowed_tools is not None else None,
        "examples": list(skill.examples),
        "problems": problems,
        "scope": "own" if skill.owner is not None else ("public" if skill.source == "public" else "shared"),
        "env": declared(skill),
    }


def _broken_json(error: SkillError, off: set[str]) -> dict[str, Any]:
    """A SKILL.md that does not parse, named by its folder."""
    folder = Path(error.file).parent
    own = folder.parent.parent.name == USERS_FOLDER
    source = "custom" if own else folder.parent.name
    place = f"{USERS_FOLDER}/{folder.parent.name}" if own else source
    problem = (
        f"{SKILL_FILE}: field {error.field!r}: {error.message}" if error.field else f"{SKILL_FILE}: {error.message}"
    )
    return {
        "name": folder.name,
        "description": "",
        "source": source,
        "enabled": folder.name not in off,
        "status": "invalid",
        "path": f"{SKILLS_ROOT}/{place}/{folder.name}/{SKILL_FILE}",
        "license": None,
        "allowed_tools": None,
        "examples": [],
        "problems": [problem + "; fix it, then check it with: herdsman skills validate"],
        "scope": "own" if own else ("public" if source == "public" else "shared"),
        "env": [],
    }


def list_skills(config: HerdsmanConfig, user: str | None = None) -> list[dict[str, Any]]:
    """Every skill ``user`` can see, usable or not, by name then source (broken ones with their problems)."""
    catalog = _catalog(config, user)
    off = set(SkillSwitches.of(config).disabled(config.skills.disabled))
    items = [_skill_json(catalog, s, off) for s in catalog.all_skills]
    items += [_broken_json(e, off) for e in catalog.problems]
    return sorted(items, key=lambda s: (s["name"], s["source"], s["scope"] == "own"))


def _check_name(name: str) -> None:
    if not NAME_RE.fullmatch(name):
        raise HTTPException(
            422,
            f"Invalid request: {name!r} is not a skill name; skill names are lowercase letters, digits and "
            "single hyphens, e.g. data-analysis",
        )


def find_skill(config: HerdsmanConfig, name: str, user: str | None = None) -> dict[str, Any]:
    """The entry of skill ``name`` as ``user`` sees it (the one that overrides the others); 404 if none."""
    _check_name(name)
    found = [s for s in list_skills(config, user) if s["name"] == name]
    if not found:
        raise HTTPException(404, f"No skill named {name!r}; list the skills with GET /api/skills")
    return next((s for s in found if s["status"] != "overridden"), found[0])


def _host_file(config: HerdsmanConfig, entry: dict[str, Any]) -> Path:
    root = resolve_skills_root(config, when_disabled=True)
    assert root is not None
    return root / entry["path"][len(SKILLS_ROOT) + 1 :]


@router.get("", summary="List the skills")
def get_skills(gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)) -> dict[str, Any]:
    """Every skill the caller can see with its source, scope (public, shared, own), switch,
    status, path and declared secrets; broken ones with their problems.

    ``skills_enabled`` is false when config.yaml turns all skills off (``skills.enabled``).
    """
    return {"skills": list_skills(gw.config, user), "skills_enabled": gw.config.skills.enabled}


@router.get("/{name}", summary="Get a skill and its SKILL.md")
def get_skill(
    name: str, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> dict[str, Any]:
    """One skill as listed, plus ``content``: the text of its SKILL.md."""
    entry = find_skill(gw.config, name, user)
    try:
        content = _host_file(gw.config, entry).read_text(encoding="utf-8", errors="replace")
    except OSError:
        content = ""
    return {**entry, "content": content}


async def _switch(gw: Gateway, name: str, enabled: bool) -> dict[str, Any]:
    """Record the switch, rebuild the lead agent, answer with the skill as it is now."""
    if not gw.config.skills.enabled:
        raise HTTPException(
            409,
            "Skills are off for the whole gateway (skills.enabled: false in config.yaml); set it to true "
            "and restart the gateway to switch single skills",
        )
    entry = await asyncio.to_thread(find_skill, gw.config, name)
    if enabled and entry["status"] == "invalid":
        raise HTTPException(
            409,
            f"Skill {name!r} cannot be enabled: {entry['problems'][0]}",
        )
    await asyncio.to_thread(SkillSwitches.of(gw.config).set, name, enabled)
    await gw.rebuild_agent()
    log.info("skill_switched", name=name, enabled=enabled)
    return await asyncio.to_thread(find_skill, gw.config, name)


@router.post("/{name}/enable", summary="Enable a skill (admin)", dependencies=[Depends(require_admin)])
async def enable_skill(name: str, gw: Gateway = Depends(get_gateway)) -> dict[str, Any]:
    """Switch the skill on, for the runs that start from now on (kept across restarts)."""
    return await _switch(gw, name, True)


@router.post("/{name}/disable", summary="Disable a skill (admin)", dependencies=[Depends(require_admin)])
async def disable_skill(name: str, gw: Gateway = Depends(get_gateway)) -> dict[str, Any]:
    """Switch the skill off, for the runs that start from now on (kept across restarts)."""
    return await _switch(gw, name, False)
