"""Assistants: the one graph Herdsman serves, ``lead_agent``, seen as a LangGraph assistant.

Its id and graph id are both ``lead_agent``; runs accept either name.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException

from herdsman.agents.lead import LEAD_AGENT_NAME
from herdsman_gateway.auth import current_user
from herdsman_gateway.context import Gateway, get_gateway
from herdsman_gateway.schemas import Assistant, AssistantSearch

router = APIRouter(tags=["assistants"], dependencies=[Depends(current_user)])

CREATED_AT = "2026-01-01T00:00:00+00:00"


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


def _schema(fn: Any) -> dict[str, Any] | None:
    try:
        return fn()
    except Exception:  # noqa: BLE001 - a schema LangGraph cannot render is shown as null
        return None


@router.get("/assistants/{assistant_id}/schemas", summary="Get the assistant's schemas")
async def get_schemas(assistant_id: str, gw: Gateway = Depends(get_gateway)) -> dict[str, Any]:
    """JSON schemas of the graph's input, output, state, config and context."""
    check_assistant(assistant_id)
    graph = gw.graph
    return {
        "graph_id": LEAD_AGENT_NAME,
        "input_schema": _schema(graph.get_input_jsonschema),
        "output_schema": _schema(graph.get_output_jsonschema),
        "state_schema": _schema(lambda: graph.get_output_jsonschema()),
        "config_schema": _schema(graph.get_config_jsonschema),
        "context_schema": _schema(graph.get_context_jsonschema),
    }
