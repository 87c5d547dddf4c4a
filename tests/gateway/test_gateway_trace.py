"""GET /api/threads/{id}/trace: the steps of a thread's runs, with bash details; only for its owner."""

from __future__ import annotations

import httpx
from langgraph_sdk import get_client

from herdsman.models.scripted import ScriptedChatModel
from tests.gateway.gateway_support import running_gateway, user_message
from tests.support import make_config

COMMAND = "echo made > ../outputs/made.txt; echo listed; ls missing-dir"


async def test_trace_shows_model_calls_bash_and_files_for_the_owner_only(home) -> None:
    model = ScriptedChatModel(responses=[
        {"tool_calls": [{"name": "bash", "args": {"command": COMMAND}}]},
        "ran it",
        "second answer",
    ])  # fmt: skip
    config = make_config(home, gateway={"api_keys": ["key-ana", "key-bo"]}, sandbox={"allow_unisolated_bash": True})
    with running_gateway(config, model=model) as served:
        ana = get_client(url=served.url, api_key="key-ana")
        try:
            tid = (await ana.threads.create())["thread_id"]
            await ana.runs.wait(tid, "lead_agent", input=user_message("run the command"))
            await ana.runs.wait(tid, "lead_agent", input=user_message("and again"))
            runs = sorted(await ana.runs.list(tid), key=lambda r: r["created_at"])
        finally:
            await ana.aclose()
        async with httpx.AsyncClient(base_url=served.url, headers={"x-api-key": "key-ana"}, timeout=30) as http:
            trace = (await http.get(f"/api/threads/{tid}/trace")).json()
            first_only = (await http.get(f"/api/threads/{tid}/trace", params={"run_id": runs[0]["run_id"]})).json()
            unknown = await http.get("/api/threads/no-such-thread/trace")
            no_run = await http.get(f"/api/threads/{tid}/trace", params={"run_id": "no-such-run"})
            spec = (await http.get("/openapi.json")).json()
        async with httpx.AsyncClient(base_url=served.url, headers={"x-api-key": "key-bo"}, timeout=30) as http:
            foreign = await http.get(f"/api/threads/{tid}/trace")

    assert [s["kind"] for s in trace["steps"]] == ["input", "model", "tool", "model", "input", "model"]
    assert [s["index"] for s in trace["steps"]] == [1, 2, 3, 4, 5, 6]
    assert [(r["run_id"], r["step_count"]) for r in trace["runs"]] == [(runs[0]["run_id"], 4), (runs[1]["run_id"], 2)]
    asked = trace["steps"][1]
    assert asked["model"] == "scripted" and asked["tool_calls"][0]["args"] == {"command": COMMAND}
    assert asked["usage"]["input_tokens"] > 0 and asked["usage"]["output_tokens"] > 0
    bash = trace["steps"][2]
    assert bash["tool"] == "bash" and bash["args"] == {"command": COMMAND}
    assert bash["bash"]["command"] == COMMAND
    assert bash["bash"]["exit_code"] == 2
    assert bash["bash"]["stdout"] == "listed\n"
    assert "missing-dir" in bash["bash"]["stderr"]
    assert bash["files_changed"] == [{"path": "/mnt/user-data/outputs/made.txt", "action": "created"}]
    assert trace["usage"]["total_tokens"] == sum(r["usage"]["total_tokens"] for r in trace["runs"]) > 0
    assert str(home) not in str(trace)

    assert [s["text"] for s in first_only["steps"]][-1] == "ran it"
    assert len(first_only["steps"]) == 4 and first_only["run_id"] == runs[0]["run_id"]
    assert unknown.status_code == 404 and foreign.status_code == 404
    assert no_run.status_code == 404 and "GET /threads/" in no_run.json()["detail"]

    operation = spec["paths"]["/api/threads/{thread_id}/trace"]["get"]
    schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/Trace"}
    assert {"steps", "runs", "usage"} <= set(spec["components"]["schemas"]["Trace"]["properties"])


async def test_a_task_step_shows_what_its_subagent_did(home) -> None:
    def respond(messages):
        last = messages[-1]
        if last.type == "human" and last.text == "delegate it":  # the lead
            args = {"description": "list files", "prompt": "list the workspace", "subagent_type": "general-purpose"}
            return {"tool_calls": [{"name": "task", "args": args, "id": "call_delegate"}]}
        if last.type == "human":  # the sub-agent, given its prompt
            return {"tool_calls": [{"name": "bash", "args": {"command": "echo from-the-subagent"}}]}
        if last.type == "tool" and last.name == "bash":
            return "the workspace is listed"
        return "the sub-agent reported"

    config = make_config(home, sandbox={"allow_unisolated_bash": True})
    with running_gateway(config, model=ScriptedChatModel(respond=respond)) as served:
        sdk = get_client(url=served.url, api_key=None)
        try:
            tid = (await sdk.threads.create())["thread_id"]
            await sdk.runs.wait(tid, "lead_agent", input=user_message("delegate it"))
        finally:
            await sdk.aclose()
        async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
            trace = (await http.get(f"/api/threads/{tid}/trace")).json()

    task = next(s for s in trace["steps"] if s["tool"] == "task")
    [subagent] = task["subagents"]
    assert subagent["task_id"] == "call_delegate" and subagent["status"] == "completed"
    assert subagent["subagent_type"] == "general-purpose" and subagent["description"] == "list files"
    inner = subagent["steps"]
    assert [s["kind"] for s in inner] == ["input", "model", "tool", "model"]
    assert inner[0]["text"] == "list the workspace"
    assert inner[2]["bash"]["stdout"] == "from-the-subagent\n" and inner[2]["bash"]["exit_code"] == 0
    assert inner[3]["text"] == "the workspace is listed"
    assert [s["kind"] for s in trace["steps"]] == ["input", "model", "tool", "model"]  # the lead's own steps
