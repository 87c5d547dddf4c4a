"""The LangGraph-compatible API: every resource router, served at ``/`` and ``/api/langgraph``."""

from __future__ import annotations

from fastapi import APIRouter

from herdsman_gateway.routes import assistants, crons, info, runs, state, store, thread_protocol, thread_stream, threads

PREFIXES = ("", "/api/langgraph")
MODULES = (runs, info, assistants, threads, state, thread_stream, thread_protocol, crons, store)  # in matching order


def langgraph_router() -> APIRouter:
    """One router holding the runs, info, assistants, threads, state, thread stream, thread protocol, crons and
    store routes.

    The runs come first: a request is matched against the routes in order, and FastAPI's match of
    one route costs tens of microseconds, so a new streamed run reached after some fifty others
    spent most of its gateway CPU in routing (measured with cProfile during a burst of 100). No
    route of the others matches a path and method of the runs' (checked in the tests).
    """
    router = APIRouter()
    for module in MODULES:
        router.include_router(module.router)
    return router
