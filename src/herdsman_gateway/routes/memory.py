"""Long-term memory under ``/api/memory``: view, edit, delete and export what the agent remembers.

Facts (``/facts/{id}``), the graph (``/graph``, ``/entities/{id}``, ``/relations/{id}``: delete,
end one that stopped being true, or correct its predicate or object), the
audit trail (``/audit``), the user's off switch (``/settings``), and all of it at once: ``GET
/export`` and ``DELETE /api/memory`` (purge). Each user sees only their own memory: with API
keys, the user of the key; without, the configured ``memory.user_id``. The routes use the same store as the lead agent
(:func:`open_gateway_memory`, opened once by the app), so an edit is what the next run reads.
With ``memory.enabled: false`` every route answers 409 and says how to turn memory on.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Response
from langchain_core.language_models import BaseChatModel
from pydantic import ConfigDict, Field

from herdsman.config.schema import HerdsmanConfig
from herdsman.logs import get_logger
from herdsman.memory.audit import Origin, records
from herdsman.memory.facts import CATEGORIES, Fact, fact_id
from herdsman.memory.governance import EditRefused, correct_relation, end_relation, export_user, graph_json, purge_user
from herdsman.memory.graph import GraphStore
from herdsman.memory.service import MemoryService
from herdsman.memory.store import MemoryStore, user_label
from herdsman_gateway.auth import current_user
from herdsman_gateway.container import Gateway, get_gateway
from herdsman_gateway.schemas import StorableBody

log = get_logger(__name__)

router = APIRouter(prefix="/api/memory", tags=["memory"], dependencies=[Depends(current_user)])  # 401 before anything


def open_gateway_memory(config: HerdsmanConfig, model: BaseChatModel | None = None) -> MemoryService | None:
    """The memory the lead agent and these routes share; None when memory is off or cannot open.

    ``model`` stands in for the lead's configured model (tests), as in ``create_lead_agent``.
    """
    if not config.memory.enabled:
        return None
    from herdsman.agents.lead import open_memory
    from herdsman.models.resolver import ModelResolver

    lead = config.lead_model_name()
    resolver = ModelResolver(config, {lead: model} if model is not None else {})
    return open_memory(config, resolver, lead, None)


class FactPatch(StorableBody):
    """A change to one fact: new text, new category, or both."""

    model_config = ConfigDict(extra="forbid")

    content: str | None = Field(None, min_length=3, description="The new text of the fact (its id changes).")
    category: str | None = Field(None, description=f"One of: {', '.join(CATEGORIES)}.")


class MemorySettings(StorableBody):
    """The user's own memory settings."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        description="false: nothing is learned about you, injected or looked up until you turn it on."
    )


class RelationPatch(StorableBody):
    """A correction of one relation: it stopped being true at ``valid_to``, or it was wrong and is
    really ``predicate`` and/or ``object``."""

    model_config = ConfigDict(extra="forbid")

    valid_to: str | None = Field(
        None, description="When it stopped being true: an ISO date or date-time, e.g. 2026-03-01."
    )
    predicate: str | None = Field(None, description="What it really is, e.g. deploys_to (it was wrong).")
    object: str | None = Field(None, description="The entity it really names, e.g. GCP (it was wrong).")


API = Origin("api")


def memory_service(gw: Gateway = Depends(get_gateway)) -> MemoryService:
    """The memory service, or 409 (memory off) / 503 (store not open) with what to do."""
    if not gw.config.memory.enabled:
        raise HTTPException(
            409,
            "Memory is off (memory.enabled: false in config.yaml); set memory.enabled: true and restart the "
            "gateway to keep and manage long-term memory",
        )
    if gw.memory is None:
        raise HTTPException(
            503,
            "The memory store could not be opened; check memory.path (or memory.url) in config.yaml and the "
            "gateway log, then restart the gateway",
        )
    return gw.memory


def memory_store(service: MemoryService = Depends(memory_service)) -> MemoryStore:
    """The memory store (see :func:`memory_service` for the errors)."""
    return service.store


async def memory_user(gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)) -> str:
    """Whose memory: the API key's user, or ``memory.user_id`` when auth is off."""
    return user or gw.config.memory.user_id


def fact_json(fact: Fact) -> dict[str, Any]:
    """A fact as the API shows it."""
    return {"id": fact.id, **fact.to_value()}


def _not_found(fid: str) -> HTTPException:
    return HTTPException(404, f"No fact {fid!r} in your memory; list the facts and their ids with GET /api/memory")


@router.get("", summary="View your memory")
def get_memory(store: MemoryStore = Depends(memory_store), user: str = Depends(memory_user)) -> dict[str, Any]:
    """Your context summary and facts, most confident first, and whether your memory is on."""
    return {
        "user_id": user,
        "enabled": store.enabled_for(user),
        "summary": store.summary(user),
        "facts": [fact_json(f) for f in store.facts(user)],
    }


@router.delete("", status_code=204, response_class=Response, summary="Purge your memory")
def purge_memory(service: MemoryService = Depends(memory_service), user: str = Depends(memory_user)) -> Response:
    """Delete everything memory keeps about you: summary, facts, graph, audit trail, and your turns
    still waiting to be learned. Your off switch stays as it is."""
    purge_user(service.store, service.queue, user)
    return Response(status_code=204)


@router.get("/settings", summary="Your memory settings")
def get_settings(store: MemoryStore = Depends(memory_store), user: str = Depends(memory_user)) -> dict[str, Any]:
    """``{"enabled": ...}``: whether memory is on for you."""
    return {"enabled": store.enabled_for(user)}


@router.put("/settings", summary="Turn your memory on or off")
def put_settings(
    body: MemorySettings, store: MemoryStore = Depends(memory_store), user: str = Depends(memory_user)
) -> dict[str, Any]:
    """Off: nothing new is learned, injected or looked up; what is kept stays (purge it with DELETE /api/memory)."""
    store.set_enabled(user, body.enabled)
    log.info("memory_switched", user_id=user, enabled=body.enabled)
    return {"enabled": body.enabled}


@router.get("/graph", summary="Your entities and relations")
def get_graph(store: MemoryStore = Depends(memory_store), user: str = Depends(memory_user)) -> dict[str, Any]:
    """Entities by name; relations newest first, open (``valid_to`` null) and closed (history)."""
    return graph_json(store, user)


@router.delete("/entities/{eid}", status_code=204, response_class=Response, summary="Delete an entity")
def delete_entity(eid: str, store: MemoryStore = Depends(memory_store), user: str = Depends(memory_user)) -> Response:
    """Forget an entity and every relation that names it."""
    if not GraphStore(store.store).delete_entity(user, eid, API):
        raise HTTPException(404, f"No entity {eid!r} in your memory; list them with GET /api/memory/graph")
    return Response(status_code=204)


@router.delete("/relations/{rid}", status_code=204, response_class=Response, summary="Delete a relation")
def delete_relation(rid: str, store: MemoryStore = Depends(memory_store), user: str = Depends(memory_user)) -> Response:
    """Forget one relation (open or closed)."""
    if not GraphStore(store.store).delete_relation(user, rid, API):
        raise HTTPException(404, f"No relation {rid!r} in your memory; list them with GET /api/memory/graph")
    return Response(status_code=204)


def _refused(exc: EditRefused) -> HTTPException:
    """A refused edit as the answer: 409 when the relation's state forbids it, else 422 naming the field."""
    return (
        HTTPException(409, exc.message)
        if exc.conflict
        else HTTPException(422, f"Invalid request: {exc.field} {exc.message}")
    )


@router.patch("/relations/{rid}", summary="End or correct a relation")
def patch_relation(
    rid: str, body: RelationPatch, store: MemoryStore = Depends(memory_store), user: str = Depends(memory_user)
) -> dict[str, Any]:
    """Say a relation stopped being true (``valid_to``: it stays as history), or correct it
    (``predicate`` and/or ``object``: it was wrong; it gets a new id, answered)."""
    relation = GraphStore(store.store).get_relation(user, rid)
    if relation is None:
        raise HTTPException(404, f"No relation {rid!r} in your memory; list them with GET /api/memory/graph")
    if body.valid_to is None and body.predicate is None and body.object is None:
        raise HTTPException(
            422,
            "Invalid request: send valid_to (it stopped being true, e.g. 2026-03-01), or object "
            'and/or predicate (it was wrong, e.g. {"object": "GCP"})',
        )
    if body.valid_to is not None and (body.predicate is not None or body.object is not None):
        raise HTTPException(
            422,
            "Invalid request: send either valid_to (it stopped being true) or object/predicate "
            "(it was wrong), not both; correct it first, then end it",
        )
    try:
        if body.valid_to is None:
            changed = correct_relation(store, user, relation, API, predicate=body.predicate, obj=body.object)
            log.info("memory_relation_corrected", user_id=user, relation_id=rid, new_id=changed.id)
        else:
            changed = end_relation(store, user, relation, body.valid_to, API)
    except EditRefused as exc:
        raise _refused(exc) from None
    return next(r for r in graph_json(store, user)["relations"] if r["id"] == changed.id)


@router.get("/audit", summary="Where your memory came from")
def get_audit(store: MemoryStore = Depends(memory_store), user: str = Depends(memory_user)) -> dict[str, Any]:
    """Every write to your memory, oldest first: what (kind, id), how (action, origin), from which thread and run."""
    return {"records": records(store.store, user_label(user))}


@router.patch("/facts/{fid}", summary="Edit a fact")
def patch_fact(
    fid: str, body: FactPatch, store: MemoryStore = Depends(memory_store), user: str = Depends(memory_user)
) -> dict[str, Any]:
    """Change a fact's text and/or category. New text gives the fact a new id (answered)."""
    if body.content is None and body.category is None:
        raise HTTPException(422, "Invalid request: nothing to change; send content, category or both")
    if body.category is not None and body.category not in CATEGORIES:
        raise HTTPException(
            422, f"Invalid request: category {body.category!r} is unknown; use one of {', '.join(CATEGORIES)}"
        )
    old = store.get(user, fid)
    if old is None:
        raise _not_found(fid)
    if body.content is not None:
        new_id = fact_id(body.content)
        if new_id != fid and store.get(user, new_id) is not None:
            raise HTTPException(
                409,
                f"Fact {new_id!r} already says this; delete one of the two facts instead of making them the same",
            )
    fact = store.update(user, fid, content=body.content, category=body.category)
    if fact is None:  # deleted meanwhile
        raise _not_found(fid)
    log.info("memory_fact_edited", user_id=user, fact_id=fid, new_id=fact.id)
    return fact_json(fact)


@router.delete("/facts/{fid}", status_code=204, response_class=Response, summary="Delete a fact")
def delete_fact(fid: str, store: MemoryStore = Depends(memory_store), user: str = Depends(memory_user)) -> Response:
    """Forget one fact."""
    if not store.delete(user, fid):
        raise _not_found(fid)
    log.info("memory_fact_deleted", user_id=user, fact_id=fid)
    return Response(status_code=204)


@router.get(
    "/export",
    summary="Export your memory as JSON",
    response_class=Response,
    responses={200: {"content": {"application/json": {}}}},
)
def export_memory(service: MemoryService = Depends(memory_service), user: str = Depends(memory_user)) -> Response:
    """A JSON download ``{user_id: {enabled, summary, facts, entities, relations, audit}}``, the shape
    ``herdsman memory export`` writes; nothing past ``memory.retention_days`` is in it."""
    data = {user: export_user(service.store, user, service.config)}
    return Response(
        json.dumps(data, indent=2, ensure_ascii=False) + "\n",
        media_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="herdsman-memory-{user}.json"'},
    )
