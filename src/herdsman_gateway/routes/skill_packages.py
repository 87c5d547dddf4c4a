"""Installing, exporting and configuring skills under ``/api/skills``.

- ``POST /api/skills/install``: a ``.skill`` archive as ``multipart/form-data`` (one file in the
  ``files`` field; what the web UI sends), or JSON ``{"url": "https://..."}`` for a Git
  repository. Query (or JSON) ``replace=true`` replaces a skill of the same name; ``shared=true``
  installs for every user and needs an admin key. Otherwise the skill is the caller's own
  (``skills/users/<user>/``); with auth off the one local user installs for everyone. The
  package is checked completely before anything is written (:mod:`herdsman.skills.install`);
  a refused one answers 422 (409 for a name that is taken) and leaves nothing behind.
- ``GET /api/skills/{name}/export``: the skill as a ``.skill`` archive (a zip of its folder).
- ``GET /api/skills/{name}/secrets``; ``PUT`` / ``DELETE /api/skills/{name}/secrets/{VAR}``
  (``{"value": ...}``): the caller's own values of the variables the skill declares; answers
  name the variables that are set, never a value.

Git URLs: a user key may give ``https://`` only (no ``file://`` into the gateway's disk, no
``ssh`` with the gateway's keys); an admin key any protocol git knows.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import FileResponse
from pydantic import BaseModel, Field
from starlette.background import BackgroundTask

from herdsman import pools
from herdsman.config.schema import HerdsmanConfig
from herdsman.logs import get_logger
from herdsman.skills import Skill, SkillError, load_skills, resolve_skills_root
from herdsman.skills.archive import ARCHIVE_SUFFIX, PackageError, PackageLimits
from herdsman.skills.install import ALL_GIT_PROTOCOLS, SkillExistsError, export_skill, install_skill, is_git_url
from herdsman.skills.secrets import SecretError, SkillSecrets, declared
from herdsman_gateway.auth import current_user, identify
from herdsman_gateway.container import Gateway, get_gateway
from herdsman_gateway.routes.skills import find_skill
from herdsman_gateway.routes.uploads import MULTIPART_SCHEMA, staged_upload

log = get_logger(__name__)

router = APIRouter(prefix="/api/skills", tags=["skills"], dependencies=[Depends(current_user)])
USER_GIT_PROTOCOLS = ("https",)


class GitInstall(BaseModel):
    """Install from a Git repository."""

    url: str = Field(
        ..., min_length=1, max_length=2000, description="The repository, e.g. https://host/owner/skill.git"
    )
    replace: bool = Field(False, description="Replace a skill of the same name.")
    shared: bool = Field(False, description="Install for every user (admin key only).")


class SecretValue(BaseModel):
    """The value of one secret (never sent back)."""

    value: str = Field(..., min_length=1, max_length=16384)


def _root(config: HerdsmanConfig) -> Path:
    root = resolve_skills_root(config, when_disabled=True)
    assert root is not None
    return root


def _skill(config: HerdsmanConfig, name: str, user: str | None) -> Skill:
    """The parsed skill ``name`` as ``user`` sees it; 404 when there is none."""
    entry = find_skill(config, name, user)
    found = [s for s in load_skills(_root(config), user=user).all_skills if s.virtual_path == entry["path"]]
    if not found:
        raise HTTPException(409, f"Skill {name!r} is invalid: {entry['problems'][0] if entry['problems'] else ''}")
    return found[0]


async def _install(
    gw: Gateway, request: Request, source: str, replace: bool, shared: bool, protocols: tuple[str, ...]
) -> dict[str, Any]:
    caller = identify(request)
    if shared and caller.role != "admin":
        raise HTTPException(
            403,
            "Installing a skill for every user needs an admin key; leave out shared=true to install it for yourself",
        )
    owner = None if shared else caller.user
    try:
        done = await pools.run(
            pools.CONVERSIONS,
            caller.user,
            install_skill,
            source,
            _root(gw.config),
            user=owner,
            replace=replace,
            git_protocols=protocols,
        )
    except SkillExistsError as exc:
        raise HTTPException(409, f"{exc}; nothing was installed") from None
    except (PackageError, SkillError) as exc:
        raise HTTPException(422, f"The skill was refused: {exc}; nothing was installed") from None
    if owner is None:
        await gw.rebuild_agent()  # runs that start from now on see it
    entry = await asyncio.to_thread(find_skill, gw.config, done.skill.name, caller.user)
    return {"skill": entry, "replaced": done.replaced, "files": done.files}


@router.post(
    "/install", summary="Install a skill (.skill archive or Git URL)", status_code=201, openapi_extra=MULTIPART_SCHEMA
)
async def install(
    request: Request, replace: bool = False, shared: bool = False, gw: Gateway = Depends(get_gateway)
) -> dict[str, Any]:
    """Install from an uploaded ``.skill`` archive (multipart ``files``) or JSON ``{"url": ...}``."""
    caller = identify(request)
    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            body = GitInstall.model_validate_json(await request.body())
        except ValueError as exc:
            raise HTTPException(422, f'Invalid request: send {{"url": "https://..."}} ({exc})') from None
        if not is_git_url(body.url):
            raise HTTPException(
                422,
                "Invalid request: 'url' must be a Git URL such as https://host/owner/skill.git; "
                "upload a .skill archive as multipart/form-data instead of naming a path",
            )
        protocols = ALL_GIT_PROTOCOLS if caller.role == "admin" else USER_GIT_PROTOCOLS
        return await _install(gw, request, body.url, body.replace or replace, body.shared or shared, protocols)
    limit = PackageLimits().max_archive_bytes + 1024 * 1024  # the form's framing on top
    async with staged_upload(request, None, limit, 1, caller.user) as files:
        _, archive = files[0]
        return await _install(gw, request, str(archive), replace, shared, ())


@router.get("/{name}/export", summary="Download a skill as a .skill archive")
async def export(
    name: str, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> FileResponse:
    """The skill's folder as a zip that ``POST /api/skills/install`` and ``herdsman skills install`` take."""
    skill = await asyncio.to_thread(_skill, gw.config, name, user)
    fd, tmp = tempfile.mkstemp(prefix="herdsman-export-", suffix=ARCHIVE_SUFFIX)
    os.close(fd)
    try:
        await pools.run(pools.FILES, user, export_skill, skill, Path(tmp))
    except (PackageError, OSError) as exc:
        Path(tmp).unlink(missing_ok=True)
        raise HTTPException(409, f"Skill {name!r} cannot be exported: {exc}") from None
    return FileResponse(
        tmp,
        media_type="application/zip",
        filename=f"{skill.name}{ARCHIVE_SUFFIX}",
        background=BackgroundTask(os.unlink, tmp),
    )


def _secrets_json(gw: Gateway, skill: Skill, user: str | None) -> dict[str, Any]:
    stored = SkillSecrets.of(gw.config).names(user).get(skill.name, [])
    return {"skill": skill.name, "declared": declared(skill), "set": stored}


@router.get("/{name}/secrets", summary="The caller's secrets of a skill (names only)")
async def get_secrets(
    name: str, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> dict[str, Any]:
    """The variables the skill declares and those the caller set (no values)."""
    skill = await asyncio.to_thread(_skill, gw.config, name, user)
    return _secrets_json(gw, skill, user)


@router.put("/{name}/secrets/{variable}", summary="Set one of the caller's secrets of a skill")
async def put_secret(
    name: str,
    variable: str,
    body: SecretValue,
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> dict[str, Any]:
    """Keep the value for the caller; the skill's commands get it as an environment variable."""
    skill = await asyncio.to_thread(_skill, gw.config, name, user)
    try:
        await pools.run(pools.FILES, user, SkillSecrets.of(gw.config).set, user, skill, variable, body.value)
    except SecretError as exc:
        raise HTTPException(422, f"Invalid request: {exc}") from None
    await _required_changed(gw, skill, user)
    return _secrets_json(gw, skill, user)


async def _required_changed(gw: Gateway, skill: Skill, user: str | None) -> None:
    """The local user's required secret changed: the lead agent counts it (agent_skills), so rebuild it."""
    if user is None and skill.required_secrets:
        await gw.rebuild_agent()


@router.delete("/{name}/secrets/{variable}", summary="Remove one of the caller's secrets of a skill")
async def delete_secret(
    name: str, variable: str, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> dict[str, Any]:
    """Forget the value; 404 when it was not set."""
    skill = await asyncio.to_thread(_skill, gw.config, name, user)
    if not await pools.run(pools.FILES, user, SkillSecrets.of(gw.config).unset, user, skill.name, variable):
        raise HTTPException(
            404, f"{variable} is not set for {name!r}; set it with PUT /api/skills/{name}/secrets/{variable}"
        )
    await _required_changed(gw, skill, user)
    return _secrets_json(gw, skill, user)
