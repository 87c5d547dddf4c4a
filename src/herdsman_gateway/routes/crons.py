"""Crons (LangGraph API ``/runs/crons``): schedules that start a run on a thread, or on a new
thread, each time they fire.

The cron keeps the run's payload (input, config, metadata...) as a ``RunCreate`` body; each
firing starts it as the cron's owner with :func:`fire`, exactly as ``POST /threads/{id}/runs``
or ``POST /runs`` would. A cron without thread runs on a new thread that is deleted after the
run, unless ``on_run_completed: keep``. With auth on, a user sees and changes only their own
crons (another's answers 404, like one that does not exist), and a thread's crons are its
owner's. Deleting a thread deletes its crons. ``webhook`` is stored but never called.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Query, Response
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from herdsman.runtime.crons.cron_schedule import ScheduleError, check_schedule, check_timezone, iso, parse_time
from herdsman.runtime.crons.cron_store import SCAN_LIMIT, CronStore
from herdsman.runtime.runs.runs import FINAL_STATUSES
from herdsman.runtime.runs.runs import Run as RunRecord
from herdsman_gateway.auth import current_user
from herdsman_gateway.container import Gateway, get_gateway
from herdsman_gateway.routes.assistants import load_assistant
from herdsman_gateway.routes.runs import run_spec, start_run
from herdsman_gateway.routes.threads import load_thread
from herdsman_gateway.schemas import Cron, CronCount, CronCreate, CronFiring, CronPatch, CronSearch, RunCreate

router = APIRouter(tags=["crons"])

# the fields of a cron body that make up the run it starts (kept in the cron's ``payload``)
RUN_FIELDS = (
    "assistant_id",
    "input",
    "metadata",
    "config",
    "context",
    "webhook",
    "interrupt_before",
    "interrupt_after",
    "multitask_strategy",
    "stream_mode",
    "stream_subgraphs",
    "stream_resumable",
    "durability",
)
CRON_FIELDS = ("schedule", "timezone", "end_time", "enabled", "on_run_completed")


def _now() -> datetime:
    return datetime.now(UTC)


def _run_body(payload: dict[str, Any], on_run_completed: str | None = None) -> RunCreate:
    """The ``RunCreate`` body a firing sends; 422 when the payload is not one."""
    try:
        return RunCreate(**payload, on_completion="keep" if on_run_completed == "keep" else None)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors())
        raise HTTPException(422, f"Invalid request: {problems}") from None


async def fire(gw: Gateway, cron: dict[str, Any]) -> RunRecord:
    """Start the cron's run as its owner: on its thread (404 if that thread is gone), else on a new one."""
    body = _run_body(cron["payload"], cron.get("on_run_completed"))
    body.metadata = {**(cron.get("metadata") or {}), **(body.metadata or {}), "cron_id": cron["cron_id"]}
    return await start_run(gw, cron.get("thread_id"), body, cron.get("user_id"))


def _checked(fields: dict[str, Any], now: datetime) -> None:
    """422 for a schedule, timezone or end time that cannot work (``fields`` get their stored form)."""
    try:
        if "schedule" in fields:
            fields["schedule"] = check_schedule(fields["schedule"])
        if "timezone" in fields:
            check_timezone(fields["timezone"])
        if fields.get("end_time") is not None:
            end = parse_time(fields["end_time"])
            if end is not None and end <= now:
                raise ScheduleError(f"end_time {fields['end_time']!r} is in the past; send a later time or omit it")
            fields["end_time"] = iso(end)
    except ScheduleError as exc:
        raise HTTPException(422, f"Invalid request: {exc}") from None


async def _check_payload(gw: Gateway, payload: dict[str, Any], thread_id: str | None, user: str | None) -> None:
    """422 (or 404 for an assistant the user cannot see) when the run the cron would start cannot be created."""
    body = _run_body(payload)
    assistant = await load_assistant(gw, body.assistant_id, user)  # a custom agent of the user's, or the lead
    spec = run_spec(thread_id or "cron-check", body, assistant, user)
    gw.runs.check(spec)  # as a run would be checked: a bad field is 422, a model config.yaml lacks 400


async def cron_json(gw: Gateway, cron: dict[str, Any]) -> dict[str, Any]:
    """The cron as the API shows it, with its latest firing as ``last_run``.

    A firing still shown in progress whose run record says it ended (the process that fired
    it stopped before it could write the outcome) is brought up to date from that record.
    """
    latest = await _crons(gw).firings(cron["cron_id"], limit=1)
    last = latest[0] if latest else None
    if last is not None and last["status"] not in FINAL_STATUSES and last["run_id"] and last["thread_id"]:
        run = await gw.threads.get_run(last["thread_id"], last["run_id"])
        if run is not None and run.get("status") in FINAL_STATUSES:
            error = (run.get("error") or {}).get("message")
            await _crons(gw).set_firing(cron["cron_id"], last["scheduled_at"], run["status"], error=error)
            last = {**last, "status": run["status"], "error": error}
    return {**cron, "last_run": last}


def _crons(gw: Gateway) -> CronStore:
    if gw.crons is None:
        raise HTTPException(503, "Crons are not available on this gateway (it was started without its cron store)")
    return gw.crons


async def _create(gw: Gateway, body: CronCreate, thread_id: str | None, user: str | None) -> dict[str, Any]:
    now = _now()
    limit = gw.config.gateway.max_crons_per_user
    if len(await _crons(gw).search(user_id=user, limit=limit)) >= limit:
        raise HTTPException(
            409,
            f"You have {limit} crons, the most gateway.max_crons_per_user allows; delete one "
            "(DELETE /runs/crons/{cron_id}) or ask the operator to raise the limit",
        )
    fields = body.model_dump(exclude_none=True)
    _checked(fields, now)
    payload = {k: fields[k] for k in RUN_FIELDS if k in fields}
    if thread_id is not None:
        payload.setdefault("multitask_strategy", "enqueue")  # LangGraph's default for a thread's cron
    await _check_payload(gw, payload, thread_id, user)
    cron = {k: fields[k] for k in CRON_FIELDS if k in fields}
    if thread_id is None:
        cron.setdefault("on_run_completed", "delete")
    record = await _crons(gw).create(
        {
            **cron,
            "assistant_id": body.assistant_id,
            "thread_id": thread_id,
            "user_id": user,
            "metadata": body.metadata or {},
            "payload": payload,
        },
        now,
    )
    return await cron_json(gw, record)


async def load_cron(gw: Gateway, cron_id: str, user: str | None) -> dict[str, Any]:
    """The cron if ``user`` may see it, else 404."""
    cron = await _crons(gw).get(cron_id)
    if cron is None or (user is not None and cron.get("user_id") != user):
        raise HTTPException(404, f"Cron {cron_id} not found; list crons with POST /runs/crons/search")
    return cron


@router.post("/runs/crons", response_model=Cron, summary="Create a cron that runs on a new thread each time")
async def create_cron(
    body: CronCreate, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Any:
    """Schedule a run; each firing creates a thread, deleted after the run unless ``on_run_completed: keep``."""
    return await _create(gw, body, None, user)


@router.post("/threads/{thread_id}/runs/crons", response_model=Cron, summary="Create a cron that runs on a thread")
async def create_thread_cron(
    thread_id: str, body: CronCreate, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Any:
    """Schedule a run on the thread (queued behind a run in progress unless ``multitask_strategy`` says otherwise)."""
    await load_thread(gw, thread_id, user)
    if body.on_run_completed is not None:
        raise HTTPException(
            422, "Invalid request: on_run_completed is for crons without a thread; omit it for a thread's cron"
        )
    return await _create(gw, body, thread_id, user)


@router.post("/runs/crons/search", response_model=list[Cron], summary="Search crons")
async def search_crons(
    body: CronSearch, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Any:
    """The caller's crons matching the filters, newest first unless ``sort_by``/``sort_order`` say
    otherwise; ``select`` keeps only those fields of each."""
    unknown = sorted(set(body.select or ()) - set(Cron.model_fields) - {"now"})  # "now": the SDK may ask, none is kept
    if unknown:
        raise HTTPException(
            422, f"Invalid request: select: unknown field(s) {unknown}; choose from {sorted(Cron.model_fields)}"
        )
    found = await _crons(gw).search(
        user_id=user,
        assistant_id=body.assistant_id,
        thread_id=body.thread_id,
        enabled=body.enabled,
        metadata=body.metadata,
        limit=body.limit,
        offset=body.offset,
        sort_by=body.sort_by,
        sort_order=body.sort_order,
    )
    crons = [await cron_json(gw, c) for c in found]
    if body.select:  # a part of each cron: answered as is, not as a whole Cron
        return JSONResponse([{k: v for k, v in c.items() if k in body.select} for c in crons])
    return crons


@router.post("/runs/crons/count", response_model=int, summary="Count crons")
async def count_crons(
    body: CronCount, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> int:
    """How many of the caller's crons match the filters."""
    found = await _crons(gw).search(
        user_id=user, assistant_id=body.assistant_id, thread_id=body.thread_id, metadata=body.metadata, limit=SCAN_LIMIT
    )
    return len(found)


@router.get("/runs/crons/{cron_id}", response_model=Cron, summary="Get a cron")
async def get_cron(cron_id: str, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)) -> Any:
    """The cron with its next run date and latest firing."""
    return await cron_json(gw, await load_cron(gw, cron_id, user))


@router.get("/runs/crons/{cron_id}/firings", response_model=list[CronFiring], summary="List a cron's firings")
async def list_firings(
    cron_id: str,
    limit: int = Query(20, ge=1, le=1000),
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> Any:
    """Each time the cron fired, newest first: when, its run and thread, and how the run ended."""
    await load_cron(gw, cron_id, user)
    return await _crons(gw).firings(cron_id, limit=limit)


@router.patch("/runs/crons/{cron_id}", response_model=Cron, summary="Update a cron")
async def patch_cron(
    cron_id: str, body: CronPatch, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Any:
    """Change the schedule, run payload or ``enabled``; the next run date is planned again from now."""
    cron = await load_cron(gw, cron_id, user)
    sent = body.model_dump(exclude_unset=True)
    if not sent:
        raise HTTPException(
            400, 'Invalid request: the body changes nothing; send at least one field, e.g. {"enabled": false}'
        )
    if cron["thread_id"] is not None and sent.get("on_run_completed") is not None:
        raise HTTPException(
            422, "Invalid request: on_run_completed is for crons without a thread; omit it for a thread's cron"
        )
    now = _now()
    fields = {k: v for k, v in sent.items() if v is not None or k == "end_time"}
    _checked(fields, now)
    payload = {k: fields[k] for k in RUN_FIELDS if k in fields}
    await _check_payload(gw, {**cron["payload"], **payload}, cron["thread_id"], user)
    changes: dict[str, Any] = {k: fields[k] for k in CRON_FIELDS if k in fields}
    if "metadata" in fields:
        changes["metadata"] = fields["metadata"]
    updated = await _crons(gw).update(cron_id, {**changes, "payload": payload}, now)
    if updated is None:
        raise HTTPException(404, f"Cron {cron_id} not found; list crons with POST /runs/crons/search")
    return await cron_json(gw, updated)


@router.delete("/runs/crons/{cron_id}", status_code=204, response_class=Response, summary="Delete a cron")
async def delete_cron(
    cron_id: str, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Response:
    """Stop the schedule and forget it and its firings (runs it started stay on their threads)."""
    await load_cron(gw, cron_id, user)
    await _crons(gw).delete(cron_id)
    return Response(status_code=204)
