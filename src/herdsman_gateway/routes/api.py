"""REST under ``/api``: health, the configured models and the status of MCP servers."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from herdsman.config.schema import EMBEDDED_MODEL_NAME
from herdsman.models.keys import model_key_statuses
from herdsman_gateway.auth import current_user
from herdsman_gateway.container import Gateway, get_gateway

router = APIRouter(prefix="/api", tags=["api"])


@router.get("/health", summary="Health check")
async def health() -> dict[str, str]:
    """``{"status": "ok"}`` while the gateway serves requests."""
    return {"status": "ok"}


@router.get("/models", summary="List the configured models", dependencies=[Depends(current_user)])
async def models(gw: Gateway = Depends(get_gateway)) -> dict[str, Any]:
    """The models of config.yaml (without keys or URLs) and which one the lead uses.

    Each model has its class (``use``) and ``api_key``: ``"set"``, ``"missing"``, ``"not needed"``
    or ``"unknown"`` (never the key itself), with ``api_key_env`` (the variable to set, when
    known) and ``api_key_hint`` (what to do).
    """
    config = gw.config
    keys = model_key_statuses(config)
    items = [
        {
            "name": m.name,
            "display_name": m.display_name or m.name,
            "model": m.model,
            "use": m.use,
            "supports_vision": m.supports_vision,
            "supports_thinking": m.supports_thinking,
        }
        for m in config.models
    ]
    if not items:
        items.append(
            {
                "name": EMBEDDED_MODEL_NAME,
                "display_name": "Embedded local model",
                "model": config.local_model.variant,
                "use": "herdsman.models.local",
                "supports_vision": False,
                "supports_thinking": False,
            }
        )
    for item in items:
        key = keys[str(item["name"])]
        item.update(api_key=key.state, api_key_env=key.env_var, api_key_hint=key.hint)
    return {"models": items, "default": config.lead_model_name()}


@router.get("/mcp/status", summary="Status of the configured MCP servers", dependencies=[Depends(current_user)])
async def mcp_servers(gw: Gateway = Depends(get_gateway)) -> dict[str, Any]:
    """Each MCP server: whether its tools loaded, how many, and why not when they did not."""
    from herdsman.tools.mcp import mcp_status

    return {"servers": [s.as_dict() for s in mcp_status(gw.config)]}
