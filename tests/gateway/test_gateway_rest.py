"""REST under /api (health, models, uploads, artifacts), /metrics and /openapi.json."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.gateway.gateway_support import CLIENT, HOLD_MID, running_gateway, user_message
from tests.support import make_config


@pytest.fixture
async def http(gateway):
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30, headers=CLIENT) as client:
        yield client


async def test_health_and_models(http) -> None:
    assert (await http.get("/api/health")).json() == {"status": "ok"}
    models = (await http.get("/api/models")).json()
    assert models["default"] == "embedded" and models["models"][0]["name"] == "embedded"
    assert models["models"][0]["api_key"] == "not needed"


async def test_models_report_api_key_status_without_the_key(home, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-1234")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    config = make_config(
        home,
        models=[
            {"name": "lead", "use": "herdsman.models.scripted:ScriptedChatModel"},
            {"name": "gpt", "use": "langchain_openai:ChatOpenAI", "model": "gpt-4o-mini"},
            {"name": "own", "use": "langchain_openai:ChatOpenAI", "model": "gpt-4o", "api_key": "sk-in-config-5678"},
            {"name": "claude", "use": "langchain_anthropic:ChatAnthropic", "model": "claude-sonnet-4-5"},
        ],
    )
    with running_gateway(config) as gw:
        async with httpx.AsyncClient(base_url=gw.url, timeout=30) as http:
            res = await http.get("/api/models")
    assert res.status_code == 200, res.text
    by_name = {m["name"]: m for m in res.json()["models"]}
    assert {n: m["api_key"] for n, m in by_name.items()} == {
        "lead": "not needed",
        "gpt": "set",
        "own": "set",
        "claude": "missing",
    }
    assert (
        by_name["claude"]["api_key_env"] == "ANTHROPIC_API_KEY"
        and "export ANTHROPIC_API_KEY" in by_name["claude"]["api_key_hint"]
    )
    assert by_name["gpt"]["use"] == "langchain_openai:ChatOpenAI"
    assert "sk-from-env-1234" not in res.text and "sk-in-config-5678" not in res.text


async def test_uploads_round_trip_into_the_thread_sandbox(http, client, gateway) -> None:
    tid = (await client.threads.create())["thread_id"]
    files = [
        ("files", ("notes.txt", b"first line\n", "text/plain")),
        ("files", ("../../escape.bin", bytes(range(256)), "application/octet-stream")),
    ]
    res = await http.post(f"/api/threads/{tid}/uploads", files=files)
    assert res.status_code == 200, res.text
    saved = res.json()["files"]
    assert [f["path"] for f in saved] == ["/mnt/user-data/uploads/notes.txt", "/mnt/user-data/uploads/escape.bin"]
    assert saved[1]["size"] == 256
    sandbox = gateway.app.state.gateway.sandbox.acquire(tid)
    assert sandbox.read_text("/mnt/user-data/uploads/notes.txt") == "first line\n"
    listed = (await http.get(f"/api/threads/{tid}/uploads")).json()["files"]
    assert sorted(f["filename"] for f in listed) == ["escape.bin", "notes.txt"]
    assert (await http.delete(f"/api/threads/{tid}/uploads/notes.txt")).status_code == 204
    assert [f["filename"] for f in (await http.get(f"/api/threads/{tid}/uploads")).json()["files"]] == ["escape.bin"]
    missing = await http.delete(f"/api/threads/{tid}/uploads/notes.txt")
    assert missing.status_code == 404 and "GET /api/threads" in missing.json()["detail"]
    assert (await http.post("/api/threads/nope/uploads", files=files)).status_code == 404
    wrong = await http.post(f"/api/threads/{tid}/uploads", json={"files": []})
    assert wrong.status_code == 415 and "multipart/form-data" in wrong.json()["detail"]


async def test_office_uploads_are_converted_to_markdown(http, client, gateway) -> None:
    import io

    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    book.active.append(["city", "people"])
    book.active.append(["Lyon", 522000])
    data = io.BytesIO()
    book.save(data)
    tid = (await client.threads.create())["thread_id"]
    files = [
        ("files", ("cities.xlsx", data.getvalue(), "application/vnd.ms-excel")),
        ("files", ("broken.docx", b"not a zip at all", "application/octet-stream")),
    ]
    saved = (await http.post(f"/api/threads/{tid}/uploads", files=files)).json()["files"]
    assert saved[0]["markdown"] == "/mnt/user-data/uploads/cities.xlsx.md"
    sandbox = gateway.app.state.gateway.sandbox.acquire(tid)
    assert "Lyon" in sandbox.read_text("/mnt/user-data/uploads/cities.xlsx.md")
    assert "broken.docx" in saved[1]["conversion_error"] and "markdown" not in saved[1]


async def test_mcp_status_lists_configured_servers(http) -> None:
    res = await http.get("/api/mcp/status")
    assert res.status_code == 200 and res.json() == {"servers": []}


async def test_artifacts_are_served_with_their_content_type(http, client) -> None:
    tid = (await client.threads.create())["thread_id"]
    await client.runs.wait(tid, "lead_agent", input=user_message("write report.md # Findings"))
    res = await http.get(f"/api/threads/{tid}/artifacts/mnt/user-data/outputs/report.md")
    assert res.status_code == 200 and res.text == "# Findings"
    assert res.headers["content-type"] == "text/markdown; charset=utf-8"
    short = await http.get(f"/api/threads/{tid}/artifacts/outputs/report.md?download=true")
    assert short.text == "# Findings" and short.headers["content-disposition"].startswith("attachment")
    assert (await http.get(f"/api/threads/{tid}/artifacts/outputs/none.md")).status_code == 404
    escape = await http.get(f"/api/threads/{tid}/artifacts/mnt/user-data/outputs/%2E%2E/%2E%2E/%2E%2E/etc/passwd")
    assert escape.status_code in (400, 404) and "root:" not in escape.text


async def test_metrics_count_runs_and_streams(http, client) -> None:
    tid = (await client.threads.create())["thread_id"]
    await client.runs.wait(tid, "lead_agent", input=user_message("count me"))
    await client.runs.wait(tid, "lead_agent", input=user_message("write m.txt metered"))
    await client.runs.wait(tid, "lead_agent", input=user_message("run exit 3"))
    await client.runs.wait(tid, "lead_agent", input=user_message("run true"))
    await client.runs.wait(tid, "lead_agent", input=user_message("delegate look around"))
    text = (await http.get("/metrics")).text
    assert "herdsman_runs_started_total 5.0" in text
    assert 'herdsman_runs_finished_total{status="success"} 5.0' in text
    assert "herdsman_runs_failed_total 0.0" in text
    assert "herdsman_run_duration_seconds_count 5.0" in text
    assert 'herdsman_tool_calls_total{outcome="ok",tool="write_file"} 1.0' in text
    assert 'herdsman_sandbox_commands_total{outcome="error"} 1.0' in text  # exit 3
    assert 'herdsman_sandbox_commands_total{outcome="ok"} 1.0' in text
    assert 'herdsman_subagents_total{outcome="completed"} 1.0' in text
    assert "herdsman_active_streams 0.0" in text
    assert 'herdsman_model_tokens_total{direction="output",model="scripted"}' in text


async def test_one_subagent_is_stopped_and_the_run_goes_on(http, client, model) -> None:
    tid = (await client.threads.create())["thread_id"]
    run = await client.runs.create(tid, "lead_agent", input=user_message(f"delegate a long job {HOLD_MID}"))
    await asyncio.to_thread(model.wait_until_held)  # the sub-agent is writing its answer
    call = (await client.threads.get_state(tid))["values"]["messages"][-1]["tool_calls"][0]
    assert call["name"] == "task"
    stopped = await http.post(f"/api/threads/{tid}/tasks/{call['id']}/cancel")
    assert stopped.status_code == 200 and stopped.json()["status"] == "cancelling"
    values = await client.runs.join(tid, run["run_id"])
    assert (await client.runs.get(tid, run["run_id"]))["status"] == "success"  # the run went on
    result = next(m for m in values["messages"] if m["type"] == "tool")
    assert "cancelled" in result["content"] and "stopped by the user" in result["content"]
    assert result["status"] == "success"  # the user's choice, not a failure for the agent to fix
    assert values["messages"][-1]["type"] == "ai"  # the lead answered after it
    again = await http.post(f"/api/threads/{tid}/tasks/{call['id']}/cancel")
    assert again.status_code == 404 and "is running" in again.json()["detail"]
    other = (await client.threads.create())["thread_id"]
    assert (await http.post(f"/api/threads/{other}/tasks/{call['id']}/cancel")).status_code == 404


async def test_openapi_lists_every_route_once_per_prefix(http) -> None:
    spec = (await http.get("/openapi.json")).json()
    paths = spec["paths"]
    for path in (
        "/info",
        "/assistants/search",
        "/threads",
        "/threads/{thread_id}/runs/stream",
        "/threads/{thread_id}/runs/{run_id}/stream",
        "/threads/{thread_id}/history",
        "/runs/stream",
    ):
        assert path in paths and f"/api/langgraph{path}" in paths
    for path in ("/api/health", "/api/models", "/api/threads/{thread_id}/uploads", "/metrics"):
        assert path in paths
    ids = [op["operationId"] for item in paths.values() for op in item.values()]
    assert len(ids) == len(set(ids))
    stream = paths["/threads/{thread_id}/runs/stream"]["post"]
    assert "text/event-stream" in stream["responses"]["200"]["content"]
    assert "multipart/form-data" in paths["/api/threads/{thread_id}/uploads"]["post"]["requestBody"]["content"]


async def test_cors_lets_the_configured_ui_in_and_no_other_site(http) -> None:
    ask = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}
    ok = await http.options("/threads", headers={"Origin": "http://localhost:3000", **ask})
    assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == "http://localhost:3000"
    evil = await http.options("/threads", headers={"Origin": "https://evil.example", **ask})
    assert "access-control-allow-origin" not in evil.headers
    res = await http.post("/threads", json={}, headers={"Origin": "http://localhost:3000"})
    assert "Content-Location" in res.headers.get("access-control-expose-headers", "")
