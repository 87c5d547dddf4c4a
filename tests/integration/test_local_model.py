"""The embedded local model: ChatLocalLlama over a stub llama (fast), then the real model.

The first part runs ``ChatLocalLlama`` on a stub ``Llama`` that replays scripted replies, to check
prompt rendering, streaming and tool-call recovery without weights. The second part, marked
``local_model``, runs Qwen2.5-Coder-1.5B for real through a LangChain agent; it fetches the
weights (~1.1 GB) the first time and needs llama-cpp-python (``pip install 'herdsman[local]'``).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool

from herdsman.config.schema import LocalModelConfig
from herdsman.models.local import chat
from herdsman.models.local.chat import TOOL_USE_HINT, ChatLocalLlama, ContextWindowError
from tests.support import logged_events

HAVE_LLAMA = importlib.util.find_spec("llama_cpp") is not None
NO_LLAMA = "llama-cpp-python is not installed (pip install 'herdsman[local]', or make run)"


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"Sunny and 21 C in {city}"


# --------------------------------------------------------------------------------------------
# ChatLocalLlama over a stub llama: no weights needed


class StubLlama:
    """Replays scripted replies; records every prompt it is given, as text."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []
        self.last_tokenized = ""

    def tokenize(self, data: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        text = data.decode("utf-8")
        self.last_tokenized = text
        return list(range(len(text) // 4 + 1))

    def create_completion(self, prompt: list[int], max_tokens: int, stream: bool, **kwargs: Any) -> Any:
        self.prompts.append(self.last_tokenized)
        self.max_tokens = max_tokens
        self.kwargs = kwargs
        text = self.replies.pop(0)
        if not stream:
            return {
                "choices": [{"text": text, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(text) // 4 + 1},
            }

        def pieces() -> Iterator[dict[str, Any]]:
            self.generated = ""
            for i in range(0, len(text), 3):
                self.generated += text[i : i + 3]
                yield {"choices": [{"text": text[i : i + 3], "finish_reason": None}]}
            yield {"choices": [{"text": "", "finish_reason": "stop"}]}

        return pieces()


@pytest.fixture
def stub(monkeypatch, tmp_path):
    """A ChatLocalLlama whose process-wide model slot holds a StubLlama."""
    pytest.importorskip("jinja2", reason="jinja2 comes with llama-cpp-python: pip install 'herdsman[local]'")

    def make(*replies: str, n_ctx: int = 4096, **fields: Any) -> tuple[ChatLocalLlama, StubLlama]:
        llama = StubLlama(list(replies))
        loaded = chat.LoadedModel(
            llama=llama,
            template=chat._compile_template(chat.FALLBACK_CHAT_TEMPLATE),
            bos_token="",
            eos_token="<|im_end|>",
            load_seconds=0.0,
        )
        monkeypatch.setitem(chat._LOADED, ("stub.gguf", n_ctx), loaded)
        monkeypatch.setattr(chat, "grammar_accepted", lambda llama, grammar: True)  # no llama.cpp vocabulary here
        # a stub generation uses no CPU: it need not wait for the machine's real ones (the file lock)
        monkeypatch.setattr(chat, "GENERATION_LOCK", chat.GenerationLock(str(tmp_path / "generation.lock")))
        return ChatLocalLlama(model_path="stub.gguf", n_ctx=n_ctx, **fields), llama

    return make


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def convert(t: Any) -> dict[str, Any]:
    """The OpenAI-style dict of a tool, as bind_tools passes it."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    return convert_to_openai_tool(t)


CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


@pytest.mark.parametrize("streaming", [False, True])
def test_a_call_written_again_in_one_reply_ends_the_generation(stub, streaming):
    """A small model once wrote one read_file call thirty times in a reply: generation stops at the
    first repeat (even re-indented), and the distinct calls before it are kept, once each."""
    other = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
    again = '<tool_call>\n{ "name": "get_weather",\n  "arguments": {"city": "Paris"} }\n</tool_call>'
    model, llama = stub("\n".join([CALL, other, again, *[CALL] * 28]))
    bound = model.bind_tools([get_weather])
    if streaming:
        chunks = list(bound.stream("Weather?"))
        reply = chunks[0]
        for chunk in chunks[1:]:
            reply += chunk
    else:
        reply = bound.invoke("Weather?")
    assert [c["args"]["city"] for c in reply.tool_calls] == ["Paris", "Oslo"]
    assert llama.generated.count("</tool_call>") == 3  # the model was not asked for the other 28
    assert reply.response_metadata["finish_reason"] == "tool_calls"


PARAGRAPH = (
    "Rainwater harvesting collects the rain that falls on roofs and stores it in tanks, "
    "so gardens and toilets need less mains water. "
)


def joined(chunks: list) -> Any:
    reply = chunks[0]
    for chunk in chunks[1:]:
        reply += chunk
    return reply


def test_a_reply_that_loops_is_cut_while_it_streams_and_continued_with_penalties(stub):
    """The model writes one paragraph again and again: no second copy is ever streamed, the
    generation stops during the third, and goes on from the first copy with llama.cpp's repeat
    and frequency penalties; the reply is the first copy and what came after."""
    model, llama = stub("Report.\n\n" + PARAGRAPH * 12, "It also eases floods.")
    chunks = list(model.bind_tools([get_weather]).stream("Write a short report on rainwater harvesting."))
    texts = [c.content for c in chunks if c.content]
    assert "".join(texts) == "Report.\n\n" + PARAGRAPH + "It also eases floods."
    assert len(llama.generated) < len("Report.\n\n" + PARAGRAPH * 3), "cut while generating, not at the end"
    assert llama.prompts[1] == "Report.\n\n" + PARAGRAPH, "continued after the kept copy"
    assert llama.kwargs["repeat_penalty"] == 1.15 and llama.kwargs["frequency_penalty"] == 0.3
    assert joined(chunks).response_metadata["finish_reason"] == "stop"


def test_a_paragraph_written_again_with_a_few_words_changed_is_never_streamed(stub):
    """The report's first paragraph comes back with two words changed: it is held while written,
    cut where it begins, and the reply goes on from there with penalties."""
    first = (
        "Rainwater harvesting collects the rain that falls on a roof and stores it in a tank for later "
        "use in the garden and the toilets."
    )
    again = first.replace("stores", "keeps").replace("a roof", "the roof")
    flush = "A first-flush diverter sends the dirtiest water away, so leaves and dust never reach the tank."
    model, llama = stub(f"Report.\n\n{first}\n\n{flush}\n\n{again}\n\nMore.", "It also eases floods.")
    chunks = list(model.stream("Write a short report on rainwater harvesting."))
    texts = [c.content for c in chunks if c.content]
    assert again not in "".join(texts) and "keeps it" not in "".join(texts)
    assert "".join(texts) == f"Report.\n\n{first}\n\n{flush}\n\nIt also eases floods."
    assert llama.prompts[1] == f"Report.\n\n{first}\n\n{flush}\n\n", "continued after the kept paragraphs"


def test_chinese_that_loops_is_cut_and_a_second_loop_ends_the_reply(stub):
    sentence = "雨水收集可以减少自来水的使用，并且有助于城市防洪。"
    model, llama = stub("总结：" + sentence * 30, "另外，" + "水箱要定期清洗。" * 40)
    reply = model.invoke("用中文写一段关于雨水收集的总结。")
    assert reply.content == "总结：" + sentence + "另外，水箱要定期清洗。"
    assert len(llama.prompts) == 2, "one continuation only"


def test_a_loop_inside_a_tool_call_is_cut_back_to_the_call_and_written_again(stub):
    looping = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "' + "Paris, Paris, France; " * 40
    model, llama = stub("Let me check.\n" + looping, CALL)
    reply = model.bind_tools([get_weather]).invoke("Weather in Paris?")
    assert [c["args"] for c in reply.tool_calls] == [{"city": "Paris"}]
    assert llama.prompts[1] == "Let me check.\n", "the unfinished call was dropped, not mended"


def test_loops_are_left_alone_when_stop_repetition_is_off(stub):
    model, llama = stub(PARAGRAPH * 5, stop_repetition=False)
    assert model.invoke("Report?").content == (PARAGRAPH * 5).strip()
    assert len(llama.prompts) == 1


def test_the_same_call_in_two_replies_is_not_a_repeat(stub):
    model, _ = stub(CALL, CALL)
    bound = model.bind_tools([get_weather])
    assert len(bound.invoke("Weather?").tool_calls) == 1
    assert len(bound.invoke("Again?").tool_calls) == 1


def test_plain_reply(stub):
    model, llama = stub("  Hello there.  ")
    reply = model.invoke("hi")
    assert reply.content == "Hello there."
    assert reply.tool_calls == []
    assert reply.usage_metadata["input_tokens"] > 0
    assert reply.usage_metadata["output_tokens"] > 0
    assert "<|im_start|>user\nhi<|im_end|>" in llama.prompts[0]
    assert llama.prompts[0].endswith("<|im_start|>assistant\n")
    assert TOOL_USE_HINT not in llama.prompts[0]


def test_tools_are_rendered_and_the_call_parsed(stub):
    model, llama = stub(CALL)
    reply = model.bind_tools([get_weather]).invoke([SystemMessage("You are terse."), HumanMessage("Weather in Paris?")])
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [("get_weather", {"city": "Paris"})]
    assert reply.content == ""
    assert reply.response_metadata["finish_reason"] == "tool_calls"
    prompt = llama.prompts[0]
    assert prompt.startswith("<|im_start|>system\nYou are terse.")
    assert TOOL_USE_HINT in prompt
    assert '"name": "get_weather"' in prompt and "<tools>" in prompt


def test_history_with_tool_calls_and_results_is_rendered(stub):
    model, llama = stub("It is sunny.")
    history = [
        HumanMessage("Weather in Paris?"),
        AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1"}]),
        ToolMessage("Sunny and 21 C in Paris", tool_call_id="call_1"),
    ]
    reply = model.bind_tools([get_weather]).invoke(history)
    assert reply.content == "It is sunny."
    prompt = llama.prompts[0]
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>' in prompt
    assert "<tool_response>\nSunny and 21 C in Paris\n</tool_response>" in prompt


def test_calls_to_unbound_tools_stay_text(stub):
    model, _ = stub(CALL)
    reply = model.invoke("Weather in Paris?")
    assert reply.tool_calls == []
    assert "get_weather" in reply.content


def test_stream_passes_text_on_as_it_comes(stub):
    model, _ = stub("The weather in Paris is sunny today, 21 degrees.")
    chunks = list(model.bind_tools([get_weather]).stream("Weather?"))
    texts = [c.content for c in chunks if c.content]
    assert len(texts) > 5
    assert "".join(texts) == "The weather in Paris is sunny today, 21 degrees."
    assert chunks[-1].usage_metadata["output_tokens"] > 0


def test_stream_keeps_tool_calls_and_hides_their_text(stub):
    model, _ = stub("Let me check.\n" + CALL)
    chunks = list(model.bind_tools([get_weather]).stream("Weather in Paris?"))
    assert all("tool_call" not in str(c.content) and "{" not in str(c.content) for c in chunks)
    full = chunks[0]
    for c in chunks[1:]:
        full = full + c
    assert isinstance(full, AIMessageChunk)
    assert full.content == "Let me check."
    assert [(c["name"], c["args"]) for c in full.tool_calls] == [("get_weather", {"city": "Paris"})]
    assert full.tool_calls[0]["id"].startswith("call_")


async def test_astream_keeps_tool_calls(stub):
    model, _ = stub(CALL)
    full = None
    async for c in model.bind_tools([get_weather]).astream("Weather in Paris?"):
        full = c if full is None else full + c
    assert [(c["name"], c["args"]) for c in full.tool_calls] == [("get_weather", {"city": "Paris"})]
    assert full.content == ""


def test_forced_tool_choice_prefills_the_call_without_a_grammar(stub):
    model, llama = stub('city": "Oslo"}}\n</tool_call>', constrained_tool_calls=False)
    reply = model.bind_tools([get_weather], tool_choice="get_weather").invoke("Oslo?")
    assert llama.prompts[0].endswith('<tool_call>\n{"name": "get_weather", "arguments": {"')
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [("get_weather", {"city": "Oslo"})]


def test_with_the_grammar_a_forced_call_is_constrained_not_prefilled(stub):
    pytest.importorskip("llama_cpp", reason=NO_LLAMA)
    model, llama = stub(CALL)
    request = model._request(
        [HumanMessage("Oslo?")], None, {"tools": [convert(get_weather), convert(add)], "tool_choice": "get_weather"}
    )
    assert request.prefill == "" and request.grammar is not None and not request.grammar.lazy
    assert '"\\"get_weather\\""' in request.grammar.text and "add" not in request.grammar.text  # the named tool only
    free = model._request([HumanMessage("Oslo?")], None, {"tools": [convert(get_weather), convert(add)]})
    assert free.grammar is not None and free.grammar.lazy  # the model may answer instead
    assert model.bind_tools([get_weather], tool_choice="get_weather").invoke("Oslo?").tool_calls[0]["args"] == {
        "city": "Paris"
    }


def test_with_the_grammar_json_in_prose_is_an_answer_not_a_call(stub):
    pytest.importorskip("llama_cpp", reason=NO_LLAMA)
    prose = 'Send this from your client:\n```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```\nThat is all.'
    assert model_reply(stub, prose, constrained_tool_calls=True).tool_calls == []
    assert (
        model_reply(stub, prose, constrained_tool_calls=False).tool_calls != []
    )  # repair alone parses it out of prose


def model_reply(stub, text: str, **fields: Any) -> AIMessage:
    """The reply of a stub model that writes ``text``, with ``get_weather`` bound."""
    model, _ = stub(text, **fields)
    return model.bind_tools([get_weather]).invoke("Weather?")


def test_tool_choice_none_hides_the_tools(stub):
    model, llama = stub(CALL)
    reply = model.bind_tools([get_weather], tool_choice="none").invoke("Weather in Paris?")
    assert "<tools>" not in llama.prompts[0]
    assert reply.tool_calls == []


def test_max_tokens_is_capped_by_the_context_window(stub):
    model, llama = stub("ok", n_ctx=600, max_tokens=10_000)
    model.invoke("hi")
    assert 0 < llama.max_tokens < 600


def test_prompt_too_long_names_the_setting(stub):
    model, _ = stub("never", n_ctx=512)
    with pytest.raises(ContextWindowError, match="local_model.n_ctx"):
        model.invoke("word " * 3000)


def test_non_text_content_blocks_are_named_not_dropped(stub):
    model, llama = stub("ok")
    model.invoke([HumanMessage(content=[{"type": "text", "text": "look"}, {"type": "image", "url": "x"}])])
    assert "look" in llama.prompts[0] and "image omitted" in llama.prompts[0]


def test_temperature_zero_is_passed_through(stub):
    model, llama = stub("ok")
    model.invoke("hi")
    assert llama.kwargs["temperature"] == 0.0


def test_generation_lock_makes_processes_take_turns(tmp_path):
    probe = (
        "import fcntl, sys\n"
        "f = open(sys.argv[1], 'a')\n"
        "try:\n"
        "    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "    print('free')\n"
        "except OSError:\n"
        "    print('busy')\n"
    )
    path = str(tmp_path / "generation.lock")

    def other_process() -> str:
        return subprocess.run([sys.executable, "-c", probe, path], capture_output=True, text=True).stdout.strip()

    lock = chat.GenerationLock(path)
    with lock:
        assert other_process() == "busy"
    assert other_process() == "free"
    with lock:  # reusable
        pass


def test_missing_llama_cpp_says_what_to_install(monkeypatch):
    from herdsman.models import local

    monkeypatch.setattr(local, "llama_cpp_available", lambda: False)
    with pytest.raises(local.LocalModelUnavailable, match=r"herdsman\[local\]"):
        local.build_local_model(LocalModelConfig())


def test_missing_gguf_path_is_an_error_naming_the_key(tmp_path, monkeypatch):
    from herdsman.models import local

    monkeypatch.setattr(local, "_require_llama_cpp", lambda: None)
    with pytest.raises(local.LocalModelUnavailable, match="local_model.path"):
        local.build_local_model(LocalModelConfig(path=tmp_path / "nope.gguf"))


# --------------------------------------------------------------------------------------------
# The real model


@pytest.fixture(scope="module")
def real_model():
    """The embedded model built from the default config (weights fetched on first use)."""
    if not HAVE_LLAMA:
        pytest.skip(NO_LLAMA)
    from herdsman.models.local import build_local_model

    model = build_local_model(LocalModelConfig(max_tokens=160), progress=True)
    model.load()
    return model


ORDERS = {"A-1042": "shipped on 2024-03-14 by Zephyr Freight, tracking number ZX-77120"}


def _order_tool(calls: list[str]):
    @tool
    def lookup_order_status(order_id: str) -> str:
        """Look up the shipping status of an order by its id."""
        calls.append(order_id)
        return f"Order {order_id}: {ORDERS.get(order_id.strip(), 'no such order')}."

    return lookup_order_status


@pytest.mark.local_model
def test_agent_calls_the_tool_and_answers_from_its_result(real_model):
    from langchain.agents import create_agent

    calls: list[str] = []
    agent = create_agent(real_model, tools=[_order_tool(calls)])
    result = agent.invoke({"messages": [("user", "What is the status of order A-1042?")]})
    assert calls and calls[0].strip() == "A-1042"
    assert len(calls) <= 2, f"the model looped on the tool: {calls}"
    tool_messages = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert tool_messages and "ZX-77120" in tool_messages[0].content
    final = result["messages"][-1]
    assert isinstance(final, AIMessage) and not final.tool_calls
    assert "ZX-77120" in final.content or "Zephyr" in final.content


@pytest.mark.local_model
async def test_agent_streaming_keeps_tool_calls(real_model):
    from langchain.agents import create_agent

    written: dict[str, str] = {}

    @tool
    def write_file(path: str, content: str) -> str:
        """Write text content to a file at the given path."""
        written[path] = content
        return f"Wrote {len(content)} characters to {path}"

    agent = create_agent(real_model, tools=[write_file])
    streamed_calls: list[dict[str, Any]] = []
    text_chunks: list[str] = []
    async for chunk, _meta in agent.astream(
        {"messages": [("user", "Save the text 'hello herdsman' to the file notes.txt.")]},
        stream_mode="messages",
    ):
        if isinstance(chunk, AIMessageChunk):
            streamed_calls.extend(chunk.tool_call_chunks)
            if chunk.content:
                text_chunks.append(str(chunk.content))
    assert any(c["name"] == "write_file" for c in streamed_calls)
    args = json.loads(next(c["args"] for c in streamed_calls if c["name"] == "write_file"))
    assert args["path"].endswith("notes.txt")
    assert "hello herdsman" in args["content"]
    assert written and "hello herdsman" in next(iter(written.values()))
    assert not any("<tool_call>" in t for t in text_chunks)


@pytest.mark.local_model
async def test_model_astream_yields_a_tool_call(real_model):
    bound = real_model.bind_tools([get_weather])
    full = None
    async for chunk in bound.astream("What's the weather in Paris?"):
        full = chunk if full is None else full + chunk
    assert [c["name"] for c in full.tool_calls] == ["get_weather"]
    assert "paris" in full.tool_calls[0]["args"]["city"].lower()
    assert full.usage_metadata["input_tokens"] > 0


@pytest.mark.local_model
def test_plain_answers_stream_and_are_deterministic(real_model):
    chunks = [c.content for c in real_model.stream("Count from 1 to 5, separated by commas.")]
    assert len([c for c in chunks if c]) > 3
    text = "".join(chunks)
    assert "1" in text and "5" in text
    again = real_model.invoke("Count from 1 to 5, separated by commas.")
    assert again.content == text.strip()


@pytest.mark.local_model
def test_fallback_template_is_the_models_own(real_model):
    """The template used for GGUF files without one is Qwen2.5's, as shipped in the weights."""
    source = real_model.load().llama.metadata["tokenizer.chat_template"]
    assert source.strip() == chat.FALLBACK_CHAT_TEMPLATE.strip()


LONG_SYSTEM = "You are a careful assistant for a shipping company. " + " ".join(
    f"Rule {i}: order ids look like A-{1000 + i} and are always quoted exactly." for i in range(10)
)


@pytest.mark.local_model
def test_saved_system_prompt_gives_the_same_reply_as_processing_it(real_model, tmp_path, caplog):
    """The system message's KV state is saved once per prompt version; a new thread restored
    from it (in memory or from disk) answers exactly as one that processed the prompt itself."""
    import logging

    from herdsman.models.local.prompt_cache import PromptCache

    bound_fields = dict(model_path=real_model.model_path, n_ctx=real_model.n_ctx, max_tokens=40)
    cached = ChatLocalLlama(**bound_fields, prompt_cache_dir=str(tmp_path))
    plain = ChatLocalLlama(**bound_fields, prompt_cache=False)
    question = [SystemMessage(content=LONG_SYSTEM), HumanMessage(content="Which tool tells me where order A-1042 is?")]
    other = [SystemMessage(content=LONG_SYSTEM), HumanMessage(content="Give me the weather in Oslo.")]
    tools = [get_weather, _order_tool([])]
    with caplog.at_level(logging.INFO, logger="herdsman.models.local.chat"):
        first = cached.bind_tools(tools).invoke(question)  # processes the head and saves it
        assert len(list(tmp_path.glob("*.kv"))) == 1
        real_model.invoke("Name one color.")  # another prompt replaces the in-memory state
        restored = cached.bind_tools(tools).invoke(other)  # restored from the file
        plain.invoke("Name one color.")
        reference = plain.bind_tools(tools).invoke(other)  # processed from scratch
    outcomes = [f"prompt_cache {e['outcome']}" for e in logged_events(caplog.records) if e["event"] == "prompt_cache"]
    assert outcomes[:2] == ["prompt_cache saved", "prompt_cache disk"], outcomes
    assert first.tool_calls or first.content
    assert (restored.content, [(c["name"], c["args"]) for c in restored.tool_calls]) == (
        reference.content,
        [(c["name"], c["args"]) for c in reference.tool_calls],
    )
    assert len(list(tmp_path.glob("*.kv"))) == 1  # one prompt version, one file
    # a damaged file is recomputed and replaced, never fatal
    damaged = next(tmp_path.glob("*.kv"))
    damaged.write_bytes(b"HERDSMAN-KV1\n\x05")
    real_model.invoke("Name one color.")
    again = cached.bind_tools(tools).invoke(other)
    assert (again.content, again.tool_calls and again.tool_calls[0]["name"]) == (
        reference.content,
        reference.tool_calls and reference.tool_calls[0]["name"],
    )
    assert next(tmp_path.glob("*.kv")).stat().st_size > 1000
    assert isinstance(PromptCache(tmp_path, "x").key([1, 2]), str)
    # a new version of the system message that only adds at its end (an active skill's block):
    # the saved state is restored, cut where they part, and only the rest processed
    extended = [SystemMessage(content=LONG_SYSTEM + " Rule 99: answer in one short sentence."), other[1]]
    real_model.invoke("Name one color.")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="herdsman.models.local.chat"):
        prefixed = cached.bind_tools(tools).invoke(extended)
    events = [e for e in logged_events(caplog.records) if e["event"] == "prompt_cache"]
    assert [e["outcome"] for e in events] == ["prefix"] and 0 < events[0]["computed"] < events[0]["tokens"] - 128
    plain.invoke("Name one color.")
    reference = plain.bind_tools(tools).invoke(extended)
    assert (prefixed.content, [(c["name"], c["args"]) for c in prefixed.tool_calls]) == (
        reference.content,
        [(c["name"], c["args"]) for c in reference.tool_calls],
    )


def test_a_grammar_llama_cpp_refuses_means_unconstrained_decoding_not_a_failed_reply(stub, monkeypatch):
    """llama.cpp returns no sampler for a grammar it cannot parse (an empty enum in a tool's
    schema): found before generating, the reply is decoded and parsed as without a grammar."""
    pytest.importorskip("llama_cpp", reason=NO_LLAMA)
    model, llama = stub(CALL)
    monkeypatch.setattr(chat, "grammar_accepted", lambda llama, grammar: False)
    request = model._request([HumanMessage("Oslo?")], None, {"tools": [convert(get_weather)]})
    assert request.grammar is None
    assert model.bind_tools([get_weather]).invoke("Oslo?").tool_calls[0]["args"] == {"city": "Paris"}
    assert not hasattr(llama, "_init_sampler")  # no grammar in the sampler chain


# --------------------------------------------------------------------------------------------
# Drafts: the call being written, on the run's custom stream


def _drafts_in_a_graph(model: Any, question: str, modes: list[str]) -> tuple[list[dict[str, Any]], AIMessage]:
    """Run the bound model in a one-node LangGraph graph; the custom events and its reply."""
    from langgraph.graph import START, MessagesState, StateGraph

    bound = model.bind_tools([get_weather])
    graph = StateGraph(MessagesState)
    graph.add_node("model", lambda state: {"messages": [bound.invoke(state["messages"])]})
    graph.add_edge(START, "model")
    parts = list(graph.compile().stream({"messages": [HumanMessage(question)]}, stream_mode=[*modes, "values"]))
    drafts = [data for mode, data in parts if mode == "custom"]
    final = [data for mode, data in parts if mode == "values"][-1]["messages"][-1]
    return drafts, final


@pytest.mark.parametrize("modes", [["custom", "messages"], ["custom"]], ids=["streaming", "invoke"])
def test_a_call_being_written_goes_out_as_growing_drafts_then_whole(stub, modes):
    """The embedded model sends each call whole at the end; meanwhile the run's custom stream gets
    its text so far, growing, and the call that runs is the parsed one."""
    model, _ = stub("Let me check.\n" + CALL, draft_interval=0)
    drafts, final = _drafts_in_a_graph(model, "Weather in Paris?", modes)
    texts = [d["text"] for d in drafts]
    assert len(texts) > 5 and all(d["type"] == "tool_call_draft" and d["index"] == 0 for d in drafts)
    assert all(a != b and b.startswith(a) for a, b in zip(texts, texts[1:], strict=False))  # it grows, never repeats
    assert texts[-1].startswith('{"name": "get_weather", "arguments": {"city": "Paris')
    assert drafts[-1]["name"] == "get_weather" and drafts[0]["name"] is None
    assert not any("Let me check" in t or "tool_call>" in t for t in texts)  # the call only, no tags
    assert [(c["name"], c["args"]) for c in final.tool_calls] == [("get_weather", {"city": "Paris"})]


def test_drafts_are_throttled_and_a_plain_answer_has_none(stub):
    model, _ = stub(CALL, "It is sunny in Paris today, about 21 degrees.", draft_interval=60)
    drafts, _ = _drafts_in_a_graph(model, "Weather in Paris?", ["custom"])
    assert len(drafts) == 1  # the first, then none within the interval
    drafts, final = _drafts_in_a_graph(model, "And now?", ["custom"])
    assert drafts == [] and final.content.startswith("It is sunny")


async def test_drafts_reach_an_async_graph_run_too(stub):
    """The gateway streams graphs asynchronously: the model's generation then runs in an executor
    thread, and its drafts still reach the run's custom stream."""
    from langgraph.graph import START, MessagesState, StateGraph

    model, _ = stub(CALL, draft_interval=0)
    bound = model.bind_tools([get_weather])

    async def call(state):
        return {"messages": [await bound.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call)
    graph.add_edge(START, "model")
    compiled = graph.compile()
    drafts = [
        d
        async for mode, d in compiled.astream(
            {"messages": [HumanMessage("Weather?")]}, stream_mode=["custom", "messages"]
        )
        if mode == "custom"
    ]
    assert len(drafts) > 5 and drafts[-1]["name"] == "get_weather"


def test_outside_a_graph_run_the_model_works_without_drafts(stub):
    model, _ = stub(CALL, draft_interval=0)
    reply = model.bind_tools([get_weather]).invoke("Weather in Paris?")
    assert [c["args"] for c in reply.tool_calls] == [{"city": "Paris"}]


@pytest.mark.parametrize("streaming", [False, True])
def test_a_reply_says_its_output_pace(stub, streaming):
    model, _ = stub("The weather in Paris is sunny today, 21 degrees and a light wind.")
    if streaming:
        reply = None
        for chunk in model.stream("Weather?"):
            reply = chunk if reply is None else reply + chunk
    else:
        reply = model.invoke("Weather?")
    pace = reply.response_metadata["output_tokens_per_second"]
    assert reply.usage_metadata["output_tokens"] > 2 and isinstance(pace, float) and pace > 0
