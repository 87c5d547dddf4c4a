"""The tool-call grammar in llama.cpp, over the embedded model's real vocabulary (no generation).

llama.cpp aborts the whole process when a lazy grammar is triggered by text it does not accept,
so the probes run in a child process: the test fails, rather than pytest dying, if one does.
Marked ``local_model`` (it needs the weights for the vocabulary), but it loads the vocabulary
only and never takes the generation lock.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import textwrap

import pytest

pytestmark = pytest.mark.local_model
pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install 'herdsman[local]')")

PROBE = textwrap.dedent(
    """
    import ctypes, json, sys
    import llama_cpp
    from langchain_core.tools import tool
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from herdsman.config.schema import LocalModelConfig
    from herdsman.models.local.grammar import grammar_accepted, grammar_sampler, tool_grammar
    from herdsman.models.local.weights import ensure_weights

    @tool
    def get_weather(city: str) -> str:
        "Weather of a city."

    @tool
    def add(a: int, b: int) -> int:
        "Add two integers."

    TOOLS = [convert_to_openai_tool(t) for t in (get_weather, add)]
    llama = llama_cpp.Llama(model_path=str(ensure_weights(LocalModelConfig().variant, None, progress=False)),
                            vocab_only=True, verbose=False)
    for line in sys.stdin:
        job = json.loads(line)
        if job.get("build"):  # what chat.py does with the tools: build, fall back in Python or not
            try:
                grammar = tool_grammar(job["tools"], forced=job["forced"])
            except Exception as exc:
                print("PROBE " + json.dumps({"built": "python refused: " + type(exc).__name__}), flush=True)
                continue
            print("PROBE " + json.dumps({"built": "yes" if grammar_accepted(llama, grammar) else "refused"}), flush=True)
            continue
        sampler = grammar_sampler(llama, tool_grammar(job.get("tools") or TOOLS, forced=job["forced"]))
        if job.get("sweep"):  # after the text, each token of the vocabulary as sampling would take it
            for token in llama.tokenize(job["text"].encode(), add_bos=False, special=job["special"]):
                llama_cpp.llama_sampler_accept(sampler, token)
            for token in range(llama.n_vocab()):
                clone = llama_cpp.llama_sampler_clone(sampler)
                data = (llama_cpp.llama_token_data * 1)(llama_cpp.llama_token_data(token, 1.0, 0.0))
                llama_cpp.llama_sampler_apply(clone, ctypes.byref(llama_cpp.llama_token_data_array(data, 1, -1, False)))
                if data[0].logit > -1e30:
                    llama_cpp.llama_sampler_accept(clone, token)
                llama_cpp.llama_sampler_free(clone)
            llama_cpp.llama_sampler_free(sampler)
            print("PROBE " + json.dumps({"swept": True}), flush=True)
            continue

        def allowed(token):
            data = (llama_cpp.llama_token_data * 1)(llama_cpp.llama_token_data(token, 1.0, 0.0))
            array = llama_cpp.llama_token_data_array(data, 1, -1, False)
            llama_cpp.llama_sampler_apply(sampler, ctypes.byref(array))
            return data[0].logit > -1e30

        tokens = llama.tokenize(job["text"].encode(), add_bos=False, special=job["special"])
        fed = 0
        for token in tokens:  # as sampling does: a token the grammar refuses is never chosen
            if not allowed(token):
                break
            llama_cpp.llama_sampler_accept(sampler, token)
            fed += 1
        kept = {c: allowed(llama.tokenize(c.encode(), add_bos=False, special=False)[0]) for c in job["candidates"]}
        kept["all tokens allowed"] = fed == len(tokens)
        llama_cpp.llama_sampler_free(sampler)
        print("PROBE " + json.dumps(kept), flush=True)
    """
)


class Prober:
    """One child process that feeds texts to the grammar (loading the vocabulary once); a text
    that makes llama.cpp abort ends the child, and the probe of that text fails."""

    def __init__(self) -> None:
        self.log = tempfile.TemporaryFile(
            "w+"
        )  # not a pipe: llama.cpp's grammar errors would fill it and hang the child
        self.child = subprocess.Popen(
            [sys.executable, "-c", PROBE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )

    def __call__(
        self,
        text: str,
        *,
        candidates: tuple[str, ...] = (),
        forced: bool = False,
        special: bool = True,
        tools: list[dict] | None = None,
        build: bool = False,
        sweep: bool = False,
    ) -> dict[str, bool]:
        """Feed ``text`` to a fresh grammar (of ``tools``, OpenAI-style dicts; the module's two by
        default) token by token, as sampling would (up to a token the grammar refuses); which
        ``candidates`` (their first token) the grammar then allows, and ``"all tokens allowed"``.
        With ``build``: only whether the grammar is built (``{"built": ...}``), as chat.py does;
        with ``sweep``: every token of the vocabulary after ``text`` (fails if one aborts)."""
        if self.child.poll() is not None:
            self.__init__()  # an earlier probe ended the child: start another
        job = {
            "text": text,
            "candidates": list(candidates),
            "forced": forced,
            "special": special,
            "tools": tools,
            "build": build,
            "sweep": sweep,
        }
        self.child.stdin.write(json.dumps(job) + "\n")
        self.child.stdin.flush()
        for line in self.child.stdout:  # llama.cpp's crash report may come on stdout too
            if line.startswith("PROBE "):
                return json.loads(line.removeprefix("PROBE "))
        self.child.kill()
        self.child.wait(timeout=60)
        self.log.seek(0)
        pytest.fail(f"llama.cpp rejected {text[:200]!r}: {self.log.read()[-800:]}")

    def close(self) -> None:
        """End the child."""
        if self.child.poll() is None:
            self.child.stdin.close()
            self.child.wait(timeout=60)
        self.log.close()


@pytest.fixture(scope="module")
def probe():
    prober = Prober()
    yield prober
    prober.close()


@pytest.mark.parametrize(
    "text",
    [
        'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        '<tool_call>\n\n  {\n    "name": "get_weather",\n    "arguments": {\n      "city": "Paris"\n    }\n  }\n</tool_call>',
        '<tool_call>{"name":"add","arguments":{"a":1,"b":2}}</tool_call>\n<tool_call>{"name":"add","arguments":{"a":3,"b":4}}</tool_call>',
        '{"name": "get_weather", "arguments": {"city": "Oslo"}}',
        '```json\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n```',
        'JSON such as {"name": "Alice", "age": 3} is an answer, and so is {"a": [1, 2]}.',
    ],
)
def test_what_models_write_is_accepted_without_aborting(probe, text):
    assert probe(text)["all tokens allowed"]


def test_a_call_spelled_out_in_plain_characters_triggers_the_grammar_too(probe):
    """``<tool_call>`` written as ordinary tokens, then pretty-printed JSON."""
    text = '<tool_call>\n{\n  "name": "add",\n  "arguments": {"a": 1, "b": 2}\n}\n</tool_call>'
    assert probe(text, special=False)["all tokens allowed"]
    assert not probe('<tool_call>\n{"name": "add", "arguments": {"a": "one"}}', special=False)["all tokens allowed"]


@pytest.mark.parametrize(
    "text",
    [
        "Sure: <tool_call>. Not a call",
        "x <tool_call>xyz",
        '{"name": "add"}',
        '{"name": "add"} and more',
        '{\v"name": "add", "arguments": {"a": 1, "b": 2}}',
        '```json\n{"name": "add"}```',
        # a token running past the tool's name ('"\n'): the grammar has no space before the comma
        '{"name": "add"\n, "arguments": {"a": 1, "b": 2}}',
        # more whitespace than the grammar's 24 characters inside the trigger
        "{" + " " * 25 + '"name": "add", "arguments": {"a": 1, "b": 2}}',
        # std::regex recurses once per character repeated: long runs overflowed the stack (SIGSEGV)
        " " * 30000 + "done",
        "-" * 64000,
    ],
)
def test_text_a_user_could_make_the_model_write_never_aborts_the_process(probe, text):
    """A token that completes a trigger and runs past it (``>.`` after ``<tool_call``) would hand
    llama.cpp text its grammar cannot take, and llama.cpp aborts the whole gateway: the triggers
    end where a call's text is still valid, so such text is an answer."""
    probe(text, special=False)
    probe(text, special=True)


@pytest.mark.parametrize("text", ["<tool_call", '{"name": "add', '{"name": "add"', '{"name": "add",' + " " * 23])
def test_no_token_of_the_vocabulary_aborts_at_a_trigger(probe, text):
    """Each of the vocabulary's tokens after the start of a trigger: the ones that complete it
    and run past it (``>.``, ``"\\n``, ``" ,``) must leave text the grammar accepts, or none."""
    assert probe(text, special=False, sweep=True) == {"swept": True}


def test_after_the_trigger_only_bound_tools_and_their_arguments_are_allowed(probe):
    assert probe('<tool_call>\n{"name": "', candidates=("get_weather", "add", "rm", "bash")) == {
        "get_weather": True,
        "add": True,
        "rm": False,
        "bash": False,
        "all tokens allowed": True,
    }
    kept = probe('<tool_call>\n{"name": "add", "arguments": {"a": ', candidates=("1", '"one"', "true"))
    assert kept == {"1": True, '"one"': False, "true": False, "all tokens allowed": True}  # an integer argument
    kept = probe('<tool_call>\n{"name": "get_weather", "arguments": {"', candidates=("city", "country", "}"))
    assert kept == {"city": True, "country": False, "}": False, "all tokens allowed": True}  # the required key only


def test_a_reply_that_opens_with_a_bare_call_is_constrained_too(probe):
    kept = probe('{"name": "add", "', candidates=("arguments", "foo"))
    assert kept == {"arguments": True, "foo": False, "all tokens allowed": True}
    kept = probe('```json\n{\n  "name": "add",\n  "arguments": {"', candidates=("a", "c"))
    assert kept == {"a": True, "c": False, "all tokens allowed": True}


def test_before_the_trigger_the_model_writes_freely(probe):
    kept = probe("The answer is", candidates=(" 42", " rm", "{"))
    assert all(kept.values())
    assert probe('JSON: {"name": "add", "arguments": {"a": "x"}} is not a call here')["all tokens allowed"]


def test_a_forced_call_is_constrained_from_the_first_token(probe):
    assert probe("", forced=True, candidates=("<tool_call>", "Sure", "{")) == {
        "<tool_call>": True,
        "Sure": False,
        "{": False,
        "all tokens allowed": True,
    }


def _tool(name: str, parameters: object) -> dict:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def _one(prop: object) -> dict:
    return {"type": "object", "properties": {"x": prop}, "required": ["x"]}


AWKWARD_SCHEMAS = {
    "empty": {},
    "enum_empty": _one({"enum": []}),
    "anyof_empty": _one({"anyOf": []}),
    "type_list_empty": _one({"type": []}),
    "type_unknown": _one({"type": "bogus"}),
    "false": _one(False),
    "not": _one({"not": {}}),
    "anyof_mixed": _one({"anyOf": [{"type": "null"}, {"type": ["string", "integer"]}, {}]}),
    "ref_loop": {"$defs": {"A": _one({"$ref": "#/$defs/A"})}, **_one({"$ref": "#/$defs/A"})},
    "ref_missing": _one({"$ref": "#/$defs/Nope"}),
    "ref_remote": _one({"$ref": "https://example.com/schema.json"}),
    "pattern_backreference": _one({"type": "string", "pattern": "^(a)\\1$"}),
    "pattern_unanchored": _one({"type": "string", "pattern": "(?P<n>a"}),
    "pattern_quotes": _one({"type": "string", "pattern": '^["\\\\]+$'}),
    "format": {"type": "object", "properties": {"x": {"type": "string", "format": "date-time"}}},
    "min_above_max": _one({"type": "integer", "minimum": 5, "maximum": 3}),
    "additional_properties_schema": {"type": "object", "additionalProperties": {"type": "integer"}},
    "required_not_a_property": {"type": "object", "properties": {}, "additionalProperties": False, "required": ["q"]},
    "odd_property_names": {"type": "object", "properties": {'a"b\\c': {"type": "string"}, "café 中": {}, "": {}}},
    "huge_enum": _one({"enum": [f'v{i}\\é"' for i in range(3000)]}),
    "not_an_object": {"type": "string"},
}


@pytest.mark.parametrize("schema", AWKWARD_SCHEMAS.values(), ids=AWKWARD_SCHEMAS.keys())
@pytest.mark.parametrize("forced", [False, True])
def test_a_tool_schema_from_anywhere_builds_a_grammar_or_falls_back_without_aborting(probe, schema, forced):
    """MCP servers send any schema: the grammar is built, or refused in Python or by llama.cpp
    (chat.py then decodes unconstrained); llama.cpp never aborts on it."""
    built = probe("", tools=[_tool("t", schema)], forced=forced, build=True)["built"]
    assert built == "yes" or built.startswith(("python refused", "refused"))
    if built == "yes":
        assert probe('<tool_call>{"name": "t", "arguments": ', tools=[_tool("t", schema)], forced=forced)[
            "all tokens allowed"
        ]


# values a tool can print, and so value_answer.py can offer in its enum
ODD_VALUES = [
    "C:\\Users\\me",
    "end\\",
    "a\x00b",
    "tab\there",
    "caf\u00e9",
    "中文",
    "x" * 120,
    "\\u0041",
    "(not one value)",
]


@pytest.mark.parametrize("value", ODD_VALUES)
def test_each_value_of_an_enum_can_be_written_as_valid_json(probe, value):
    """A value is written as its JSON text (backslash and NUL escaped); the grammar used to ask
    for ``"C:\\Users"`` (invalid JSON) or for a raw NUL, a byte no token can start with."""
    from herdsman.middleware.value_answer import value_tool

    tools = [value_tool(ODD_VALUES)]
    call = {"name": "answer_value", "arguments": {"value": value}}
    text = f"<tool_call>\n{json.dumps(call, ensure_ascii=False)}\n</tool_call>"
    assert probe(text, tools=tools, forced=True)["all tokens allowed"]
    assert probe(text, tools=tools, forced=False)["all tokens allowed"]


def test_no_value_leaves_the_model_without_a_token(probe):
    """After ``"a`` of ``a<NUL>b`` the grammar allowed only a NUL, which llama.cpp refuses in
    every token: all candidates refused, and sampling one anyway aborts the process."""
    from herdsman.middleware.value_answer import value_tool

    text = '<tool_call>\n{"name": "answer_value", "arguments": {"value": "a'
    assert probe(text, tools=[value_tool(["a\x00b"])], forced=True, candidates=("\\",))["\\"]


def test_a_tool_name_outside_ascii_triggers_as_the_grammar_spells_it(probe):
    """The trigger and the grammar spell the name alike (``"café"``, not ``"caf\\u00e9"``): a
    trigger the grammar then refuses would abort the process."""
    tools = [_tool("café", _one({"type": "string"}))]
    kept = probe('{"name": "café", "', tools=tools, candidates=("arguments", "foo"))
    assert kept == {"arguments": True, "foo": False, "all tokens allowed": True}
    probe('{"name": "caf\\u00e9", "arguments": {"x": "y"}}', tools=tools)  # an answer, not a trigger
