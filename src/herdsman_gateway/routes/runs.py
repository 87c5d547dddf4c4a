"""Runs: create (streamed, waited for, or in the background), list, get, join, cancel.

Runs belong to the run manager, not to the request that created them: a streamed run keeps
going when its client disconnects (unless ``on_disconnect: cancel``), and anyone may join its
stream again with ``Last-Event-ID``. Stateless runs (``/runs/...`` without a thread) use a
temporary thread, deleted at the end unless ``on_completion: keep``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends, Header, HTTPException, Query, Response

from herdsman.runtime.runs.runs import FINAL_STATUSES, RunError, RunSpec
from herdsman.runtime.runs.runs import Run as RunRecord
from herdsman.runtime.storage.assistants import AssistantRecord, run_config_on
from herdsman.runtime.storage.threads import ThreadRecord
from herdsman_gateway.auth import current_user, owns, with_owner
from herdsman_gateway.container import Gateway, get_gateway
from herdsman_gateway.routes.assistants import load_assistant
from herdsman_gateway.routes.threads import check_thread_id, check_thread_room, load_thread, not_found, note_owner
from herdsman_gateway.schemas import Run, RunCreate, RunsCancel
from herdsman_gateway.sse import run_path, stream_response, stream_slot

router = APIRouter(tags=["runs"])


async def _thread_for_run(gw: Gateway, thread_id: str, body: RunCreate, user: str | None) -> ThreadRecord:
    record = await gw.threads.get(thread_id)
    if record is None and body.if_not_exists == "create":
        check_thread_id(thread_id)
        await check_thread_room(gw, user)
        record = await gw.threads.create(thread_id, with_owner(None, user), if_exists="do_nothing")
        if not owns(record.metadata, user):  # another user made it meanwhile: theirs, not a thread to run on
            raise not_found(thread_id)
        await note_owner(gw, record, user)
        return record
    record = await load_thread(gw, thread_id, user)
    if record.metadata.get("temporary") and (stateless := await gw.runs.temporary_run(thread_id)) is not None:
        raise HTTPException(  # it would run on a deleted thread, leaving files and checkpoints nothing reaches
            409,
            f"Thread {thread_id} is the temporary thread of stateless run {stateless}, deleted with it when that "
            "run ends; create a thread (POST /threads) to run more than once on it, or send on_completion: keep "
            "with the stateless run",
        )
    return record


def run_config_for(config: dict[str, Any] | None, user: str | None) -> dict[str, Any] | None:
    """The run's config; with auth on, ``configurable.user_id`` is always the caller's user, so a
    run reads and writes only its own user's memory, whatever the client sent."""
    if user is None:
        return config
    config = dict(config or {})
    config["configurable"] = {**(config.get("configurable") or {}), "user_id": user}
    return config


def run_spec(
    thread_id: str, body: RunCreate, assistant: AssistantRecord, user: str | None = None, *, temporary: bool = False
) -> RunSpec:
    """The run manager's spec for ``body`` on ``thread_id`` on ``assistant``, run as ``user``."""
    config, context = run_config_on(assistant, body.config, body.context)  # the custom agent's settings
    checkpoint_id = body.checkpoint_id or (body.checkpoint.checkpoint_id if body.checkpoint else None)
    return RunSpec(
        thread_id=thread_id,
        assistant_id=assistant.assistant_id,
        input=body.input,
        command=body.command.model_dump(exclude_none=True) if body.command else None,
        config=run_config_for(config, user),
        context=context,
        metadata=dict(body.metadata or {}),
        stream_mode=[body.stream_mode] if isinstance(body.stream_mode, str) else list(body.stream_mode),
        stream_subgraphs=body.stream_subgraphs,
        stream_resumable=body.stream_resumable,
        on_disconnect=body.on_disconnect,
        multitask_strategy=body.multitask_strategy,
        checkpoint_id=checkpoint_id,
        checkpoint_ns=body.checkpoint.checkpoint_ns if body.checkpoint else "",
        interrupt_before=body.interrupt_before,
        interrupt_after=body.interrupt_after,
        durability=body.durability,
        temporary=temporary,
        user=user,
    )


async def start_run(
    gw: Gateway, thread_id: str | None, body: RunCreate, user: str | None, *, saved: bool = True
) -> RunRecord:
    """Create the run the body asks for (on a temporary thread when ``thread_id`` is None).

    With ``saved`` (every route but the streamed ones), wait until the run's record is written,
    so a client that reads runs or the thread's status next finds them (and answer with the error
    when it could not be). A streamed run answers with its ``metadata`` event first, as soon as
    the run is queued; its record follows at once (an ``error`` event when it cannot be written).
    """
    assistant = await load_assistant(gw, body.assistant_id, user)
    if thread_id is None:
        await check_thread_room(gw, user)
        record = await gw.threads.create(None, with_owner({"temporary": True}, user))
        await note_owner(gw, record, user)
        spec = run_spec(record.thread_id, body, assistant, user, temporary=body.on_completion != "keep")
    else:
        await _thread_for_run(gw, thread_id, body, user)
        spec = run_spec(thread_id, body, assistant, user)
    if spec.checkpoint_id is not None:
        await _checkpoint_exists(gw, spec)
    run = await gw.runs.start(spec)
    if saved:
        await run.saved.wait()
        if run.save_error is not None:
            raise run.save_error
    return run


async def _checkpoint_exists(gw: Gateway, spec: RunSpec) -> None:
    """404 unless the run's start checkpoint is one of its thread's: LangGraph would otherwise
    start the run from an empty state, a branch that silently lost the conversation."""
    ref = {"thread_id": spec.thread_id, "checkpoint_ns": spec.checkpoint_ns, "checkpoint_id": spec.checkpoint_id}
    if await gw.graph.checkpointer.aget_tuple({"configurable": ref}) is None:
        raise HTTPException(
            404,
            f"Checkpoint {spec.checkpoint_id} not found on thread {spec.thread_id}; list checkpoints with "
            f"POST /threads/{spec.thread_id}/history",
        )


def _located(response: Response, thread_id: str, run_id: str) -> None:
    response.headers["Content-Location"] = run_path(thread_id, run_id)


@router.post(
    "/threads/{thread_id}/runs/stream",
    summary="Create a run and stream its events",
    response_class=Response,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def stream_run(
    thread_id: str, body: RunCreate, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Response:
    """Start a run on the thread and stream it as Server-Sent Events."""
    with stream_slot(gw, user) as slot:
        run = await start_run(gw, thread_id, body, user, saved=False)
        return stream_response(
            gw,
            run.thread_id,
            run.run_id,
            cancel_on_disconnect=body.on_disconnect == "cancel",
            first=run.first_event,
            slot=slot,
        )


@router.post(
    "/runs/stream",
    summary="Create a stateless run and stream its events",
    response_class=Response,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def stream_stateless_run(
    body: RunCreate, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Response:
    """Start a run on a temporary thread and stream it."""
    with stream_slot(gw, user) as slot:
        run = await start_run(gw, None, body, user, saved=False)
        return stream_response(
            gw,
            run.thread_id,
            run.run_id,
            cancel_on_disconnect=body.on_disconnect == "cancel",
            resumable=not run.spec.temporary,
            first=run.first_event,
            slot=slot,
        )


@router.post("/threads/{thread_id}/runs", response_model=Run, summary="Create a background run")
async def create_run(
    thread_id: str,
    body: RunCreate,
    response: Response,
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> Any:
    """Start a run and return it at once; follow it with ``.../stream`` or ``.../join``."""
    run = await start_run(gw, thread_id, body, user)
    _located(response, run.thread_id, run.run_id)
    return run.to_dict()


@router.post("/runs", response_model=Run, summary="Create a stateless background run")
async def create_stateless_run(
    body: RunCreate, response: Response, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Any:
    """Start a run on a temporary thread and return it at once."""
    run = await start_run(gw, None, body, user)
    _located(response, run.thread_id, run.run_id)
    return run.to_dict()


@router.post("/runs/batch", response_model=list[Run], summary="Create a batch of stateless background runs")
async def create_run_batch(
    body: list[RunCreate] = Body(..., max_length=100),
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> Any:
    """Start one stateless background run per item, each on its own temporary thread; every item
    is checked before any run starts, so a bad one (422) starts none."""
    for index, item in enumerate(body):
        try:
            assistant = await load_assistant(gw, item.assistant_id, user)
            gw.runs.check(run_spec("", item, assistant, user, temporary=True))
        except HTTPException as exc:
            raise HTTPException(exc.status_code, f"runs[{index}]: {exc.detail}") from None
        except RunError as exc:
            raise HTTPException(exc.status, f"runs[{index}]: {exc}") from None
    return [(await start_run(gw, None, item, user)).to_dict() for item in body]


@router.post("/runs/cancel", status_code=204, response_class=Response, summary="Cancel runs")
async def cancel_runs(
    body: RunsCancel,
    action: str = Query("interrupt", pattern="^(interrupt|rollback)$"),
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> Response:
    """Cancel the runs ``run_ids`` of ``thread_id``, or every run (of the caller, with auth on)
    with ``status`` (pending, running or all)."""
    if body.status is not None:
        if body.thread_id or body.run_ids:
            raise HTTPException(
                422,
                "Send either status, or thread_id with run_ids, not both: status cancels "
                "every run with that status whatever its thread",
            )
        wanted = ("pending", "running") if body.status == "all" else (body.status,)
        targets = []
        for record in await gw.runs.in_progress():
            thread = await gw.threads.get(record["thread_id"])
            if record["status"] in wanted and thread is not None and owns(thread.metadata, user):
                targets.append((record["thread_id"], record["run_id"]))
    else:
        if not body.thread_id or not body.run_ids:
            raise HTTPException(
                422, "Send thread_id with run_ids (the runs to cancel), or status (pending, running or all)"
            )
        for run_id in body.run_ids:
            await _run(gw, body.thread_id, run_id, user)  # 404 before anything is cancelled
        targets = [(body.thread_id, run_id) for run_id in body.run_ids]
    for thread_id, run_id in targets:
        await gw.runs.cancel(thread_id, run_id, action=action)  # type: ignore[arg-type]  # the query pattern admitted only the actions cancel takes; mypy sees a str
    return Response(status_code=204)


@router.post("/threads/{thread_id}/runs/wait", summary="Create a run and wait for its final state")
async def wait_run(
    thread_id: str,
    body: RunCreate,
    response: Response,
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> dict[str, Any]:
    """Start a run and answer with the thread's values when it ends."""
    run = await start_run(gw, thread_id, body, user)
    _located(response, run.thread_id, run.run_id)
    return await gw.runs.join(run.thread_id, run.run_id)


@router.post("/runs/wait", summary="Create a stateless run and wait for its final state")
async def wait_stateless_run(
    body: RunCreate, response: Response, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> dict[str, Any]:
    """Start a run on a temporary thread and answer with its final values."""
    run = await start_run(gw, None, body, user)
    _located(response, run.thread_id, run.run_id)
    return await gw.runs.join(run.thread_id, run.run_id)


@router.get("/threads/{thread_id}/runs", response_model=list[Run], summary="List the thread's runs")
async def list_runs(
    thread_id: str,
    limit: int = Query(10, ge=0, le=1000),
    offset: int = Query(0, ge=0),
    status: str | None = None,
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> Any:
    """The thread's runs, newest first."""
    await load_thread(gw, thread_id, user)
    runs = await gw.threads.list_runs(thread_id, limit=limit, offset=offset, status=status)
    unsaved = [r.to_dict() for r in gw.runs.unsaved_runs(thread_id)]  # streamed, just created
    if unsaved and offset == 0:
        fresh = [r for r in reversed(unsaved) if status is None or r["status"] == status]
        runs = (fresh + [r for r in runs if r["run_id"] not in {f["run_id"] for f in fresh}])[:limit]
    return runs


def _not_found(thread_id: str, run_id: str) -> HTTPException:
    return HTTPException(
        404, f"Run {run_id} not found on thread {thread_id}; list runs with GET /threads/{thread_id}/runs"
    )


async def _run(gw: Gateway, thread_id: str, run_id: str, user: str | None) -> dict[str, Any]:
    await load_thread(gw, thread_id, user)
    run = await gw.runs.get(thread_id, run_id)
    if run is None:
        raise _not_found(thread_id, run_id)
    return run


@router.get("/threads/{thread_id}/runs/{run_id}", response_model=Run, summary="Get a run")
async def get_run(
    thread_id: str, run_id: str, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Any:
    """The run and its status."""
    return await _run(gw, thread_id, run_id, user)


@router.delete("/threads/{thread_id}/runs/{run_id}", status_code=204, response_class=Response, summary="Delete a run")
async def delete_run(
    thread_id: str, run_id: str, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Response:
    """Forget a finished run (cancel it first if it is in progress: 409 otherwise)."""
    run = await _run(gw, thread_id, run_id, user)
    if run["status"] not in FINAL_STATUSES:
        raise HTTPException(409, f"Run {run_id} is {run['status']}; cancel it before deleting it")
    await gw.threads.delete_run(thread_id, run_id)
    return Response(status_code=204)


@router.get(
    "/threads/{thread_id}/runs/{run_id}/stream",
    summary="Join a run's stream",
    response_class=Response,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def join_stream(
    thread_id: str,
    run_id: str,
    stream_mode: list[str] | None = Query(None, description="Only events of these stream modes."),
    cancel_on_disconnect: bool = False,
    last_event_id: str | None = Header(None, alias="Last-Event-ID", description="Resume after this event id."),
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> Response:
    """The run's events after ``Last-Event-ID`` (from the start without it), then live ones."""
    run = await _run(gw, thread_id, run_id, user)
    modes = {m for m in stream_mode or () if m}  # the SDK sends "stream_mode=" for none
    with stream_slot(gw, user) as slot:
        return stream_response(
            gw,
            thread_id,
            run_id,
            last_event_id=last_event_id,
            modes=modes or None,
            cancel_on_disconnect=cancel_on_disconnect,
            run_ended=run["status"] in FINAL_STATUSES,
            slot=slot,
        )


@router.get("/threads/{thread_id}/runs/{run_id}/join", summary="Wait for a run to end")
async def join_run(
    thread_id: str, run_id: str, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> dict[str, Any]:
    """Wait for the run to end, then answer with the thread's final values (a run a rollback removed:
    the thread's values as the rollback left them, as LangGraph's server answers, not 404)."""
    await load_thread(gw, thread_id, user)
    if await gw.runs.get(thread_id, run_id) is None and not await gw.runs.rolled_back(thread_id, run_id):
        raise _not_found(thread_id, run_id)
    return await gw.runs.join(thread_id, run_id)


@router.post("/threads/{thread_id}/runs/{run_id}/cancel", response_model=Run, summary="Cancel a run")
async def cancel_run(
    thread_id: str,
    run_id: str,
    wait: bool = False,
    action: str = Query("interrupt", pattern="^(interrupt|rollback)$"),
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> Any:
    """Stop the run (``action=rollback`` also undoes its steps); ``wait=1`` waits until it stopped."""
    await _run(gw, thread_id, run_id, user)
    return await gw.runs.cancel(thread_id, run_id, action=action, wait=wait)  # type: ignore[arg-type]  # the query pattern admitted only the actions cancel takes; mypy sees a str
