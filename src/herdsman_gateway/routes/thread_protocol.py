"""LangGraph's thread streaming protocol: ``POST /threads/{thread_id}/commands`` and
``POST /threads/{thread_id}/stream/events`` (``client.threads.stream()`` in ``langgraph-sdk``).

Commands are JSON in, JSON out: ``{id, method, params}`` answers ``{type: "success", id, result,
meta: {applied_through_seq}}``, or ``{type: "error", id, error, message}`` for a command that
cannot be done (HTTP 200, as LangGraph's server answers, so the SDK raises ``Protocol error
[code]: message``). A body that is not a command (no JSON, no integer ``id`` or string
``method``) is a 400; a thread the caller may not see is a 404, as on every thread route.

- ``run.start`` {assistant_id, input, config?, metadata?, multitaskStrategy?}: start a run on the
  thread (created when it does not exist yet); when the thread waits at an interrupt, ``input``
  answers it. Result ``{run_id}``.
- ``input.respond`` {interrupt_id, namespace, response} or {responses: [...]}, with optional
  ``update``, ``goto``, ``config``, ``metadata``: resume the thread's interrupts in one run.
- ``agent.getTree``: the latest run's root and the sub-agents (subgraphs) it started.
- ``subscription.subscribe`` / ``unsubscribe``: accepted as LangGraph's server does over HTTP,
  where each event stream carries its own filter; ``subscription.reconnect`` is for WebSockets.

The event stream (SSE) takes ``{channels, namespaces?, depth?, since?}`` and sends the thread's
protocol events (:mod:`herdsman.runtime.streaming.thread_events`) that match, each with ``id: <seq>``,
until the client leaves; ``since`` resumes after that ``seq``.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request, Response
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from herdsman.agents.lead import LEAD_AGENT_NAME
from herdsman.runtime.runs.run_input import RunInputError, check_json
from herdsman.runtime.runs.runs import RunError
from herdsman.runtime.streaming.protocol_events import PROTOCOL_STREAM_MODES, supported_channel
from herdsman.runtime.streaming.thread_events import EventFilter, ThreadEventLog
from herdsman_gateway.auth import current_user, owns
from herdsman_gateway.container import Gateway, get_gateway
from herdsman_gateway.routes.runs import start_run
from herdsman_gateway.routes.threads import check_thread_id, not_found
from herdsman_gateway.schemas import RunCreate
from herdsman_gateway.sse import HEARTBEAT, EventStream, frame, stream_slot

router = APIRouter(tags=["threads"])

STRATEGIES = ("reject", "interrupt", "rollback", "enqueue")
CHANNEL_HELP = "values, updates, messages, tools, lifecycle, input, checkpoints, tasks, custom or custom:<name>"
_JSON = {"application/json": {"schema": {"type": "object"}}}
COMMAND_DOC = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["id", "method"],
                    "properties": {
                        "id": {"type": "integer", "minimum": 0},
                        "method": {"type": "string"},
                        "params": {"type": "object"},
                    },
                }
            }
        },
    },
    "responses": {
        "200": {"description": "The command's result or protocol error", "content": _JSON},
        "400": {"description": "Not a protocol command", "content": _JSON},
        "404": {"description": "No such thread", "content": _JSON},
        "422": {"description": "A value no database can keep", "content": _JSON},
    },
}
STREAM_DOC = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["channels"],
                    "properties": {
                        "channels": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                        "namespaces": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}},
                        "depth": {"type": "integer", "minimum": 0},
                        "since": {"type": "integer", "minimum": 0},
                    },
                }
            }
        },
    },
    "responses": {
        "200": {"description": "The thread's protocol events", "content": {"text/event-stream": {}}},
        "400": {"description": "Not an event stream request", "content": _JSON},
        "404": {"description": "No such thread", "content": _JSON},
        "422": {"description": "A value no database can keep", "content": _JSON},
    },
}


class CommandError(Exception):
    """A command that cannot be done: a protocol error code and what to do."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _error(command_id: Any, code: str, message: str, status: int = 200) -> JSONResponse:
    return JSONResponse({"type": "error", "id": command_id, "error": code, "message": message}, status_code=status)


async def _json_body(request: Request) -> Any:
    """The request's JSON (400 when it is not JSON, 422 for a value no database can keep)."""
    try:
        data = json.loads(await request.body())
    except ValueError:
        raise HTTPException(400, "Invalid JSON body: send a JSON object") from None
    try:
        check_json("body", data)
    except RunInputError as exc:
        raise HTTPException(422, f"Invalid request: {exc.field}: {exc.reason}") from None
    return data


async def _visible_thread(gw: Gateway, thread_id: str, user: str | None, *, creating: bool) -> None:
    """404 unless the thread exists and ``user`` may see it; a thread that does not exist yet
    passes when ``creating`` (``run.start`` creates it) and its id can name a thread."""
    record = await gw.threads.get(thread_id)
    if record is None and creating:
        check_thread_id(thread_id)
        return
    if record is None or not owns(record.metadata, user):
        raise not_found(thread_id)


async def _events(gw: Gateway, thread_id: str) -> ThreadEventLog:
    """The thread's event log, for the thread as it is now: never one kept for an earlier thread
    with its id (deleted through another gateway, whose delete could not drop this one's log)."""
    assert gw.thread_events is not None, "the app's lifespan creates the thread event hub"
    record = await gw.threads.get(thread_id)
    return gw.thread_events.log(thread_id, record.created_at if record is not None else None)


def _object(params: dict[str, Any], key: str, command: str) -> dict[str, Any] | None:
    value = params.get(key)
    if value is not None and not isinstance(value, dict):
        raise CommandError("invalid_argument", f"{command}: {key} must be an object, got {type(value).__name__}")
    return value


async def _pending_interrupts(gw: Gateway, thread_id: str) -> set[str]:
    """The ids of the interrupts the thread waits at."""
    state = await gw.graph.aget_state({"configurable": {"thread_id": thread_id}})
    return {i.id for i in state.interrupts}


async def _start(gw: Gateway, thread_id: str, user: str | None, **fields: Any) -> str:
    """Start a protocol run (every channel's stream modes, subgraphs); its id."""
    try:
        body = RunCreate(
            stream_mode=PROTOCOL_STREAM_MODES,
            stream_subgraphs=True,
            stream_resumable=True,
            if_not_exists="create",
            **fields,
        )
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'params'}: {e['msg']}" for e in exc.errors())
        raise CommandError("invalid_argument", problems) from None
    await _events(gw, thread_id)  # follows the thread before the run starts, so it sees the run's first event
    try:
        run = await start_run(gw, thread_id, body, user)
    except RunError as exc:
        raise CommandError("invalid_argument", str(exc)) from None
    except HTTPException as exc:  # an assistant the caller cannot see
        raise CommandError("invalid_argument", str(exc.detail)) from None
    return run.run_id


async def _run_start(gw: Gateway, thread_id: str, params: dict[str, Any], user: str | None) -> dict[str, Any]:
    assistant_id = params.get("assistant_id")
    if not isinstance(assistant_id, str) or not assistant_id:
        raise CommandError(
            "invalid_argument", "run.start requires an assistant_id (an assistant id or a graph name: lead_agent)"
        )
    config = _object(params, "config", "run.start")
    metadata = _object(params, "metadata", "run.start")
    strategy = params.get("multitaskStrategy")
    graph_input, command = params.get("input"), None
    if (
        graph_input is not None
        and await gw.threads.get(thread_id) is not None
        and await _pending_interrupts(gw, thread_id)
    ):
        graph_input, command = None, {"resume": params["input"]}  # the thread waits: the input answers it
    configurable = (config or {}).get("configurable")
    checkpoint_id = None
    if isinstance(configurable, dict) and "checkpoint_id" in configurable:
        # the protocol's only place for where to start from: taken out of the config, as the
        # REST body's checkpoint_id (the run's config may not set the server's own keys)
        checkpoint_id = configurable["checkpoint_id"]
        if not isinstance(checkpoint_id, str) or not checkpoint_id:
            raise CommandError(
                "invalid_argument",
                "run.start: config.configurable.checkpoint_id must be a checkpoint id "
                "(a string from the thread's history)",
            )
        config = {**(config or {}), "configurable": {k: v for k, v in configurable.items() if k != "checkpoint_id"}}
    run_id = await _start(
        gw,
        thread_id,
        user,
        assistant_id=assistant_id,
        input=graph_input,
        command=command,
        config=config,
        metadata=metadata,
        multitask_strategy=strategy if strategy in STRATEGIES else "enqueue",
        checkpoint_id=checkpoint_id,
    )
    return {"run_id": run_id}


def _responses(params: dict[str, Any]) -> list[tuple[str, Any]]:
    """(interrupt id, response) of an ``input.respond``: one, or each of ``responses``."""
    entries = params.get("responses") if "responses" in params else [params]
    if not isinstance(entries, list) or not entries:
        raise CommandError("invalid_argument", "input.respond: responses must be a non-empty array")
    found = []
    for n, entry in enumerate(entries):
        where = "input.respond" if "responses" not in params else f"input.respond: responses[{n}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("interrupt_id"), str) or not entry["interrupt_id"]:
            raise CommandError("invalid_argument", f"{where} needs an interrupt_id (from the input.requested event)")
        namespace = entry.get("namespace", [])
        if not isinstance(namespace, list) or not all(isinstance(s, str) for s in namespace):
            raise CommandError("invalid_argument", f"{where}: namespace must be an array of strings")
        if "response" not in entry:
            raise CommandError("invalid_argument", f"{where} needs a response (the answer to the interrupt)")
        found.append((entry["interrupt_id"], entry["response"]))
    return found


async def _input_respond(gw: Gateway, thread_id: str, params: dict[str, Any], user: str | None) -> dict[str, Any]:
    answers = _responses(params)
    config = _object(params, "config", "input.respond")
    metadata = _object(params, "metadata", "input.respond")
    pending = await _pending_interrupts(gw, thread_id)
    for interrupt_id, _ in answers:
        if interrupt_id not in pending:
            waiting = f"it waits for {sorted(pending)}" if pending else "it waits for none"
            raise CommandError(
                "no_such_interrupt",
                f"Unknown or already answered interrupt {interrupt_id} on thread {thread_id}; {waiting}",
            )
    command: dict[str, Any] = {"resume": dict(answers)}
    for key in ("update", "goto"):
        if params.get(key) is not None:
            command[key] = params[key]
    record = await gw.threads.get(thread_id)
    assistant_id = (record.metadata if record else {}).get("assistant_id") or LEAD_AGENT_NAME
    await _start(gw, thread_id, user, assistant_id=assistant_id, command=command, config=config, metadata=metadata)
    return {}


def _channels(value: Any, where: str) -> list[str]:
    """The requested channels; a CommandError naming the unknown ones."""
    if not isinstance(value, list) or not value:
        raise CommandError(
            "invalid_argument", f"{where}: channels is required and must be a non-empty array of {CHANNEL_HELP}"
        )
    bad = [repr(c) if not isinstance(c, str) else c for c in value if not supported_channel(c)]
    if bad:
        raise CommandError(
            "invalid_argument", f"{where}: unsupported channels {', '.join(bad[:5])}; use {CHANNEL_HELP}"
        )
    return value


async def _subscribe(gw: Gateway, thread_id: str, params: dict[str, Any], user: str | None) -> dict[str, Any]:
    _channels(params.get("channels"), "subscription.subscribe")
    return {"subscription_id": str(uuid.uuid4()), "replayed_events": 0}


async def _unsubscribe(gw: Gateway, thread_id: str, params: dict[str, Any], user: str | None) -> dict[str, Any]:
    subscription_id = params.get("subscription_id")
    if not isinstance(subscription_id, str):
        raise CommandError("invalid_argument", "subscription.unsubscribe requires a subscription_id")
    raise CommandError(
        "no_such_subscription",
        f"Unknown subscription: {subscription_id}; over HTTP a subscription is "
        "its event stream: close that stream to unsubscribe",
    )


async def _reconnect(gw: Gateway, thread_id: str, params: dict[str, Any], user: str | None) -> dict[str, Any]:
    raise CommandError(
        "not_supported",
        "subscription.reconnect is for WebSocket sessions; over HTTP open "
        f"POST /threads/{thread_id}/stream/events again with since (the last seq you saw)",
    )


async def _get_tree(gw: Gateway, thread_id: str, params: dict[str, Any], user: str | None) -> dict[str, Any]:
    return {"tree": (await _events(gw, thread_id)).tree()}


COMMANDS = {
    "run.start": _run_start,
    "input.respond": _input_respond,
    "agent.getTree": _get_tree,
    "subscription.subscribe": _subscribe,
    "subscription.unsubscribe": _unsubscribe,
    "subscription.reconnect": _reconnect,
}


@router.post(
    "/threads/{thread_id}/commands", summary="Send a thread streaming protocol command", openapi_extra=COMMAND_DOC
)
async def thread_command(
    thread_id: str, request: Request, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Response:
    """Run one command of the thread streaming protocol (see the module docstring)."""
    await _visible_thread(gw, thread_id, user, creating=True)  # another user's thread: 404 before the body is read
    payload = await _json_body(request)
    command_id = payload.get("id") if isinstance(payload, dict) else None
    if (
        not isinstance(payload, dict)
        or not isinstance(command_id, int)
        or isinstance(command_id, bool)
        or not isinstance(payload.get("method"), str)
    ):
        return _error(
            command_id if isinstance(command_id, int) else None,
            "invalid_argument",
            "Protocol commands must include an integer id and string method (and params, an object)",
            400,
        )
    method = payload["method"]
    await _visible_thread(gw, thread_id, user, creating=method == "run.start")
    handler = COMMANDS.get(method)
    if handler is None:
        return _error(
            command_id, "unknown_command", f"Unknown protocol command: {method}; use one of {sorted(COMMANDS)}"
        )
    params = payload.get("params", {})
    applied_through = (await _events(gw, thread_id)).seq  # the events the command's effects come after
    try:
        if not isinstance(params, dict):
            raise CommandError("invalid_argument", f"{method}: params must be an object")
        result = await handler(gw, thread_id, params, user)
    except CommandError as exc:
        if await gw.threads.get(thread_id) is None:  # a run.start that made no thread: no log to keep for its id
            if gw.thread_events is not None:
                gw.thread_events.drop(thread_id)  # (kept, each refused id held a log and a task for ten minutes)
        return _error(command_id, exc.code, exc.message)
    return JSONResponse(
        {"type": "success", "id": command_id, "result": result, "meta": {"applied_through_seq": applied_through}}
    )


def _stream_filter(body: Any) -> tuple[EventFilter, int | None]:
    """The stream's filter and ``since`` from its body (400 for what cannot be one)."""
    if not isinstance(body, dict):
        raise HTTPException(
            400, f"Send a JSON object: {{channels: [...], namespaces?, depth?, since?}}; channels are {CHANNEL_HELP}"
        )
    try:
        channels = _channels(body.get("channels"), "stream")
    except CommandError as exc:
        raise HTTPException(400, exc.message) from None
    namespaces = body.get("namespaces")
    if namespaces is not None and not (
        isinstance(namespaces, list)
        and all(isinstance(ns, list) and all(isinstance(s, str) for s in ns) for ns in namespaces)
    ):
        raise HTTPException(
            400, 'namespaces must be an array of namespaces, each an array of strings (e.g. [["tools"]])'
        )
    for key in ("depth", "since"):
        value = body.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise HTTPException(400, f"{key} must be an integer >= 0")
    wanted = EventFilter(
        frozenset(channels), tuple(tuple(ns) for ns in namespaces) if namespaces else None, body.get("depth")
    )
    return wanted, body.get("since")


async def _frames(events: ThreadEventLog, since: int | None, wanted: EventFilter):
    yield HEARTBEAT  # at once, so headers and a first byte reach the client even on a quiet thread
    async for event in events.read(since, wanted):
        if event is None:
            yield HEARTBEAT
        else:
            yield frame(event["method"], json.dumps(event), str(event["seq"]))


@router.post(
    "/threads/{thread_id}/stream/events",
    summary="Stream the thread's protocol events",
    response_class=Response,
    openapi_extra=STREAM_DOC,
)
async def thread_events(
    thread_id: str, request: Request, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Response:
    """The thread's protocol events that match the body's filter, until the client leaves."""
    await _visible_thread(gw, thread_id, user, creating=False)
    wanted, since = _stream_filter(await _json_body(request))
    events = await _events(gw, thread_id)
    with stream_slot(gw, user) as slot:
        return EventStream(
            _frames(events, since, wanted), {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}, gw.streams, slot
        )
