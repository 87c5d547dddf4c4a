"""REST under ``/api``: health, the configured models and the status of MCP servers."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from herdsman.config.schema import EMBEDDED_MODEL_NAME
from herdsman_gateway.auth import current_user
from herdsman_gateway.context import Gateway, get_gateway

router = APIRouter(prefix="/api", tags=["api"])


@router.get("/health", summary="Health check")
async def health() -> dict[str, str]:
    """``{"status": "ok"}`` while the gateway serves requests."""
    return {"status": "ok"}


@router.get("/models", summary="List the configured models", dependencies=[Depends(current_user)])
async def models(gw: Gateway = Depends(get_gateway)) -> dict[str, Any]:
    """The models of config.yaml (without keys or URLs) and which one the lead uses."""
    config = gw.config
    items = [
        {
            "name": m.name,
            "display_name": m.display_name or m.name,
            "model": m.model,
            "supports_vision": m.supports_vision,
            "supports_thinking": m.supports_thinking,
        }
        for m in config.models
    ]
    if not items:
        items.append({"name": EMBEDDED_MODEL_NAME, "display_name": "Embedded local model", "model": config.local_model.variant,
                      "supports_vision": False, "supports_thinking": False})
    return {"models": items, "default": config.lead_model_name()}


@router.get("/mcp/status", summary="Status of the configured MCP servers", dependencies=[Depends(current_user)])
async def mcp_servers(gw: Gateway = Depends(get_gateway)) -> dict[str, Any]:
    """Each MCP server: whether its tools loaded, how many, and why not when they did not."""
    from herdsman.tools.mcp import mcp_status

    return {"servers": [s.as_dict() for s in mcp_status(gw.config)]}
