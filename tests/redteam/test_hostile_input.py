"""Hostile run input against a live gateway: no request gets a 5xx, and the thread it aimed at
still takes a normal run and reads cleanly afterwards (scripted model).

Each case is a raw HTTP body (so what no SDK would send can be sent: broken JSON, lone
surrogates, wrong types); wrong types for messages, huge and deeply nested values, unknown
message roles, reserved ``configurable`` keys, bad stream modes and metadata, bad commands.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.gateway.gateway_support import RunningGateway, running_gateway, scripted_model, user_message
from tests.support import make_config

OK = user_message("ok")


def _nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"n": value}
    return value


def _run(**fields: Any) -> bytes:
    """A run body with ``fields`` (``ensure_ascii`` keeps lone surrogates as JSON escapes)."""
    return json.dumps({"assistant_id": "lead_agent", **fields}, ensure_ascii=True).encode()


HOSTILE: dict[str, bytes] = {
    # messages of the wrong type or shape
    "messages_int": _run(input={"messages": 5}),
    "messages_null": _run(input={"messages": None}),
    "messages_object": _run(input={"messages": {"a": 1}}),
    "messages_list_of_null": _run(input={"messages": [None]}),
    "messages_list_of_lists": _run(input={"messages": [[1, 2, 3]]}),
    "message_without_content": _run(input={"messages": [{"role": "user"}]}),
    "message_content_object": _run(input={"messages": [{"role": "user", "content": {"a": 1}}]}),
    "message_content_blocks_unknown": _run(input={"messages": [{"role": "user", "content": [{"type": "weird"}]}]}),
    "tool_message_without_call": _run(input={"messages": [{"role": "tool", "content": "x"}]}),
    "ai_message_bad_tool_calls": _run(input={"messages": [{"role": "ai", "content": "", "tool_calls": [{"x": 1}]}]}),
    "role_unknown": _run(input={"messages": [{"role": "wizard", "content": "x"}]}),
    "role_empty": _run(input={"messages": [{"role": "", "content": "x"}]}),
    "input_string": _run(input="hello"),
    "input_empty": _run(input={}),
    "input_list": _run(input=[1, 2]),
    "state_key_wrong_type": _run(input={"messages": [], "title": {"x": 1}}),
    "state_key_unknown": _run(input={"messages": [{"role": "user", "content": "x"}], "nope": 1}),
    # huge and nested values
    "content_1mb": _run(input={"messages": [{"role": "user", "content": "x" * 1_000_000}]}),
    "nested_300": _run(input={"messages": [{"role": "user", "content": "x"}], "title": _nested(300)}),
    "nested_3000": b'{"assistant_id": "lead_agent", "metadata": ' + b'{"n": ' * 3000 + b'"x"' + b"}" * 3001,
    "int_80_bits": _run(input=OK, metadata={"n": 2**80}),
    "many_messages": _run(input={"messages": [{"role": "user", "content": str(i)} for i in range(2000)]}),
    # lone surrogates
    "surrogate_content": _run(input={"messages": [{"role": "user", "content": "\ud800"}]}),
    "surrogate_metadata_key": _run(input=OK, metadata={"\udfff": 1}),
    "surrogate_assistant": _run(input=OK, assistant_id="\ud800"),
    "surrogate_configurable": _run(input=OK, config={"configurable": {"model_name": "\udc80"}}),
    # reserved and badly typed config
    "configurable_thread_id": _run(input=OK, config={"configurable": {"thread_id": "someone-else"}}),
    "configurable_run_id": _run(input=OK, config={"configurable": {"run_id": "x"}}),
    "configurable_checkpoint_ns": _run(input=OK, config={"configurable": {"checkpoint_ns": "x|y"}}),
    "configurable_pregel": _run(input=OK, config={"configurable": {"__pregel_checkpointer": "x"}}),
    "configurable_config_key": _run(input=OK, config={"configurable": {"config": {"configurable": 1}}}),
    "configurable_not_object": _run(input=OK, config={"configurable": "x"}),
    "config_metadata_int": _run(input=OK, config={"metadata": 5}),
    "config_recursion_negative": _run(input=OK, config={"recursion_limit": -1}),
    "config_recursion_string": _run(input=OK, config={"recursion_limit": "many"}),
    "config_model_unknown": _run(input=OK, config={"configurable": {"model_name": "no-such-model"}}),
    # stream modes, metadata, strategies, checkpoints, commands
    "stream_mode_unknown": _run(input=OK, stream_mode="bogus"),
    "stream_mode_list_int": _run(input=OK, stream_mode=["values", 5]),
    "metadata_int": _run(input=OK, metadata=5),
    "metadata_list": _run(input=OK, metadata=[1, 2]),
    "multitask_unknown": _run(input=OK, multitask_strategy="bogus"),
    "checkpoint_id_unknown": _run(input=OK, checkpoint_id="not-a-checkpoint"),
    "checkpoint_id_int": _run(input=OK, checkpoint={"checkpoint_id": 5}),
    "interrupt_before_unknown": _run(input=OK, interrupt_before=["no-such-node"]),
    "context_string": _run(input=OK, context="x"),
    "command_resume_nothing": _run(command={"resume": "yes"}),
    "command_goto_unknown": _run(command={"goto": "nowhere"}),
    "command_update_messages_int": _run(command={"update": {"messages": 5}}),
    "command_update_string": _run(command={"update": "x"}),
    "assistant_unknown": _run(input=OK, assistant_id="nope"),
    # bodies that are not a run at all
    "not_json": b"this is not json",
    "empty": b"",
    "invalid_utf8": b'{"assistant_id": "lead_agent", "input": "\xff\xfe"}',
    "json_array": b"[]",
    "json_null": b"null",
    "truncated": b'{"assistant_id": "lead_agent", "input": {"messages": [',
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    model = scripted_model()
    model.release()
    home = tmp_path_factory.mktemp("home")
    with running_gateway(make_config(home), model=model) as gateway:
        yield gateway


@pytest.fixture
def http(served: RunningGateway) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.url, timeout=60) as client:
        yield client


def _assert_thread_is_healthy(http: httpx.Client, tid: str) -> None:
    for _ in range(200):  # an accepted hostile run may still be ending (it is never left pending)
        if all(r["status"] not in ("pending", "running") for r in http.get(f"/threads/{tid}/runs").json()):
            break
    after = http.post(f"/threads/{tid}/runs/wait", json={"assistant_id": "lead_agent", "input": user_message("after")})
    assert after.status_code == 200, after.text
    assert after.json()["messages"][-1]["content"] == "echo: after"
    assert http.get(f"/threads/{tid}").json()["status"] == "idle"
    for answer in (
        http.get(f"/threads/{tid}"),
        http.get(f"/threads/{tid}/state"),
        http.post(f"/threads/{tid}/history", json={}),
        http.post("/threads/search", json={"limit": 1000}),
    ):
        assert answer.status_code == 200, answer.text
        assert "error" not in answer.json() or not answer.json()["error"]


@pytest.mark.parametrize("case", sorted(HOSTILE))
@pytest.mark.parametrize("route", ["wait", "stream"])
def test_hostile_run_input_gets_no_5xx_and_the_thread_still_works(http: httpx.Client, case: str, route: str) -> None:
    tid = http.post("/threads", json={}).json()["thread_id"]
    answer = http.post(
        f"/threads/{tid}/runs/{route}", content=HOSTILE[case], headers={"content-type": "application/json"}
    )
    assert answer.status_code < 500, answer.text
    if answer.status_code >= 400:
        detail = answer.json()["detail"]
        assert isinstance(detail, str) and "Internal error" not in detail
    _assert_thread_is_healthy(http, tid)


@pytest.mark.parametrize("case", ["messages_int", "configurable_thread_id", "surrogate_content", "not_json"])
def test_hostile_stateless_runs_get_no_5xx(http: httpx.Client, case: str) -> None:
    for route in ("/runs/wait", "/runs", "/runs/stream"):
        answer = http.post(route, content=HOSTILE[case], headers={"content-type": "application/json"})
        assert answer.status_code < 500, answer.text
    assert http.post("/threads/search", json={"limit": 1000}).status_code == 200


def test_a_wrong_content_type_and_a_huge_body_get_no_5xx(http: httpx.Client) -> None:
    tid = http.post("/threads", json={}).json()["thread_id"]
    form = http.post(f"/threads/{tid}/runs/wait", data={"assistant_id": "lead_agent"})
    assert 400 <= form.status_code < 500
    big = _run(input={"messages": [{"role": "user", "content": "y" * 20_000_000}]})
    assert (
        http.post(f"/threads/{tid}/runs/wait", content=big, headers={"content-type": "application/json"}).status_code
        < 500
    )
    _assert_thread_is_healthy(http, tid)


LONE = "\ud800"


def _with_surrogates(schema: dict[str, Any], components: dict[str, Any], depth: int = 0) -> Any:
    """A value of ``schema`` (OpenAPI) with a lone surrogate in every string it can hold."""
    if "$ref" in schema:
        return _with_surrogates(components[schema["$ref"].rsplit("/", 1)[1]], components, depth)
    if "const" in schema or "enum" in schema:
        return schema.get("const", (schema.get("enum") or [None])[0])
    branches = schema.get("anyOf") or schema.get("oneOf")
    if branches:
        text_first = sorted(
            branches, key=lambda b: b.get("type") not in ("string", "array", "object") and "$ref" not in b
        )
        return _with_surrogates(text_first[0], components, depth)
    kind = schema.get("type")
    if kind == "string":
        return LONE
    if kind == "array":
        return [_with_surrogates(schema.get("items", {"type": "string"}), components, depth + 1)]
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        if not properties or depth > 3:
            return {LONE: LONE}
        return {name: _with_surrogates(sub, components, depth + 1) for name, sub in properties.items()}
    return {"integer": 1, "number": 1.0, "boolean": True}.get(kind, LONE)


def test_every_json_body_with_a_lone_surrogate_gets_a_422_that_says_so(http: httpx.Client) -> None:
    """Every route that reads a JSON body refuses text that is not valid Unicode the same way
    (found: an assistant named with a lone surrogate reset the connection, a cron search 500ed)."""
    spec = http.get("/openapi.json").json()
    components = spec["components"]["schemas"]
    tid = http.post("/threads", json={}).json()["thread_id"]
    params = {
        "thread_id": tid,
        "assistant_id": "lead_agent",
        "run_id": "00000000-0000-4000-8000-000000000000",
        "cron_id": "00000000-0000-4000-8000-000000000000",
        "fid": "f" * 16,
        "name": "data-analysis",
        "variable": "API_TOKEN",
        "port": 8000,
        "path": "index.html",
    }
    checked = []
    for path, operations in spec["paths"].items():
        if path.startswith(("/api/langgraph/", "/api/memory/")):  # the same routes under a prefix; memory is off here
            continue
        for method, operation in operations.items():
            body_schema = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
            if body_schema is None:
                continue
            body = _with_surrogates(body_schema, components)
            bodies = [body, {LONE: 1}] if isinstance(body, dict) else [body]
            for raw in [b for b in bodies if "\\ud800" in json.dumps(b)]:  # a body with no text: its key
                answer = http.request(
                    method.upper(),
                    path.format(**params),
                    content=json.dumps(raw, ensure_ascii=True),
                    headers={"content-type": "application/json"},
                )
                assert answer.status_code == 422, f"{method} {path} {raw!r}: {answer.status_code} {answer.text}"
                assert "not valid Unicode" in answer.json()["detail"], f"{method} {path}: {answer.text}"
            checked.append(f"{method} {path}")
    assert len(checked) >= 25, checked  # every body route of the LangGraph API, the store and memory
    _assert_thread_is_healthy(http, tid)


async def test_a_state_update_from_a_checkpoint_the_thread_never_had_keeps_the_conversation(
    served: RunningGateway,
) -> None:
    """Finding (#14): ``POST /threads/{id}/state`` from a checkpoint id the thread never had (a typo,
    or another thread's) answered 200 and wrote a state branched from nothing: the thread's
    conversation was gone from its head. Runs already refused such an id; now the update does too."""
    from langgraph_sdk import get_client

    client = get_client(url=served.url)
    try:
        tid = (await client.threads.create())["thread_id"]
        await client.runs.wait(tid, "lead_agent", input=user_message("keep me"))
        other = (await client.threads.create())["thread_id"]
        await client.runs.wait(other, "lead_agent", input=user_message("elsewhere"))
        foreign = (await client.threads.get_state(other))["checkpoint"]["checkpoint_id"]
        for checkpoint_id in ("1f0-no-such-checkpoint", foreign):
            with pytest.raises(httpx.HTTPStatusError) as refused:
                await client.threads.update_state(tid, {"messages": []}, checkpoint_id=checkpoint_id)
            assert refused.value.response.status_code == 404
            assert "not found on thread" in refused.value.response.text and "/history" in refused.value.response.text
        state = await client.threads.get_state(tid)
    finally:
        await client.aclose()
    assert [m["content"] for m in state["values"]["messages"]] == ["keep me", "echo: keep me"]
