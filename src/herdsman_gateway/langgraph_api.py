"""The LangGraph-compatible API: every resource router, served at ``/`` and ``/api/langgraph``."""

from __future__ import annotations

from fastapi import APIRouter

from herdsman_gateway.routes import assistants, crons, info, runs, state, store, thread_protocol, thread_stream, threads

PREFIXES = ("", "/api/langgraph")


def langgraph_router() -> APIRouter:
    """One router holding the info, assistants, threads, state, thread stream, thread protocol, crons, runs and
    store routes."""
    router = APIRouter()
    for module in (info, assistants, threads, state, thread_stream, thread_protocol, crons, runs, store):
        router.include_router(module.router)
    return router
