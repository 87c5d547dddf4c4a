"""Error responses: every error is ``{"detail": "<what failed and what to do>"}``.

Validation errors (malformed JSON, wrong field types) answer 422 with one readable sentence per
problem in ``detail`` and the raw list in ``errors``; run-manager errors keep their status
(409 busy thread, 404 unknown run, 400 nothing to resume, 422 input the graph cannot take, 429
a user's run limits, 503 with Retry-After a full run queue). PostgreSQL that cannot be reached
(down, restarting, out of connections: psycopg's ``OperationalError``, the pools' ``PoolTimeout``)
answers 503 with Retry-After, not a 500 that reads as a bug.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from herdsman.logs import get_logger
from herdsman.runtime.runs.run_input import holds_invalid_unicode
from herdsman.runtime.runs.runs import InvalidRunError, RunError
from herdsman.sandbox.base import SandboxError
from herdsman_gateway.schemas import UNSTORABLE

log = get_logger(__name__)


def _describe(error: dict[str, Any]) -> str:
    """One sentence for one pydantic error."""
    loc = [str(p) for p in error.get("loc", ()) if p != "body"]
    where = ".".join(loc) if loc else "the request body"
    if error.get("type") == "json_invalid":
        reason = (error.get("ctx") or {}).get("error", "invalid JSON")
        return f"the request body is not valid JSON ({reason}); send a JSON object with Content-Type: application/json"
    if not loc and error.get("type") in ("model_attributes_type", "dict_type", "model_type"):
        return "the request body must be a JSON object; send JSON with Content-Type: application/json"
    if error.get("type") == UNSTORABLE:  # names its own field
        return str(error.get("msg"))
    if error.get("type") == "missing":
        return f"{where} is required"
    if error.get("type") == "string_unicode":  # a lone surrogate (\ud800) in a JSON string
        return f"{where} is not valid Unicode text; send UTF-8 text without lone surrogates"
    return f"{where}: {error.get('msg', 'invalid value')}"


async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    """422 with a readable ``detail``."""
    errors = exc.errors()
    detail = "; ".join(_describe(e) for e in errors) or "invalid request"
    named = any(e.get("type") in (UNSTORABLE, "string_unicode") for e in errors)  # already says where
    if not named and holds_invalid_unicode(getattr(exc, "body", None)):  # the run input's own check
        detail = "the body holds text that is not valid Unicode (a lone surrogate such as \\ud800); send UTF-8 text"
    safe = [{k: v for k, v in e.items() if k in ("type", "loc", "msg")} for e in errors]
    return JSONResponse({"detail": f"Invalid request: {detail}", "errors": safe}, status_code=422)


async def run_error(request: Request, exc: RunError) -> JSONResponse:
    """The run manager's refusal, with its status (a refused field also in ``errors``, like 422s
    of malformed requests)."""
    body: dict[str, Any] = {"detail": str(exc)}
    if isinstance(exc, InvalidRunError):
        body["errors"] = [{"type": "invalid_run", "loc": ["body", *exc.field.split(".")], "msg": str(exc)}]
    retry_after = getattr(exc, "retry_after", None)
    headers = {"Retry-After": str(retry_after)} if retry_after else None
    return JSONResponse(body, status_code=exc.status, headers=headers)


async def sandbox_error(request: Request, exc: SandboxError) -> JSONResponse:
    """A file operation the sandbox refused (bad path, missing file)."""
    return JSONResponse({"detail": str(exc)}, status_code=400)


# FastAPI's own words for a body its JSON parser gave up on (not UTF-8, nested too deeply)
UNPARSED_BODY = "There was an error parsing the body"


async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    """HTTP errors raised by routes, as ``{"detail": ...}``."""
    detail = exc.detail
    if exc.status_code == 400 and detail == UNPARSED_BODY:
        detail = (
            "Invalid request: the body could not be parsed as JSON (it is not UTF-8, or it is nested too deeply); "
            "send a JSON object in UTF-8 with Content-Type: application/json"
        )
    return JSONResponse({"detail": detail}, status_code=exc.status_code, headers=exc.headers)


async def unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    """A bug: log it with its traceback, answer 500 without internals."""
    log.exception("unhandled_error", path=request.url.path)
    return JSONResponse(
        {"detail": f"Internal error ({type(exc).__name__}); the gateway log has the details"}, status_code=500
    )


DATABASE_RETRY_AFTER_SECONDS = 5


async def database_unavailable(request: Request, exc: Exception) -> JSONResponse:
    """PostgreSQL could not answer (psycopg's ``OperationalError``): 503, try again later."""
    log.warning("database_unavailable", path=request.url.path, error=f"{type(exc).__name__}: {exc}")
    return JSONResponse(
        {
            "detail": f"The database is unavailable ({type(exc).__name__}); try again in a moment. If it lasts, "
            "check that the PostgreSQL server of checkpointer.url (and memory.url) is running and "
            "accepts connections (the gateway log has the details)"
        },
        status_code=503,
        headers={"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)},
    )


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers above on ``app``."""
    app.add_exception_handler(RequestValidationError, validation_error)  # type: ignore[arg-type]  # Starlette types a handler as taking any Exception; this one is registered for its own class only
    app.add_exception_handler(RunError, run_error)  # type: ignore[arg-type]  # Starlette types a handler as taking any Exception; this one is registered for its own class only
    app.add_exception_handler(SandboxError, sandbox_error)  # type: ignore[arg-type]  # Starlette types a handler as taking any Exception; this one is registered for its own class only
    app.add_exception_handler(StarletteHTTPException, http_error)  # type: ignore[arg-type]  # Starlette types a handler as taking any Exception; this one is registered for its own class only
    app.add_exception_handler(Exception, unexpected_error)
    try:
        from psycopg import OperationalError
    except ImportError:  # installed with the postgres extra only
        return
    app.add_exception_handler(OperationalError, database_unavailable)
