"""A tool call being written, through the official langgraph-sdk client: a model that sends its
calls whole at the end (the embedded model) sends drafts of the call on the ``custom`` stream
meanwhile, and ``messages-tuple`` and ``values`` still carry the call that ran."""

from __future__ import annotations

import json

import pytest

from tests.gateway.gateway_support import HeldModel, reply, user_message


@pytest.fixture
def model() -> HeldModel:
    """The scripted agent, writing its calls as the embedded model does: drafts, then the call whole."""
    return HeldModel(respond=reply, stream_chunk_chars=4, stream_call_drafts=True)


async def test_drafts_of_the_call_arrive_on_the_custom_stream_then_the_call(client) -> None:
    thread = await client.threads.create()
    parts = [
        p
        async for p in client.runs.stream(
            thread["thread_id"],
            "lead_agent",
            input=user_message("write haiku.txt an old silent pond"),
            stream_mode=["values", "messages-tuple", "custom"],
        )
    ]
    events = [p.event for p in parts]
    drafts = [p.data for p in parts if p.event == "custom" and p.data.get("type") == "tool_call_draft"]
    texts = [d["text"] for d in drafts]
    assert len(texts) > 5 and all(b.startswith(a) and a != b for a, b in zip(texts, texts[1:], strict=False))
    assert drafts[-1]["name"] == "write_file" and '"content": "an old silent po' in texts[-1]
    # the drafts come before the call, which arrives whole in messages-tuple and in the state
    last_draft = max(i for i, p in enumerate(parts) if p.event == "custom")
    calls = [i for i, p in enumerate(parts) if p.event == "messages" and p.data[0].get("tool_call_chunks")]
    assert calls and calls[0] > last_draft
    chunk = parts[calls[0]].data[0]["tool_call_chunks"][0]
    assert json.loads(chunk["args"]) == {"path": "/mnt/user-data/outputs/haiku.txt", "content": "an old silent pond"}
    final = [p.data for p in parts if p.event == "values"][-1]
    assert [c["name"] for m in final["messages"] for c in m.get("tool_calls") or []] == ["write_file"]
    assert events.count("error") == 0 and final["messages"][-1]["content"].startswith("done: ")


async def test_without_the_custom_mode_no_draft_is_sent(client) -> None:
    thread = await client.threads.create()
    parts = [
        p
        async for p in client.runs.stream(
            thread["thread_id"],
            "lead_agent",
            input=user_message("write a.txt hello"),
            stream_mode=["values"],
        )
    ]
    assert {p.event for p in parts} == {"metadata", "values"}


class _StubLlama:
    """Stands in for llama.cpp: answers by the prompt, a few characters a piece (no weights)."""

    CALL = '<tool_call>\n{"name": "ls", "arguments": {"path": "/mnt/user-data/workspace"}}\n</tool_call>'

    def __init__(self) -> None:
        self.prompt = ""

    def tokenize(self, data: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        self.prompt = data.decode("utf-8")
        return list(range(len(self.prompt) // 4 + 1))

    def create_completion(self, prompt: list[int], max_tokens: int, stream: bool, **kwargs):
        turn = self.prompt.rsplit("<|im_start|>user", 1)[-1]
        text = (
            "The workspace is empty."
            if "<tool_response>" in turn
            else self.CALL
            if "<tools>" in self.prompt
            else "A title"
        )
        pieces = [{"choices": [{"text": text[i : i + 3], "finish_reason": None}]} for i in range(0, len(text), 3)]
        return iter([*pieces, {"choices": [{"text": "", "finish_reason": "stop"}]}])


async def test_the_embedded_models_drafts_reach_the_sdk(home, monkeypatch) -> None:
    """The embedded model's own path, over a stub llama: the gateway streams its drafts, then the call."""
    pytest.importorskip("jinja2")
    from langgraph_sdk import get_client

    from herdsman.models.local import chat
    from tests.gateway.gateway_support import running_gateway
    from tests.support import make_config

    loaded = chat.LoadedModel(
        llama=_StubLlama(),
        template=chat._compile_template(chat.FALLBACK_CHAT_TEMPLATE),
        bos_token="",
        eos_token="<|im_end|>",
        load_seconds=0.0,
    )
    monkeypatch.setitem(chat._LOADED, ("stub.gguf", 4096), loaded)
    monkeypatch.setattr(chat, "GENERATION_LOCK", chat.GenerationLock(str(home / "generation.lock")))
    model = chat.ChatLocalLlama(model_path="stub.gguf", n_ctx=4096, constrained_tool_calls=False, draft_interval=0)
    with running_gateway(make_config(home), model=model) as served:
        client = get_client(url=served.url, api_key=None)
        thread = await client.threads.create()
        parts = [
            p
            async for p in client.runs.stream(
                thread["thread_id"],
                "lead_agent",
                input=user_message("what is there?"),
                stream_mode=["values", "messages-tuple", "custom"],
            )
        ]
        await client.aclose()
    drafts = [p.data for p in parts if p.event == "custom" and p.data.get("type") == "tool_call_draft"]
    assert (
        len(drafts) > 5
        and drafts[-1]["name"] == "ls"
        and drafts[-1]["text"].startswith('{"name": "ls", "arguments": {"path": "/mnt/user-da')
    )
    final = [p.data for p in parts if p.event == "values"][-1]["messages"]
    assert [c["args"] for m in final for c in m.get("tool_calls") or []] == [{"path": "/mnt/user-data/workspace"}]
    assert final[-1]["content"] == "The workspace is empty."
    meta = final[-1]["response_metadata"]  # timed by the harness, its pace said by the model
    assert isinstance(meta["step_timing"]["seconds"], float) and meta["output_tokens_per_second"] > 0
