"""Red team: every route answers each key only what that key may see or change.

Finding 9 of the hardening issue: with auth on, any user's key could switch a skill off for
everyone (there was no admin role), and ``/metrics`` answered without a key. The table below
classifies every route the app serves; a route added without a class fails
``test_every_route_is_classified``, so no route slips through unreviewed. Each route is then called
without a key, with a user key where it needs an admin, and with another user's key where it
belongs to a user (404: an id of someone else's thread must not even be confirmed).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.gateway.gateway_support import RunningGateway, running_gateway, scripted_gateway, user_message
from tests.support import make_config

ANA, BO, ADMIN = "key-ana-0001", "key-bo-0002", "key-admin-0003"
PREFIX = "/api/langgraph"

PUBLIC = {
    ("GET", "/api/health"),
    ("GET", "/info"),
    ("GET", "/ok"),
}  # /ok: LangGraph's health probe  # /info: LangGraph clients probe it before they authenticate
ADMIN_ONLY = {("POST", "/api/skills/{name}/enable"), ("POST", "/api/skills/{name}/disable")}
SHARED_READ = {  # the same for every key: configuration views, the graph
    ("POST", "/assistants/search"),
    ("POST", "/assistants/count"),
    ("GET", "/assistants/{assistant_id}"),
    ("GET", "/assistants/{assistant_id}/graph"),
    ("GET", "/assistants/{assistant_id}/schemas"),
    ("GET", "/api/models"),
    ("GET", "/api/mcp/status"),
    ("GET", "/api/limits"),
    ("GET", "/api/channels"),
    ("GET", "/metrics"),
}
OWN_USER = {  # scoped to the caller: their memory, their threads in a listing, new threads and runs
    ("GET", "/api/memory"),
    ("PATCH", "/api/memory/facts/{fid}"),
    ("DELETE", "/api/memory/facts/{fid}"),
    ("GET", "/api/memory/export"),
    ("DELETE", "/api/memory"),
    ("GET", "/api/memory/graph"),
    ("DELETE", "/api/memory/entities/{eid}"),
    ("DELETE", "/api/memory/relations/{rid}"),
    ("PATCH", "/api/memory/relations/{rid}"),
    ("GET", "/api/memory/audit"),
    ("GET", "/api/memory/settings"),
    ("PUT", "/api/memory/settings"),
    ("GET", "/api/model-steps"),
    ("POST", "/threads"),
    ("POST", "/threads/search"),
    ("POST", "/threads/count"),
    ("POST", "/runs/stream"),
    ("POST", "/runs"),
    ("POST", "/runs/wait"),
    ("POST", "/assistants"),
    # the store: each key's own namespaces (tests/gateway/test_gateway_store.py tries to cross)
    ("PUT", "/store/items"),
    ("GET", "/store/items"),
    ("DELETE", "/store/items"),
    ("POST", "/store/items/search"),
    ("POST", "/store/namespaces"),
    ("POST", "/runs/crons"),
    ("POST", "/runs/crons/search"),
    ("POST", "/runs/crons/count"),
    # by the caller's thread ids or runs only (test_gateway_compat.py tries another user's)
    ("POST", "/threads/prune"),
    ("POST", "/runs/batch"),
    ("POST", "/runs/cancel"),
    # skills: the shared ones plus the caller's own, installs for the caller (shared=true needs an
    # admin key), secrets of the caller (tests/gateway/test_gateway_skill_packages.py tries another user's)
    ("GET", "/api/skills"),
    ("GET", "/api/skills/{name}"),
    ("POST", "/api/skills/install"),
    ("GET", "/api/skills/{name}/export"),
    ("GET", "/api/skills/{name}/secrets"),
    ("PUT", "/api/skills/{name}/secrets/{variable}"),
    ("DELETE", "/api/skills/{name}/secrets/{variable}"),
    # the caller's own skill proposals (tests/gateway's proposal tests try another user's: 404)
    ("GET", "/api/skills/proposals"),
    ("GET", "/api/skills/proposals/{name}"),
    ("POST", "/api/skills/proposals/{name}/accept"),
    ("POST", "/api/skills/proposals/{name}/decline"),
}
# Every route with {thread_id} belongs to the thread's owner; every other route with
# {assistant_id} reads or changes a custom agent, which belongs to its owner (the built-in
# lead_agent is read by everyone and changed by no one).


def _routes(app) -> list[tuple[str, str]]:
    found = []
    for path, ops in app.openapi()["paths"].items():
        for method in ops:
            found.append((method.upper(), path))
    return found


def _class(method: str, path: str) -> str:
    key = (method, path[len(PREFIX) :] if path.startswith(PREFIX + "/") else path)
    if key in PUBLIC:
        return "public"
    if key in ADMIN_ONLY:
        return "admin"
    if key in SHARED_READ:
        return "shared"
    if key in OWN_USER:
        return "own-user"
    if "{thread_id}" in key[1]:
        return "own-thread"
    if "{assistant_id}" in key[1]:
        return "own-assistant"
    if "{cron_id}" in key[1]:
        return "own-cron"
    return "unclassified"


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[RunningGateway]:
    skills = tmp_path / "skills" / "public" / "demo"
    skills.mkdir(parents=True)
    (skills / "SKILL.md").write_text("---\nname: demo\ndescription: A demo skill.\n---\nDemo.\n")
    config = make_config(
        tmp_path / "home",
        skills={"path": str(tmp_path / "skills")},
        memory={"enabled": True, "mode": "tool"},
        gateway={"api_keys": [ANA, {"key": BO, "role": "user"}, {"key": ADMIN, "role": "admin"}]},
    )
    with scripted_gateway(config) as served:
        yield served


def _fill(path: str, ids: dict[str, str]) -> str:
    for name, value in ids.items():
        path = path.replace("{" + name + "}", value)
    return path


def _body(method: str, path: str, ids: dict[str, str] | None = None) -> dict | None:
    if method not in ("POST", "PATCH", "PUT"):
        return None
    if path.endswith("/runs/crons"):
        return {"assistant_id": "lead_agent", "schedule": "0 9 * * *", "input": user_message("hello")}
    if path.endswith(("/runs", "/runs/stream", "/runs/wait")):
        return {"assistant_id": "lead_agent", "input": user_message("hello")}
    if path.endswith("/state"):
        return {"values": {}}
    if path.endswith("/latest"):
        return {"version": 1}
    if path.endswith("/state/checkpoint"):
        return {"checkpoint": {"checkpoint_id": (ids or {}).get("checkpoint_id", "")}}
    if "/memory/facts/" in path:
        return {"content": "x"}
    if path.endswith("/memory/settings"):
        return {"enabled": True}
    if "/memory/relations/" in path:
        return {"valid_to": "2099-01-01"}
    return {}


async def _ids(http: httpx.AsyncClient) -> dict[str, str]:
    """A thread of ana's with a finished run (its ids fill the paths)."""
    headers = {"x-api-key": ANA}
    tid = (await http.post("/threads", json={}, headers=headers)).json()["thread_id"]
    done = await http.post(f"/threads/{tid}/runs/wait", json=_body("POST", "/runs/wait"), headers=headers)
    assert done.status_code == 200, done.text
    run = (await http.get(f"/threads/{tid}/runs", headers=headers)).json()[0]
    history = (await http.post(f"/threads/{tid}/history", json={}, headers=headers)).json()
    checkpoint = history[0]["checkpoint"]["checkpoint_id"]
    await http.post(f"/api/threads/{tid}/uploads", files={"files": ("a.txt", b"ana's file")}, headers=headers)
    return {
        "thread_id": tid,
        "run_id": run["run_id"],
        "checkpoint_id": checkpoint,
        "assistant_id": "lead_agent",
        "name": "demo",
        "fid": "nope",
        "filename": "a.txt",
        "path": "mnt/user-data/uploads/a.txt",
    }


def test_every_route_is_classified(secured: RunningGateway) -> None:
    unclassified = [r for r in _routes(secured.app) if _class(*r) == "unclassified"]
    assert unclassified == [], f"classify these routes in tests/redteam/test_roles.py: {unclassified}"
    assert ("GET", "/metrics") in _routes(secured.app)


async def test_every_route_asks_for_a_key(secured: RunningGateway) -> None:
    async with httpx.AsyncClient(base_url=secured.url, timeout=30) as http:
        ids = await _ids(http)
        for method, path in _routes(secured.app):
            if _class(method, path) == "public":
                continue
            url = _fill(path, ids)
            res = await http.request(method, url, json=_body(method, path, ids))
            assert res.status_code == 401, (method, path, res.status_code, res.text[:200])


async def test_user_keys_cannot_change_shared_settings(secured: RunningGateway) -> None:
    async with httpx.AsyncClient(base_url=secured.url, timeout=30) as http:
        ids = await _ids(http)
        admin_routes = [r for r in _routes(secured.app) if _class(*r) == "admin"]
        assert admin_routes
        for method, path in admin_routes:
            for key in (ANA, BO):
                res = await http.request(method, _fill(path, ids), headers={"x-api-key": key})
                assert res.status_code == 403 and "admin" in res.json()["detail"], (method, path, res.text)
        # the fixture's demo skill: listed and on, until an admin key turns it off for everyone
        skills = (await http.get("/api/skills", headers={"x-api-key": ANA})).json()
        assert [s["enabled"] for s in skills["skills"] if s["name"] == "demo"] == [True], skills
        res = await http.post("/api/skills/demo/disable", headers={"x-api-key": ADMIN})
        assert res.status_code == 200, res.text
        skills = (await http.get("/api/skills", headers={"x-api-key": BO})).json()
        assert [s["enabled"] for s in skills["skills"] if s["name"] == "demo"] == [False], skills


async def test_another_users_key_sees_none_of_a_thread(secured: RunningGateway) -> None:
    async with httpx.AsyncClient(base_url=secured.url, timeout=30) as http:
        ids = await _ids(http)
        thread_routes = [r for r in _routes(secured.app) if _class(*r) == "own-thread"]
        assert len(thread_routes) > 20
        # reading and destroying routes last, so the thread exists for every call
        thread_routes.sort(key=lambda r: r[0] == "DELETE")
        for method, path in thread_routes:
            for key in (BO, ADMIN):  # an admin key is another user too: roles do not open threads
                res = await http.request(
                    method, _fill(path, ids), json=_body(method, path, ids), headers={"x-api-key": key}
                )
                assert res.status_code == 404, (method, path, key, res.status_code, res.text[:200])
        still = await http.get(f"/threads/{ids['thread_id']}", headers={"x-api-key": ANA})
        assert still.status_code == 200
        upload = await http.get(f"/api/threads/{ids['thread_id']}/artifacts/{ids['path']}", headers={"x-api-key": ANA})
        assert upload.content == b"ana's file"


async def test_another_users_key_sees_none_of_a_custom_agent(secured: RunningGateway) -> None:
    async with httpx.AsyncClient(base_url=secured.url, timeout=30) as http:
        ids = await _ids(http)
        made = await http.post(
            "/assistants", json={"graph_id": "lead_agent", "name": "ana's"}, headers={"x-api-key": ANA}
        )
        ids["assistant_id"] = made.json()["assistant_id"]
        ids["namespace"] = "bash"
        routes = [r for r in _routes(secured.app) if "{assistant_id}" in r[1]]
        assert len(routes) >= 9
        routes.sort(key=lambda r: r[0] == "DELETE")
        for method, path in routes:
            for key in (BO, ADMIN):
                res = await http.request(
                    method, _fill(path, ids), json=_body(method, path, ids), headers={"x-api-key": key}
                )
                assert res.status_code == 404, (method, path, key, res.status_code, res.text[:200])
        for key in (BO, ADMIN):
            listed = await http.post("/assistants/search", json={}, headers={"x-api-key": key})
            assert [a["assistant_id"] for a in listed.json()] == ["lead_agent"]
            run = await http.post("/runs/wait", json={"assistant_id": ids["assistant_id"]}, headers={"x-api-key": key})
            assert run.status_code == 404
        still = await http.get(f"/assistants/{ids['assistant_id']}", headers={"x-api-key": ANA})
        assert still.status_code == 200 and still.json()["version"] == 1


async def test_another_users_key_sees_none_of_a_cron(secured: RunningGateway) -> None:
    async with httpx.AsyncClient(base_url=secured.url, timeout=30) as http:
        ids = await _ids(http)
        made = await http.post(
            f"/threads/{ids['thread_id']}/runs/crons", headers={"x-api-key": ANA}, json=_body("POST", "/runs/crons")
        )
        assert made.status_code == 200, made.text
        ids["cron_id"] = made.json()["cron_id"]
        routes = sorted((r for r in _routes(secured.app) if "{cron_id}" in r[1]), key=lambda r: r[0] == "DELETE")
        assert len(routes) >= 4
        for method, path in routes:
            for key in (BO, ADMIN):
                res = await http.request(
                    method,
                    _fill(path, ids),
                    json=_body(method, path, ids) if method != "PATCH" else {"schedule": "0 10 * * *"},
                    headers={"x-api-key": key},
                )
                assert res.status_code == 404, (method, path, key, res.status_code, res.text[:200])
        for key in (BO, ADMIN):
            listed = await http.post("/runs/crons/search", json={}, headers={"x-api-key": key})
            assert listed.json() == []
        still = await http.get(f"/runs/crons/{ids['cron_id']}", headers={"x-api-key": ANA})
        assert still.status_code == 200 and still.json()["schedule"] == "0 9 * * *"


async def test_own_user_routes_are_scoped_to_the_caller(secured: RunningGateway) -> None:
    async with httpx.AsyncClient(base_url=secured.url, timeout=30) as http:
        await _ids(http)
        for key, expected in ((BO, 0), (ANA, 1)):
            listed = await http.post("/threads/search", json={}, headers={"x-api-key": key})
            assert len(listed.json()) == expected
            counted = await http.post("/threads/count", json={}, headers={"x-api-key": key})
            assert counted.json() == expected
        memory = await http.get("/api/memory", headers={"x-api-key": BO})
        assert (
            memory.status_code == 200
            and memory.json()["user_id"]
            != (await http.get("/api/memory", headers={"x-api-key": ANA})).json()["user_id"]
        )


async def test_metrics_key_is_a_choice(tmp_path: Path) -> None:
    for required, expected in ((True, 401), (False, 200)):
        config = make_config(
            tmp_path / f"home-{required}", gateway={"api_keys": [ANA], "metrics_require_key": required}
        )
        with running_gateway(config) as served:
            async with httpx.AsyncClient(base_url=served.url) as http:
                assert (await http.get("/metrics")).status_code == expected
                assert (await http.get("/metrics", headers={"x-api-key": ANA})).status_code == 200
