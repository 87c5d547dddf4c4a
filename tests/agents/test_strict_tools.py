"""Strict tool schemas for API models: the request an OpenAI-style server receives carries every
tool in the strict subset (closed objects, every property required, optional ones nullable), a
null sent for an optional argument runs the tool with its default, and a compatible server gets
plain schemas unless its entry asks for strict ones. The server is a wire-level stand-in for
OpenAI's chat completions API (no OpenAI here)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool

from herdsman.client import HerdsmanClient
from herdsman.middleware.strict_tools import NotStrict, strict_schema, strict_tool, wants_strict
from tests.support import make_config

pytest.importorskip("langchain_openai", reason="langchain-openai is a test dependency")


class FakeOpenAI:
    """Answers /v1/chat/completions with scripted assistant messages (streamed or not) and keeps
    every request body."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies, self.bodies = list(replies), []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - the http.server name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.bodies.append(body)
                message = owner.replies.pop(0)
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                if body.get("stream"):
                    delta = {"role": "assistant", "content": message.get("content") or ""}
                    if message.get("tool_calls"):
                        delta["tool_calls"] = [{**c, "index": i} for i, c in enumerate(message["tool_calls"])]
                    chunks = [
                        {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                        {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
                    ]
                    payload = (
                        "".join(
                            f"data: {json.dumps({'id': 'c1', 'object': 'chat.completion.chunk', 'created': 0, 'model': 'gpt-test', **c})}\n\n"
                            for c in chunks
                        )
                        + "data: [DONE]\n\n"
                    )
                    self._send(payload.encode(), "text/event-stream")
                else:
                    reply = {
                        "id": "c1",
                        "object": "chat.completion",
                        "created": 0,
                        "model": "gpt-test",
                        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                    }
                    self._send(json.dumps(reply).encode(), "application/json")

            def _send(self, data: bytes, kind: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"

    def __enter__(self) -> FakeOpenAI:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def call(name: str, arguments: str) -> dict[str, Any]:
    return {
        "content": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}],
    }


def config(home: Path, url: str, **entry: Any) -> Any:
    model = {
        "name": "api",
        "use": "langchain_openai:ChatOpenAI",
        "model": "gpt-test",
        "api_key": "sk-test",
        "base_url": url,
        "max_retries": 0,
        **entry,
    }
    return make_config(home, models=[model], lead={"model": "api"})


def tools_sent(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["function"]["name"]: t["function"] for t in body.get("tools") or []}


async def test_a_strict_model_gets_strict_schemas_and_a_null_optional_argument_means_its_default(home: Path) -> None:
    (home / "threads" / "t1" / "user-data" / "workspace").mkdir(parents=True)
    (home / "threads" / "t1" / "user-data" / "workspace" / "hello.txt").write_text("hi\n")
    with FakeOpenAI([call("ls", '{"path": null}'), {"content": "The workspace holds hello.txt."}]) as server:
        async with HerdsmanClient(config(home, server.url, strict_tools=True)) as client:
            [e async for e in client.stream("What is in the workspace?", thread_id="t1")]
            state = await client.agent.aget_state({"configurable": {"thread_id": "t1"}})
    sent = tools_sent(server.bodies[0])
    assert {"ls", "read_file", "write_file", "bash"} <= set(sent)
    for function in sent.values():
        assert function["strict"] is True
        parameters = function["parameters"]
        assert parameters["additionalProperties"] is False and set(parameters["required"]) == set(
            parameters["properties"]
        )
    assert "null" in sent["ls"]["parameters"]["properties"]["path"]["type"]  # optional: may be null
    assert sent["read_file"]["parameters"]["properties"]["path"]["type"] == "string"  # required: may not
    [result] = [m for m in state.values["messages"] if isinstance(m, ToolMessage)]
    assert "hello.txt" in result.text and result.status != "error"  # ran with its default folder
    assert state.values["messages"][-1].text == "The workspace holds hello.txt."


async def test_a_compatible_server_gets_plain_schemas_unless_its_entry_asks(home: Path) -> None:
    with FakeOpenAI([{"content": "Hello."}]) as server:
        async with HerdsmanClient(config(home, server.url)) as client:
            [e async for e in client.stream("Hi", thread_id="t2")]
    assert server.bodies[0].get("tools") and all("strict" not in f for f in tools_sent(server.bodies[0]).values())


def test_which_models_get_strict_tools() -> None:
    from langchain_openai import ChatOpenAI

    assert wants_strict(ChatOpenAI(model="gpt-4o-mini", api_key="sk-test"))  # the official API
    assert not wants_strict(ChatOpenAI(model="m", api_key="k", base_url="http://127.0.0.1:1/v1"))
    assert wants_strict(
        ChatOpenAI(model="m", api_key="k", base_url="http://127.0.0.1:1/v1", metadata={"herdsman_strict_tools": True})
    )


def test_the_schema_rewrite_keeps_meaning_in_the_strict_subset() -> None:
    schema = {
        "type": "object",
        "properties": {
            "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
            "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}, "minItems": 1},
            "name": {"type": "string", "minLength": 1},
        },
        "required": ["name"],
        "$defs": {
            "Item": {
                "type": "object",
                "properties": {"n": {"type": "integer"}, "tag": {"type": "string"}},
                "required": ["n"],
            }
        },
    }
    out = strict_schema(schema)
    assert out["required"] == ["mode", "items", "name"] and out["additionalProperties"] is False
    assert out["properties"]["mode"] == {"type": ["string", "null"], "enum": ["a", "b", None]}
    assert out["properties"]["name"] == {"type": "string"}
    assert out["properties"]["items"]["type"] == ["array", "null"] and "minItems" not in out["properties"]["items"]
    item = out["$defs"]["Item"]
    assert item["required"] == ["n", "tag"] and item["properties"]["tag"]["type"] == ["string", "null"]
    with pytest.raises(NotStrict):
        strict_schema({"type": "object", "properties": {"data": {"type": "object", "additionalProperties": True}}})


def test_a_tool_with_a_free_form_argument_is_sent_as_it_was() -> None:
    @tool
    def store(values: dict[str, Any]) -> str:
        """Store key-value pairs."""
        return "ok"

    assert strict_tool(store) is None
