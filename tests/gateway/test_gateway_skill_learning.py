"""Skills learned from runs, over the gateway (issue 34, item 4), with API keys and the official
``langgraph-sdk`` client: a run that worked is proposed to its user only; another user gets 404 on
it; accepted, it is the user's own skill, which ``/name`` activates in a later thread (and only
for them); declined, it is gone. Bash runs in the real sandbox."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk import get_client

from herdsman.models.scripted import ScriptedChatModel
from tests.gateway.gateway_support import running_gateway
from tests.skills.learning_support import CSV_CALLS, CSV_REQUEST, scripted_work
from tests.support import make_config

ANA, BO = {"x-api-key": "key-ana"}, {"x-api-key": "key-bo"}
KEYS = [{"key": "key-ana", "user": "ana"}, {"key": "key-bo", "user": "bo"}]
WORK = [(name, args) for name, args, _ in CSV_CALLS]


def learning_config(home: Path, root: Path) -> Any:
    """Learning on, two users, bash in the sandbox (isolated when bubblewrap works here)."""
    (root / "public").mkdir(parents=True, exist_ok=True)
    return make_config(
        home,
        skills={"path": str(root), "learning": {"enabled": True}},
        gateway={"api_keys": KEYS},
        sandbox={"allow_unisolated_bash": True},
    )


async def run_on_new_thread(url: str, headers: dict[str, str], text: str, csv: bytes | None = None) -> str:
    """Make a thread (with ``sales.csv`` uploaded when given), run ``text`` on it to the end; its id."""
    client = get_client(url=url, api_key=headers["x-api-key"])
    thread = await client.threads.create()
    if csv is not None:
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as http:
            up = await http.post(
                f"/api/threads/{thread['thread_id']}/uploads", files=[("files", ("sales.csv", csv, "text/csv"))]
            )
            assert up.status_code in (200, 201), up.text
    await client.runs.wait(thread["thread_id"], "lead_agent", input={"messages": [{"role": "user", "content": text}]})
    return thread["thread_id"]


async def proposals(http: httpx.AsyncClient, headers: dict[str, str], wanted: int, seconds: float = 30) -> list[dict]:
    """The caller's proposals once there are ``wanted`` (they are drafted after the run, in the background)."""
    for _ in range(int(seconds / 0.1)):
        found = (await http.get("/api/skills/proposals", headers=headers)).json()["proposals"]
        if len(found) >= wanted:
            return found
        await asyncio.sleep(0.1)
    raise AssertionError(f"{wanted} proposal(s) expected, found {found}")


def system_text(model: ScriptedChatModel, request: str) -> str:
    """The system message of the model's call on the user message ``request`` (with or without
    the uploads notice under it)."""
    for call in reversed(model.calls):
        if any(m.type == "human" and (m.text == request or m.text.startswith(f"{request}\n\n")) for m in call.messages):
            return call.messages[0].text
    raise AssertionError(f"no model call saw {request!r}")


async def test_a_proposal_is_its_users_to_review_and_accepted_it_is_their_skill(home: Path, tmp_path: Path) -> None:
    config = learning_config(home, tmp_path / "skills")
    model = ScriptedChatModel(respond=scripted_work(WORK))
    with running_gateway(config, model=model) as gw:
        async with httpx.AsyncClient(base_url=gw.url, timeout=60) as http:
            thread = await run_on_new_thread(gw.url, ANA, CSV_REQUEST, b"region,amount\nnorth,2\nsouth,3.5\n")
            out = await http.get(f"/api/threads/{thread}/artifacts/mnt/user-data/outputs/summary.json", headers=ANA)
            assert out.status_code == 200 and json.loads(out.content) == {"rows": 2, "total": 5.5}  # the run worked

            [listed] = await proposals(http, ANA, 1)
            name = listed["name"]
            assert listed["thread_id"] == thread and [p["name"] for p in listed["parameters"]] == [
                "input",
                "column",
                "output",
            ]
            assert (await http.get("/api/skills/proposals", headers=BO)).json() == {
                "proposals": [],
                "learning_enabled": True,
            }
            for method, path in (("GET", ""), ("POST", "/accept"), ("POST", "/decline")):
                theirs = await http.request(method, f"/api/skills/proposals/{name}{path}", headers=BO)
                assert theirs.status_code == 404, (method, path, theirs.text)
            assert [
                s["name"] for s in (await http.get("/api/skills", headers=ANA)).json()["skills"]
            ] == []  # not before accept

            shown = (await http.get(f"/api/skills/proposals/{name}", headers=ANA)).json()
            assert list(shown["files"]) == ["SKILL.md", "scripts/summarize.py"]
            assert f"/mnt/skills/users/ana/{name}/scripts/summarize.py --input" in shown["files"]["SKILL.md"]
            assert str(tmp_path) not in json.dumps(shown)  # no host path

            accepted = await http.post(f"/api/skills/proposals/{name}/accept", headers=ANA)
            assert accepted.status_code == 201, accepted.text
            assert accepted.json()["skill"]["scope"] == "own"
            assert accepted.json()["skill"]["path"] == f"/mnt/skills/users/ana/{name}/SKILL.md"
            assert [s["name"] for s in (await http.get("/api/skills", headers=ANA)).json()["skills"]] == [name]
            assert (await http.get("/api/skills", headers=BO)).json()["skills"] == []
            assert (await http.get("/api/skills/proposals", headers=ANA)).json()["proposals"] == []

            # a later thread: /name activates ana's own skill for ana, and is unknown to bo
            await run_on_new_thread(gw.url, ANA, f"/{name} sum the price column of costs.csv")
            mine = system_text(model, f"/{name} sum the price column of costs.csv")
            assert f'<active_skill name="{name}" path="/mnt/skills/users/ana/{name}">' in mine
            assert "--column" in mine and "<skill_not_found>" not in mine
            await run_on_new_thread(gw.url, BO, f"/{name} for bo")
            theirs = system_text(model, f"/{name} for bo")
            assert "<skill_not_found>" in theirs and "<active_skill" not in theirs and "summarize.py" not in theirs

            # a later thread that names no skill lists ana's skills beside the shared ones
            await run_on_new_thread(gw.url, ANA, "hello there")
            assert f"- {name}: read /mnt/skills/users/ana/{name}/SKILL.md." in system_text(model, "hello there")

            # the same request again: the harness activates ana's skill for it (skills.auto_select),
            # and a run that followed a skill proposes none
            await run_on_new_thread(gw.url, ANA, CSV_REQUEST, b"region,amount\nwest,1\n")
            assert f'<active_skill name="{name}"' in system_text(model, CSV_REQUEST)
            await asyncio.sleep(1)  # proposals are drafted in the background after the run
            assert (await http.get("/api/skills/proposals", headers=ANA)).json()["proposals"] == []

            # declined: gone, nothing installed (bo has no skill, so his run is proposed)
            await run_on_new_thread(gw.url, BO, CSV_REQUEST, b"region,amount\nwest,1\n")
            [again] = await proposals(http, BO, 1)
            declined = await http.post(f"/api/skills/proposals/{again['name']}/decline", headers=BO)
            assert declined.status_code == 200 and declined.json() == {"declined": again["name"]}
            assert (await http.get("/api/skills/proposals", headers=BO)).json()["proposals"] == []
            assert (await http.get("/api/skills", headers=BO)).json()["skills"] == []
            assert [s["name"] for s in (await http.get("/api/skills", headers=ANA)).json()["skills"]] == [name]


async def test_accepting_an_edited_proposal_checks_it_again(home: Path, tmp_path: Path) -> None:
    config = learning_config(home, tmp_path / "skills")
    with running_gateway(config, model=ScriptedChatModel(respond=scripted_work(WORK))) as gw:
        async with httpx.AsyncClient(base_url=gw.url, timeout=60) as http:
            await run_on_new_thread(gw.url, ANA, CSV_REQUEST, b"region,amount\nnorth,2\n")
            [listed] = await proposals(http, ANA, 1)
            name = listed["name"]
            text = (await http.get(f"/api/skills/proposals/{name}", headers=ANA)).json()["files"]["SKILL.md"]
            hostile = text.replace("set -e", "set -e\ncp /etc/shadow /mnt/user-data/outputs/")
            refused = await http.post(f"/api/skills/proposals/{name}/accept", headers=ANA, json={"content": hostile})
            assert refused.status_code == 422 and "/etc/shadow" in refused.json()["detail"]
            assert "nothing was installed" in refused.json()["detail"]
            broken = await http.post(
                f"/api/skills/proposals/{name}/accept", headers=ANA, json={"content": "no front matter"}
            )
            assert broken.status_code == 422 and "front matter" in broken.json()["detail"]
            assert (await http.get("/api/skills", headers=ANA)).json()["skills"] == []

            edited = text.replace(f"name: {name}", "name: column-total").replace("# Summarize", "# Column total")
            done = await http.post(f"/api/skills/proposals/{name}/accept", headers=ANA, json={"content": edited})
            assert done.status_code == 201 and done.json()["skill"]["name"] == "column-total"
            body = (await http.get("/api/skills/column-total", headers=ANA)).json()["content"]
            assert "/mnt/skills/users/ana/column-total/scripts/summarize.py" in body


async def test_no_proposal_when_learning_is_off_or_the_run_failed(home: Path, tmp_path: Path) -> None:
    root = tmp_path / "skills"
    (root / "public").mkdir(parents=True)
    off = make_config(
        home, skills={"path": str(root)}, gateway={"api_keys": KEYS}, sandbox={"allow_unisolated_bash": True}
    )
    failing = [*WORK[:2], ("bash", {"command": "python3 /mnt/user-data/workspace/summarize.py --no-such"})]
    with running_gateway(off, model=ScriptedChatModel(respond=scripted_work(WORK))) as gw:
        async with httpx.AsyncClient(base_url=gw.url, timeout=60) as http:
            await run_on_new_thread(gw.url, ANA, CSV_REQUEST, b"region,amount\nnorth,2\n")
            await asyncio.sleep(1)
            assert (await http.get("/api/skills/proposals", headers=ANA)).json() == {
                "proposals": [],
                "learning_enabled": False,
            }
    config = learning_config(tmp_path / "home2", root)
    with running_gateway(config, model=ScriptedChatModel(respond=scripted_work(failing))) as gw:
        async with httpx.AsyncClient(base_url=gw.url, timeout=60) as http:
            await run_on_new_thread(gw.url, ANA, CSV_REQUEST)  # no upload: the script fails
            await asyncio.sleep(1)
            assert (await http.get("/api/skills/proposals", headers=ANA)).json()["proposals"] == []
