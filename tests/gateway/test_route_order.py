"""The runs routes are matched first (``langgraph_api.MODULES``, for the speed of a new run); this
holds only while none of them takes a request meant for a route of another module."""

from __future__ import annotations

import re

from fastapi import APIRouter

from herdsman_gateway.langgraph_api import MODULES
from herdsman_gateway.routes import runs


def _sample(path: str) -> str:
    """A concrete path of a route's template (each ``{param}`` a plain value)."""
    return re.sub(r"\{[^}]+\}", "abc", path)


def _shadowed(first: list, later: list) -> list[tuple[str, list[str], str]]:
    """Routes of ``later`` that a route of ``first`` (matched before them) would take."""
    return [
        (other.path, sorted(other.methods), mine.path)
        for other in later
        for mine in first
        if mine.methods & other.methods and mine.path != other.path and mine.path_regex.match(_sample(other.path))
    ]


def test_the_runs_routes_come_first_and_take_no_other_routes_request() -> None:
    assert MODULES[0] is runs
    others = [route for module in MODULES[1:] for route in module.router.routes]
    assert others and _shadowed(runs.router.routes, others) == []


def test_the_shadowing_check_finds_a_parameter_taking_a_later_fixed_segment() -> None:
    router = APIRouter()
    router.add_api_route("/threads/{thread_id}/runs/{run_id}", lambda: None, methods=["GET"])
    router.add_api_route("/threads/{thread_id}/runs/search", lambda: None, methods=["GET"])
    router.add_api_route("/threads/{thread_id}/runs/search", lambda: None, methods=["POST"])
    first, *later = router.routes
    assert _shadowed([first], later) == [
        ("/threads/{thread_id}/runs/search", ["GET"], "/threads/{thread_id}/runs/{run_id}")
    ]
