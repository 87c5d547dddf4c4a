"""Tool calls an API model cannot get wrong: the provider's strict, schema-constrained tool calling.

The embedded model decodes its calls under a grammar made from the tools' JSON schemas
(:mod:`herdsman.models.local.grammar`). OpenAI's API offers the same for its models: a function
sent with ``"strict": true`` is decoded under its schema, so every call names a tool that exists
and its arguments are valid. The API accepts only a subset of JSON Schema there: every object
closed (``additionalProperties: false``), every property listed in ``required`` (an optional one
is made nullable instead), and no keywords such as ``default`` or ``minLength``. LangChain's
``strict=True`` closes the objects but leaves optional properties out of ``required``, which the
API refuses, so the schemas are rewritten here; the keywords dropped are still enforced when the
tool validates its arguments.

A ``null`` the model sends for an optional argument means "not given": it is removed before the
tool runs, so the tool's own default applies. A schema that cannot be made strict (a free-form
object such as a ``dict`` argument) is sent as it was, without ``strict``, and logged once.

Which models: ``strict_tools`` of a ``models:`` entry (true/false); by default the official
OpenAI API (``langchain_openai`` chat models without a ``base_url``), since OpenAI-compatible
servers differ in what they accept. Hand-written because no maintained library rewrites JSON
schemas into OpenAI's strict subset.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse, ToolCallRequest
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from herdsman.logs import get_logger
from herdsman.models.factory import STRICT_TOOLS_KEY

log = get_logger(__name__)


_DROPPED = frozenset(
    {
        "default",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minProperties",
        "maxProperties",
        "patternProperties",
        "propertyNames",
        "unevaluatedProperties",
        "unevaluatedItems",
        "contains",
        "examples",
    }
)
"""Keywords OpenAI's strict mode does not take (the tool still validates them)."""


class NotStrict(ValueError):
    """A schema OpenAI's strict mode cannot express (a free-form object)."""


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` that also takes ``null``."""
    kind = schema.get("type")
    if "enum" in schema:
        enum = schema["enum"] if None in schema["enum"] else [*schema["enum"], None]
        typed = {"type": [kind, "null"]} if isinstance(kind, str) else {}
        return {**schema, "enum": enum, **typed}
    if isinstance(kind, str):
        return {**schema, "type": [kind, "null"]}
    if isinstance(kind, list):
        return {**schema, "type": kind if "null" in kind else [*kind, "null"]}
    if "anyOf" in schema:
        return {**schema, "anyOf": [*schema["anyOf"], {"type": "null"}]}
    return {"anyOf": [schema, {"type": "null"}]}


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` in OpenAI's strict subset: objects closed, every property required, optional
    ones nullable, unsupported keywords dropped; raises :class:`NotStrict` when it cannot be."""
    out = {k: v for k, v in schema.items() if k not in _DROPPED}
    if out.get("type") == "object" or "properties" in out:
        extra = out.get("additionalProperties")
        if "properties" not in out or (extra not in (None, False)):
            raise NotStrict("a free-form object (no listed properties) cannot be strict")
        required = set(out.get("required") or [])
        properties = {}
        for name, sub in out["properties"].items():
            made = strict_schema(sub)
            properties[name] = made if name in required else _nullable(made)
        out.update(properties=properties, required=list(properties), additionalProperties=False)
    for key in ("anyOf", "allOf", "oneOf"):
        if key in out:
            out[key] = [strict_schema(s) for s in out[key]]
    if isinstance(out.get("items"), dict):
        out["items"] = strict_schema(out["items"])
    for key in ("$defs", "definitions"):
        if key in out:
            out[key] = {name: strict_schema(s) for name, s in out[key].items()}
    return out


def strict_tool(tool: BaseTool | dict[str, Any]) -> dict[str, Any] | None:
    """The OpenAI tool dict of ``tool`` with a strict schema, or None when it cannot be strict."""
    spec = copy.deepcopy(convert_to_openai_tool(tool))
    function = spec["function"]
    try:
        function["parameters"] = strict_schema(function.get("parameters") or {"type": "object", "properties": {}})
    except NotStrict as exc:
        log.info("strict_tools_skipped", tool=function.get("name"), reason=str(exc))
        return None
    function["strict"] = True
    return spec


def optional_arguments(tool: BaseTool) -> frozenset[str]:
    """The arguments of ``tool`` its schema does not require."""
    schema = convert_to_openai_tool(tool)["function"].get("parameters") or {}
    return frozenset(set(schema.get("properties") or {}) - set(schema.get("required") or []))


def wants_strict(model: Any) -> bool:
    """Whether ``model`` gets strict tools: its ``models:`` entry's ``strict_tools`` when set,
    else True for the official OpenAI API (a ``langchain_openai`` model with no ``base_url``)."""
    setting = (getattr(model, "metadata", None) or {}).get(STRICT_TOOLS_KEY)
    if setting is not None:
        return bool(setting)
    return type(model).__module__.startswith("langchain_openai.") and not getattr(model, "openai_api_base", None)


class StrictToolsMiddleware(AgentMiddleware):
    """Send the tools of a model that takes them as strict schemas; drop the nulls it sends for
    arguments it may leave out."""

    def __init__(self) -> None:
        """No settings: which models get strict tools is :func:`wants_strict`'s."""
        super().__init__()
        self._specs: dict[str, dict[str, Any] | None] = {}

    def _spec(self, tool: BaseTool) -> dict[str, Any] | None:
        if tool.name not in self._specs:
            self._specs[tool.name] = strict_tool(tool)
        return self._specs[tool.name]

    def _strict(self, request: ModelRequest) -> ModelRequest:
        if not wants_strict(request.model):
            return request
        tools = [(self._spec(t) or t) if isinstance(t, BaseTool) else t for t in request.tools]
        return request.override(tools=tools)

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        """Call the model with strict tool schemas when it takes them."""
        return handler(self._strict(request))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> Any:
        """Async twin of :meth:`wrap_model_call`."""
        return await handler(self._strict(request))

    @staticmethod
    def _given(request: ToolCallRequest) -> ToolCallRequest:
        """``request`` without the null arguments its tool does not require."""
        args = request.tool_call.get("args") or {}
        if request.tool is None or not any(v is None for v in args.values()):
            return request
        optional = optional_arguments(request.tool)
        kept = {k: v for k, v in args.items() if not (v is None and k in optional)}
        return request.override(tool_call={**request.tool_call, "args": kept})

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Any]) -> Any:
        """Run the call, its nulls for optional arguments left out."""
        return handler(self._given(request))

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[Any]]
    ) -> Any:
        """Async twin of :meth:`wrap_tool_call`."""
        return await handler(self._given(request))
