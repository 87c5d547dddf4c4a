"""Assistants: the one graph Herdsman serves, ``lead_agent``, seen as a LangGraph assistant.

Its id and graph id are both ``lead_agent``; runs accept either name.
"""

from __future__ import annotations

from typing import Any

import structlog
from fastapi import APIRouter, Depends, HTTPException
from pydantic import TypeAdapter

from herdsman.agents.lead import LEAD_AGENT_NAME
from herdsman_gateway.auth import current_user
from herdsman_gateway.context import Gateway, get_gateway
from herdsman_gateway.schemas import Assistant, AssistantCount, AssistantSearch

router = APIRouter(tags=["assistants"], dependencies=[Depends(current_user)])
log = structlog.get_logger(__name__)

CREATED_AT = "2026-01-01T00:00:00+00:00"
CONFIG_SCHEMA = {
    "title": "Config",
    "type": "object",
    "properties": {"configurable": {"type": "object", "description": "Passed to the graph as config['configurable']."}},
}


def check_assistant(assistant_id: str) -> str:
    """``assistant_id`` when it names the lead agent, else 404."""
    if assistant_id != LEAD_AGENT_NAME:
        raise HTTPException(404, f"Assistant {assistant_id!r} not found; this server has one assistant: {LEAD_AGENT_NAME!r}")
    return assistant_id


def assistant_json() -> dict[str, Any]:
    """The lead agent as a LangGraph ``Assistant``."""
    return {
        "assistant_id": LEAD_AGENT_NAME,
        "graph_id": LEAD_AGENT_NAME,
        "config": {},
        "context": {},
        "created_at": CREATED_AT,
        "updated_at": CREATED_AT,
        "metadata": {"created_by": "system"},
        "version": 1,
        "name": LEAD_AGENT_NAME,
        "description": "Herdsman's lead agent: plans, delegates to sub-agents and works in a sandbox.",
    }


@router.post("/assistants/search", response_model=list[Assistant], summary="Search assistants")
async def search_assistants(body: AssistantSearch) -> Any:
    """The assistants matching the filters (at most the lead agent)."""
    item = assistant_json()
    matches = (
        (body.graph_id in (None, LEAD_AGENT_NAME))
        and (body.name is None or body.name.lower() in LEAD_AGENT_NAME)
        and all(item["metadata"].get(k) == v for k, v in (body.metadata or {}).items())
    )
    return [item][body.offset : body.offset + body.limit] if matches else []


@router.post("/assistants/count", response_model=int, summary="Count assistants")
async def count_assistants(body: AssistantCount) -> int:
    """How many assistants match the filters (0 or 1)."""
    return len(await search_assistants(AssistantSearch(graph_id=body.graph_id, metadata=body.metadata, name=body.name)))


@router.get("/assistants/{assistant_id}", response_model=Assistant, summary="Get an assistant")
async def get_assistant(assistant_id: str) -> Any:
    """The assistant ``lead_agent``."""
    check_assistant(assistant_id)
    return assistant_json()


@router.get("/assistants/{assistant_id}/graph", summary="Get the assistant's graph")
async def get_graph(assistant_id: str, xray: bool = False, gw: Gateway = Depends(get_gateway)) -> dict[str, Any]:
    """Nodes and edges of the graph, as LangGraph draws it."""
    check_assistant(assistant_id)
    return gw.graph.get_graph(xray=xray).to_json()


def keys_schema(cls: Any) -> dict[str, Any] | None:
    """A coarse JSON schema naming the keys of a state class (when pydantic cannot render it)."""
    keys: dict[str, Any] = {}
    for klass in reversed(getattr(cls, "__mro__", [cls])):
        keys.update(getattr(klass, "__annotations__", {}) or {})
    if not keys:
        return None
    return {"title": getattr(cls, "__name__", "State"), "type": "object", "properties": {k: {} for k in keys}}


def json_schema_or_keys(render: Any, cls: Any) -> dict[str, Any] | None:
    """LangGraph's JSON schema, or the keys of ``cls`` when it cannot be rendered."""
    try:
        return render()
    except Exception as exc:  # noqa: BLE001 - e.g. a tool's state declared with typing.TypedDict on Python < 3.12
        log.warning("schema_not_rendered", schema=getattr(cls, "__name__", None), error=str(exc).splitlines()[0])
        return keys_schema(cls)


@router.get("/assistants/{assistant_id}/schemas", summary="Get the assistant's schemas")
async def get_schemas(assistant_id: str, gw: Gateway = Depends(get_gateway)) -> dict[str, Any]:
    """JSON schemas of the graph's input, output, state, config and context."""
    check_assistant(assistant_id)
    graph = gw.graph
    builder = graph.builder
    return {
        "graph_id": LEAD_AGENT_NAME,
        "input_schema": json_schema_or_keys(graph.get_input_jsonschema, builder.input_schema),
        "output_schema": json_schema_or_keys(graph.get_output_jsonschema, builder.output_schema),
        "state_schema": json_schema_or_keys(lambda: TypeAdapter(builder.state_schema).json_schema(), builder.state_schema),
        "config_schema": CONFIG_SCHEMA,
        "context_schema": json_schema_or_keys(graph.get_context_jsonschema, None),
    }
