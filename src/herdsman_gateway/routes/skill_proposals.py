"""Skills proposed from the caller's runs that worked, under ``/api/skills/proposals``
(``skills.learning``; :mod:`herdsman.skills.learning`).

- ``GET /api/skills/proposals``: the caller's proposals, newest first, and whether learning is on;
- ``GET /api/skills/proposals/{name}``: one, with its files (SKILL.md and scripts) to review;
- ``POST /api/skills/proposals/{name}/accept``: install it as the caller's own skill; JSON
  ``{"content": "<edited SKILL.md>"}`` accepts an edited one (checked again), ``replace: true``
  replaces an own skill of the same name;
- ``POST /api/skills/proposals/{name}/decline``: forget it.

Proposals are the caller's only: another user's name answers 404, as one that does not exist.
A proposal is never installed but by its user's accept. Paths are shown as the agent sees them.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Depends, HTTPException
from pydantic import Field

from herdsman import pools
from herdsman.skills.archive import PackageError
from herdsman.skills.install import SkillExistsError
from herdsman.skills.learning.store import ProposalError, ProposalNotFoundError, ProposalStore
from herdsman.skills.model import SkillError
from herdsman_gateway.auth import current_user
from herdsman_gateway.container import Gateway, get_gateway
from herdsman_gateway.routes.skills import find_skill
from herdsman_gateway.schemas import StorableBody

router = APIRouter(prefix="/api/skills/proposals", tags=["skills"], dependencies=[Depends(current_user)])


class Accept(StorableBody):
    """How to accept a proposal (refused whole, as any body, when it holds what cannot be stored)."""

    content: str | None = Field(
        None, max_length=256 * 1024, description="An edited SKILL.md; default the proposed one."
    )
    replace: bool = Field(False, description="Replace your own skill of the same name.")


def _store(gw: Gateway) -> ProposalStore:
    return ProposalStore.of(gw.config)


def _not_found(exc: ProposalError) -> HTTPException:
    return HTTPException(404, f"{exc}; GET /api/skills/proposals lists yours")


@router.get("", summary="List your skill proposals")
async def list_proposals(
    gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> dict[str, Any]:
    """The caller's proposals, newest first; ``learning_enabled`` says whether runs propose any."""
    found = await pools.run(pools.FILES, user, _store(gw).list, user)
    return {"proposals": [p.summary() for p in found], "learning_enabled": gw.config.skills.learning.enabled}


@router.get("/{name}", summary="Get a skill proposal and its files")
async def get_proposal(
    name: str, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> dict[str, Any]:
    """One proposal with ``files``: relative path -> text (SKILL.md first, then its scripts)."""
    store = _store(gw)
    try:
        proposal = await pools.run(pools.FILES, user, store.get, user, name)
        files = await pools.run(pools.FILES, user, proposal.files)
    except ProposalNotFoundError as exc:
        raise _not_found(exc) from None
    return {**proposal.summary(), "files": files}


@router.post("/{name}/accept", summary="Accept a skill proposal (optionally edited)", status_code=201)
async def accept_proposal(
    name: str,
    body: Accept | None = None,
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> dict[str, Any]:
    """Install the proposal as the caller's own skill (the local user's: for everyone), checked
    as any install is; 422 with the reason when it is refused, 409 when the name is taken."""
    body = body or Accept()
    try:
        done = await pools.run(
            pools.CONVERSIONS, user, _store(gw).accept, user, name, body.content, replace=body.replace
        )
    except ProposalNotFoundError as exc:
        raise _not_found(exc) from None
    except SkillExistsError as exc:
        raise HTTPException(409, f"{exc}; or edit the proposal's name") from None
    except (ProposalError, PackageError, SkillError) as exc:
        raise HTTPException(422, f"The proposal was refused: {exc}; nothing was installed") from None
    if user is None:
        await gw.rebuild_agent()  # a skill for everyone: runs that start from now on list it
    entry = await asyncio.to_thread(find_skill, gw.config, done.skill.name, user)
    return {"skill": entry, "replaced": done.replaced, "files": done.files}


@router.post("/{name}/decline", summary="Decline a skill proposal")
async def decline_proposal(
    name: str, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> dict[str, Any]:
    """Forget the proposal; nothing is installed."""
    try:
        await pools.run(pools.FILES, user, _store(gw).decline, user, name)
    except ProposalNotFoundError as exc:
        raise _not_found(exc) from None
    return {"declined": name}
