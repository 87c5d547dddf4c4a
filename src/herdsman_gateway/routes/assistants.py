"""Assistants (custom agents): the built-in ``lead_agent`` and the ones users create.

A custom agent is the lead with its own settings (instructions, model, skills, tools, sub-agent
types, step limit) in its ``context``, mirrored into ``config.configurable`` as LangGraph's
server does (see :mod:`herdsman.agents.profile` and :mod:`herdsman.runtime.storage.assistants`). Every
change is a new version. Custom agents get UUIDs and belong to the user who created them
(``metadata.owner``): another user's agent answers 404, like one that does not exist. The
built-in ``lead_agent`` (id and graph id) is seen by everyone and cannot be changed (409).
Runs accept ``lead_agent`` or a custom agent's id.
"""

from __future__ import annotations

import uuid
from typing import Any

import orjson
from fastapi import APIRouter, Depends, HTTPException, Response
from pydantic import TypeAdapter

from herdsman.agents.lead import LEAD_AGENT_NAME
from herdsman.agents.profile import ProfileError, check_profile, known_names
from herdsman.logs import get_logger
from herdsman.middleware.agent_profile import SUBAGENT_TYPES
from herdsman.runtime.runs.run_input import RunInputError, check_run_config, check_run_limits
from herdsman.runtime.storage.assistants import (
    AssistantExistsError,
    AssistantRecord,
    BothConfigurableAndContextError,
    builtin_assistant,
    mirrored,
)
from herdsman.runtime.storage.assistants import (
    search_assistants as matching,
)
from herdsman.runtime.storage.threads import SCAN_LIMIT
from herdsman.subagents.types import subagent_types
from herdsman_gateway.auth import current_user, owns, with_owner
from herdsman_gateway.container import Gateway, get_gateway
from herdsman_gateway.routes.threads import delete_thread
from herdsman_gateway.schemas import (
    Assistant,
    AssistantCount,
    AssistantCreate,
    AssistantPatch,
    AssistantSearch,
    AssistantVersionChange,
    AssistantVersionsSearch,
)

router = APIRouter(tags=["assistants"], dependencies=[Depends(current_user)])
log = get_logger(__name__)

MAX_SETTINGS_BYTES = 64 * 1024  # config, context and metadata of one version, as JSON: every change keeps one
MAX_VERSIONS = 100  # versions one assistant keeps; every change reads them all and stores one more
CONFIG_SCHEMA = {
    "title": "Config",
    "type": "object",
    "properties": {"configurable": {"type": "object", "description": "Passed to the graph as config['configurable']."}},
}


def not_found(assistant_id: str) -> HTTPException:
    """The 404 for an assistant that does not exist (or belongs to someone else)."""
    return HTTPException(
        404,
        (
            f"Assistant {assistant_id} not found; list them with POST /assistants/search or create "
            "one with POST /assistants"
        ),
    )


async def load_assistant(gw: Gateway, assistant_id: str, user: str | None) -> AssistantRecord:
    """The assistant if ``user`` may see it (the built-in one always), else 404."""
    if assistant_id == LEAD_AGENT_NAME:
        return builtin_assistant()
    if not _storable(assistant_id):  # a lone surrogate cannot even be looked up: no such assistant
        raise not_found(assistant_id.encode("utf-8", "replace").decode())
    record = await gw.assistants.get(assistant_id)
    if record is None or not owns(record.metadata, user):
        raise not_found(assistant_id)
    return record


def _storable(text: str) -> bool:
    """Whether ``text`` is valid Unicode text a database can keep (no lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


async def load_own_assistant(gw: Gateway, assistant_id: str, user: str | None) -> AssistantRecord:
    """The user's own custom assistant; 409 for the built-in one, 404 for any other."""
    if assistant_id == LEAD_AGENT_NAME:
        raise HTTPException(
            409,
            f"Assistant {LEAD_AGENT_NAME} is built in and cannot be changed or deleted; "
            "create your own agent with POST /assistants (graph_id lead_agent)",
        )
    return await load_assistant(gw, assistant_id, user)


def check_graph(graph_id: str | None) -> None:
    """404 unless ``graph_id`` is None or the one graph this server runs."""
    if graph_id is not None and graph_id != LEAD_AGENT_NAME:
        raise HTTPException(404, f"Graph {graph_id!r} not found; this server runs one graph: {LEAD_AGENT_NAME!r}")


def check_settings_size(config: dict[str, Any] | None, metadata: dict[str, Any] | None) -> None:
    """Raise RunInputError when a version's config (with its context) and metadata are over
    :data:`MAX_SETTINGS_BYTES` as JSON."""
    size = len(orjson.dumps([config, metadata], option=orjson.OPT_NON_STR_KEYS))
    if size > MAX_SETTINGS_BYTES:
        raise RunInputError(
            "config", f"with context and metadata is {size} bytes as JSON; keep it under {MAX_SETTINGS_BYTES}"
        )


def check_settings(
    gw: Gateway, config: dict[str, Any] | None, context: dict[str, Any] | None, metadata: dict[str, Any] | None
) -> None:
    """422 naming the bad field and the valid values for settings the agent cannot use (400 for
    both ``config.configurable`` and ``context``, as LangGraph's server answers)."""
    try:
        check_run_config(config, {})
        config, context = mirrored(config, context)
        check_run_config(config, {})  # the context too: it becomes the configurable of the agent's runs
        check_run_limits(config, gw.config.subagents)  # its runs may lower the sub-agent limits, not raise them
        check_settings_size(config, metadata)
        check_profile(context, known_names(gw.config, gw.graph))
    except BothConfigurableAndContextError as exc:
        raise HTTPException(400, str(exc)) from None
    except (RunInputError, ProfileError) as exc:
        raise HTTPException(422, f"Invalid request: {exc}") from None


def assistant_json(record: AssistantRecord, select: list[str] | None = None) -> dict[str, Any]:
    """The LangGraph ``Assistant`` JSON (only the ``select`` fields when given)."""
    data = record.to_dict()
    return {k: v for k, v in data.items() if k in select} if select else data


async def visible(gw: Gateway, user: str | None) -> list[AssistantRecord]:
    """The built-in assistant and the user's own (every stored one when auth is off)."""
    return [builtin_assistant(), *(r for r in await gw.assistants.all() if owns(r.metadata, user))]


@router.post("/assistants", response_model=Assistant, summary="Create an assistant (a custom agent)")
async def create_assistant(
    body: AssistantCreate, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Any:
    """Create a custom agent of the lead (``if_exists: do_nothing`` returns an existing one instead of 409)."""
    check_graph(body.graph_id)
    if body.assistant_id == LEAD_AGENT_NAME:
        raise HTTPException(
            409, f"Assistant {LEAD_AGENT_NAME} is the built-in one; omit assistant_id to get a new UUID"
        )
    if body.assistant_id is not None:
        try:
            uuid.UUID(body.assistant_id)
        except ValueError:
            raise HTTPException(
                422, "Invalid request: assistant_id: must be a UUID (or omit it to get a new one)"
            ) from None
        existing = await gw.assistants.get(body.assistant_id)
        if existing is not None and not owns(existing.metadata, user):
            raise HTTPException(409, f"Assistant {body.assistant_id} already exists; choose another assistant_id")
    check_settings(gw, body.config, body.context, body.metadata)
    limit = gw.config.gateway.max_assistants_per_user
    if limit is not None and (body.assistant_id is None or existing is None):
        if len(await visible(gw, user)) - 1 >= limit:  # the built-in one is not counted
            raise HTTPException(
                429,
                f"You have {limit} assistants, the most gateway.max_assistants_per_user allows; delete ones you no "
                "longer need (DELETE /assistants/{assistant_id}) or ask the operator to raise the limit",
            )
    try:
        record = await gw.assistants.create(
            graph_id=body.graph_id,
            name=body.name or "Untitled",
            assistant_id=body.assistant_id,
            config=body.config,
            context=body.context,
            metadata=with_owner(body.metadata, user),
            description=body.description,
            if_exists=body.if_exists,
        )
    except AssistantExistsError:
        raise HTTPException(
            409, f"Assistant {body.assistant_id} already exists; send if_exists: do_nothing to reuse it"
        ) from None
    log.info("assistant_created", assistant_id=record.assistant_id, version=record.version)
    return assistant_json(record)


@router.post("/assistants/search", response_model=list[dict[str, Any]], summary="Search assistants")
async def search_assistants(
    body: AssistantSearch,
    response: Response,
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> Any:
    """The assistants the caller may see that match the filters (``X-Pagination-Next`` when more
    follow); each is an ``Assistant``, or its ``select`` fields."""
    check_graph(body.graph_id)
    found = matching(
        await visible(gw, user),
        graph_id=body.graph_id,
        name=body.name,
        metadata=body.metadata,
        sort_by=body.sort_by,
        sort_order=body.sort_order,
    )
    if len(found) > body.offset + body.limit:
        response.headers["X-Pagination-Next"] = str(body.offset + body.limit)
    return [assistant_json(r, body.select) for r in found[body.offset : body.offset + body.limit]]


@router.post("/assistants/count", response_model=int, summary="Count assistants")
async def count_assistants(
    body: AssistantCount, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> int:
    """How many assistants the caller may see match the filters."""
    check_graph(body.graph_id)
    return len(matching(await visible(gw, user), graph_id=body.graph_id, name=body.name, metadata=body.metadata))


@router.get("/assistants/{assistant_id}", response_model=Assistant, summary="Get an assistant")
async def get_assistant(
    assistant_id: str, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Any:
    """The assistant's latest version."""
    return assistant_json(await load_assistant(gw, assistant_id, user))


@router.patch("/assistants/{assistant_id}", response_model=Assistant, summary="Update an assistant (a new version)")
async def patch_assistant(
    assistant_id: str,
    body: AssistantPatch,
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> Any:
    """A new version: the given fields replace the latest's (``metadata`` is merged into it)."""
    current = await load_own_assistant(gw, assistant_id, user)
    check_graph(body.graph_id)
    check_settings(gw, body.config, body.context, body.metadata)
    try:  # the new version merges the metadata: patches with new keys each would pile up in every later version
        merged = {**current.metadata, **(body.metadata or {})}
        check_settings_size(
            mirrored(body.config, body.context)[0] if body.config or body.context else current.config, merged
        )
    except RunInputError as exc:
        raise HTTPException(422, f"Invalid request: {exc}") from None
    if len(await gw.assistants.versions(assistant_id, limit=MAX_VERSIONS)) >= MAX_VERSIONS:
        raise HTTPException(
            429,
            f"Assistant {assistant_id} has {MAX_VERSIONS} versions, the most one assistant keeps; create a new "
            "assistant (POST /assistants) with the settings you want, and delete this one if you no longer need it",
        )
    record = await gw.assistants.update(
        assistant_id,
        graph_id=body.graph_id,
        config=body.config,
        context=body.context,
        metadata=with_owner(body.metadata, user) if body.metadata is not None else None,
        name=body.name,
        description=body.description,
    )
    if record is None:  # deleted meanwhile
        raise not_found(assistant_id)
    log.info("assistant_updated", assistant_id=assistant_id, version=record.version)
    return assistant_json(record)


@router.delete("/assistants/{assistant_id}", status_code=204, response_class=Response, summary="Delete an assistant")
async def delete_assistant(
    assistant_id: str,
    delete_threads: bool = False,
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> Response:
    """Delete the assistant and its versions (``delete_threads=true``: also the caller's threads on it)."""
    await load_own_assistant(gw, assistant_id, user)
    if delete_threads:
        wanted = with_owner({"assistant_id": assistant_id}, user)
        for thread in await gw.threads.search(metadata=wanted, limit=SCAN_LIMIT):
            await delete_thread(thread.thread_id, gw, user)
    await gw.assistants.delete(assistant_id)
    log.info("assistant_deleted", assistant_id=assistant_id, with_threads=delete_threads)
    return Response(status_code=204)


@router.post(
    "/assistants/{assistant_id}/versions", response_model=list[Assistant], summary="List an assistant's versions"
)
async def assistant_versions(
    assistant_id: str,
    body: AssistantVersionsSearch,
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> Any:
    """The assistant's versions, newest first."""
    record = await load_assistant(gw, assistant_id, user)
    if assistant_id == LEAD_AGENT_NAME:
        return [assistant_json(record)][body.offset : body.offset + body.limit]
    found = await gw.assistants.versions(assistant_id, metadata=body.metadata, limit=body.limit, offset=body.offset)
    return [assistant_json(r) for r in found]


@router.post("/assistants/{assistant_id}/latest", response_model=Assistant, summary="Make a version the latest")
async def set_latest_version(
    assistant_id: str,
    body: AssistantVersionChange,
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> Any:
    """Runs use this version of the assistant from now on."""
    await load_own_assistant(gw, assistant_id, user)
    record = await gw.assistants.set_latest(assistant_id, body.version)
    if record is None:
        raise HTTPException(
            404,
            f"Version {body.version} not found for assistant {assistant_id}; "
            f"list them with POST /assistants/{assistant_id}/versions",
        )
    return assistant_json(record)


def subgraphs_json(gw: Gateway, record: AssistantRecord, namespace: str | None) -> dict[str, Any]:
    """The sub-agent types the assistant may delegate to, as LangGraph's ``Subgraphs`` map."""
    if not gw.config.subagents.enabled:
        return {}
    allowed = (record.context or {}).get(SUBAGENT_TYPES)
    task_tool = getattr(gw.graph.nodes.get("tools"), "bound", None)
    task = (getattr(task_tool, "tools_by_name", {}) or {}).get("task")
    input_schema = task.tool_call_schema.model_json_schema() if task is not None else None
    found = {}
    for name, spec in sorted(subagent_types(gw.config).items()):
        if (isinstance(allowed, list) and name not in allowed) or (namespace is not None and name != namespace):
            continue
        found[name] = {
            "graph_id": name,
            "description": spec.description,
            "input_schema": input_schema,
            "output_schema": {"title": "TaskResult", "type": "object", "properties": {"result": {"type": "string"}}},
            "state_schema": None,
            "config_schema": None,
            "context_schema": None,
        }
    return found


@router.get("/assistants/{assistant_id}/subgraphs", summary="Get the assistant's subgraphs (sub-agent types)")
async def get_subgraphs(
    assistant_id: str,
    recurse: bool = False,
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> dict[str, Any]:
    """The sub-agent types the assistant delegates to; at run time each runs as a subgraph under
    the namespace ``tools:<tool_call_id>``."""
    return subgraphs_json(gw, await load_assistant(gw, assistant_id, user), None)


@router.get("/assistants/{assistant_id}/subgraphs/{namespace}", summary="Get one of the assistant's subgraphs")
async def get_subgraph(
    assistant_id: str,
    namespace: str,
    recurse: bool = False,
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> dict[str, Any]:
    """The sub-agent type ``namespace`` (an empty map when the assistant has no such type)."""
    return subgraphs_json(gw, await load_assistant(gw, assistant_id, user), namespace)


@router.get("/assistants/{assistant_id}/graph", summary="Get the assistant's graph")
async def get_graph(
    assistant_id: str, xray: bool = False, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> dict[str, Any]:
    """Nodes and edges of the graph, as LangGraph draws it."""
    await load_assistant(gw, assistant_id, user)
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
async def get_schemas(
    assistant_id: str, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> dict[str, Any]:
    """JSON schemas of the graph's input, output, state, config and context."""
    await load_assistant(gw, assistant_id, user)
    graph = gw.graph
    builder = graph.builder
    return {
        "graph_id": LEAD_AGENT_NAME,
        "input_schema": json_schema_or_keys(graph.get_input_jsonschema, builder.input_schema),
        "output_schema": json_schema_or_keys(graph.get_output_jsonschema, builder.output_schema),
        "state_schema": json_schema_or_keys(
            lambda: TypeAdapter(builder.state_schema).json_schema(), builder.state_schema
        ),
        "config_schema": CONFIG_SCHEMA,
        "context_schema": json_schema_or_keys(graph.get_context_jsonschema, None),
    }
