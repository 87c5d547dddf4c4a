"""Constrained decoding for the embedded model: a tool call it writes is always well-formed.

Each reply of the model is either a final answer (free text) or calls of bound tools, and the
model chooses which by what it starts to write. When it starts a call (the ``<tool_call>`` token
its chat template teaches, or a reply that opens with ``{"name": "<a bound tool>"``, bare or in a
```json fence), llama.cpp's *lazy* grammar takes over from that point: the rest of the call can
only be a JSON object naming a bound tool with arguments valid for that tool's JSON schema
(required keys present, no unknown keys, types and enums kept), closed by ``</tool_call>``, and
further calls, or the end of the reply. Text before the trigger stays unconstrained, so an answer
costs nothing. A forced call (``tool_choice`` "any" or a tool's name) uses the same grammar from
the first token (not lazy).

Why here and not llama-cpp-python's chat handlers: their function-calling formats drop tool
messages (see :mod:`herdsman.models.local.chat`) and ``create_completion`` only takes a grammar
that constrains the whole reply; the lazy sampler (``llama_sampler_init_grammar_lazy_patterns``,
what llama.cpp's own server uses for tool calls) is reached by building the sampler chain here.
The JSON schema to GBNF conversion is llama-cpp-python's :class:`SchemaConverter`.
"""

from __future__ import annotations

import copy
import ctypes
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
_CONVERTER_SPACE = '" "?'
SPACE = "[ \\t\\n\\r]{0,24}"
"""Whitespace between tokens of a call: the converter allows one space, but a model writes
pretty-printed JSON, and llama.cpp ABORTS the process when the text that triggered a lazy grammar
(from the trigger to the end of its token, say ``>\\n\\n``) does not fit it. Bounded, so a model
cannot loop on whitespace."""
ROOT = "toolcalls"
"""The grammar's start rule: one or more tagged calls, or one bare call."""


def json_text(value: Any) -> str:
    """``value`` as JSON the way a model writes it: non-ASCII characters as themselves (a model
    writes ``"café"``, not ``"caf\\u00e9"``), control characters escaped (a NUL is ``\\u0000``:
    llama.cpp refuses every token that starts with a NUL byte, so a literal NUL would leave no
    token to choose); ASCII escapes when the text does not encode (a lone surrogate)."""
    text = json.dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value)
    return text


def _converter() -> Any:
    """llama-cpp-python's :class:`SchemaConverter` with literals fixed: it escapes ``"`` and line
    breaks but not the backslash, so a constant's JSON text (``"C:\\\\x"``, ``"a\\"b"``) was
    read back by the GBNF parser as GBNF escapes: the grammar then asked for invalid JSON
    (``"C:\\x"``), or for a NUL (``\\u0000``) no token can write, and a model that started such a
    value had no token left, which aborts llama.cpp. Constants are :func:`json_text`."""
    from llama_cpp.llama_grammar import SchemaConverter

    class Converter(SchemaConverter):  # type: ignore[misc]  # llama_cpp ships no type information: the base is Any
        def _format_literal(self, literal: str) -> str:
            return '"' + re.sub(r'[\\"\r\n]', lambda m: _GBNF_ESCAPES[m.group(0)], literal) + '"'

        def _generate_constant_rule(self, value: Any) -> str:
            return self._format_literal(json_text(value))

    untyped: Any = Converter  # its base (llama_cpp's) has no type information
    return untyped(prop_order={"name": 0, "arguments": 1}, allow_fetch=False, dotall=False, raw_pattern=False)


_GBNF_ESCAPES = {"\\": "\\\\", '"': '\\"', "\r": "\\r", "\n": "\\n"}


def tool_name(tool: dict[str, Any]) -> str:
    """The name of a tool given as an OpenAI-style dict (``{"function": {"name": ...}}``) or flat."""
    return str(tool.get("function", {}).get("name") or tool.get("name", ""))


def _closed(schema: Any) -> Any:
    """``schema`` with ``additionalProperties: false`` on every object that lists its properties
    (a model must not invent arguments), and the keys the converter does not use dropped."""
    if isinstance(schema, list):
        return [_closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _closed(v) for k, v in schema.items() if k not in ("description", "title", "examples")}
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    if "properties" in schema:  # property names are data, not schemas: keep them all
        out["properties"] = {name: _closed(value) for name, value in schema["properties"].items()}
    return out


def _inline_refs(schema: Any, defs: dict[str, Any], depth: int = 0) -> Any:
    """``schema`` with its local ``$ref``s (``#/$defs/X``, as pydantic writes nested models)
    replaced by what they name, so it can sit inside the call's schema; a ref nested deeper than
    a few levels (a recursive model) becomes any JSON value."""
    if isinstance(schema, list):
        return [_inline_refs(item, defs, depth) for item in schema]
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(("#/$defs/", "#/definitions/")):
        target = defs.get(ref.rsplit("/", 1)[-1])
        return _inline_refs(target, defs, depth + 1) if target is not None and depth < 4 else {}
    return {k: _inline_refs(v, defs, depth) for k, v in schema.items() if k not in ("$defs", "definitions")}


def call_schema(tools: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The JSON schema of one call of any of ``tools`` (OpenAI-style tool dicts):
    ``{"name": <tool>, "arguments": <that tool's parameters>}``."""
    variants = []
    for tool in tools:
        parameters = tool.get("function", tool).get("parameters") or {"type": "object", "properties": {}}
        defs = {**(parameters.get("definitions") or {}), **(parameters.get("$defs") or {})}
        parameters = _closed(_inline_refs(copy.deepcopy(parameters), defs))
        parameters.setdefault("type", "object")
        variants.append(
            {
                "type": "object",
                "properties": {"name": {"const": tool_name(tool)}, "arguments": parameters},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        )
    return variants[0] if len(variants) == 1 else {"oneOf": variants}


def gbnf(tools: Sequence[dict[str, Any]]) -> str:
    """The GBNF grammar of a reply's calls of ``tools``, start rule :data:`ROOT`.

    ``toolcalls`` is either tagged calls (``<tool_call>`` + JSON + ``</tool_call>``, repeated)
    or one bare JSON call (the start of a reply that opened with ``{"name": ...``, possibly closed
    by a fence).
    """
    converter = _converter()
    schema = converter.resolve_refs(call_schema(tools), "tools")
    converter.visit(schema, "call")
    rules = converter.format_grammar().replace(f"space ::= {_CONVERTER_SPACE}", f"space ::= {SPACE}")
    if f"space ::= {SPACE}" not in rules:
        raise RuntimeError("llama_cpp.llama_grammar changed its whitespace rule; update herdsman's grammar.SPACE")
    tagged = f'"{TOOL_CALL_OPEN}" space call space "{TOOL_CALL_CLOSE}"'
    return f'{rules}\ntagged ::= {tagged}\n{ROOT} ::= tagged (space tagged)* | call ("```")?\n'


def trigger_patterns(tool_names: Sequence[str]) -> list[str]:
    r"""Regexes that start the grammar, matched against the whole reply so far after each token;
    the grammar is then fed the text from the first group to the end.

    Each one must END where a call's text is still a valid start of the grammar, because
    llama.cpp aborts the process when the text it is fed does not fit: ``<tool_call>`` as the
    reply's last characters (spelled in plain characters; the template's own token is a trigger
    token), or ``{"name": "<a bound tool>"`` (and a comma) opening the reply, bare or in a
    ```json fence. A token that runs past that point (``<tool_call>.``, ``"add"\n``) triggers
    nothing: its text stays an answer, and the completion check names it as a call written as
    text. So the group is exactly what the grammar accepts: its whitespace (:data:`SPACE`, no
    ``\s``: a vertical tab is not JSON whitespace, and never more than the grammar's 24
    characters), the tool name as the grammar's JSON literal spells it (escapes and all), and no
    space between the name and its comma (the grammar has none).

    No unbounded repetition either: libstdc++'s ``std::regex`` matches by recursion, one stack
    frame per repetition, and every token reruns the patterns over the whole reply so far, so
    ``^[\s\S]*?`` over some 60,000 characters (or ``[ \t\n\r]*`` over 26,000 spaces, about 800
    tokens) overflows the stack and kills the process. The ``<tool_call>`` pattern is therefore
    anchored at the end only (llama.cpp searches a pattern that does not span ``^...$``)."""
    names = "|".join(re.escape(json_text(n)) for n in sorted(tool_names, key=len, reverse=True))
    ws = SPACE
    bare = rf'\{{{ws}"name"{ws}:{ws}(?:{names})(?:,{ws})?'
    return [
        rf"({re.escape(TOOL_CALL_OPEN)})$",
        rf"^{ws}(?:```(?:json)?{ws})?({bare})$",
    ]


@dataclass(frozen=True)
class ToolGrammar:
    """What a generation needs to constrain its calls: the grammar text and whether it waits for
    the model to start a call (``lazy``) or holds from the first token (a forced call)."""

    text: str
    lazy: bool
    patterns: tuple[str, ...] = ()


_cache: dict[tuple[str, bool], ToolGrammar] = {}
CACHE_SIZE = 256
"""Grammars kept (and llama.cpp's verdicts on them): a long-running gateway sees new tool sets."""


def tool_grammar(tools: Sequence[dict[str, Any]], forced: bool) -> ToolGrammar | None:
    """The grammar for replies with ``tools`` bound (None without tools); ``forced``: the reply
    must be a call. Built once per tool set (converting the schemas takes milliseconds)."""
    if not tools:
        return None
    key = (json.dumps(list(tools), sort_keys=True, default=str), forced)
    if key not in _cache:
        if len(_cache) >= CACHE_SIZE:  # value_answer.py binds a new enum per question
            _cache.clear()
        text = gbnf(tools)
        if forced:
            _cache[key] = ToolGrammar(text + 'forced ::= tagged ("\\n" tagged)*\n', lazy=False)
        else:
            _cache[key] = ToolGrammar(text, lazy=True, patterns=tuple(trigger_patterns([tool_name(t) for t in tools])))
    return _cache[key]


def grammar_sampler(llama: Any, grammar: ToolGrammar) -> Any:
    """llama.cpp's grammar sampler for ``grammar`` over ``llama``'s vocabulary (a raw pointer,
    owned by whoever chains it): lazy, triggered by the ``<tool_call>`` token (when the vocabulary
    has it as one token) or the patterns, or constraining from the first token."""
    import llama_cpp

    vocab = llama._model.vocab
    if grammar.lazy:
        patterns = (ctypes.c_char_p * len(grammar.patterns))(*(p.encode() for p in grammar.patterns))
        opener = llama.tokenize(TOOL_CALL_OPEN.encode(), add_bos=False, special=True)
        ids = opener if len(opener) == 1 else []  # the template's own token, when it has one
        tokens = (llama_cpp.llama_token * len(ids))(*ids)
        chained = llama_cpp.llama_sampler_init_grammar_lazy_patterns(
            vocab,
            grammar.text.encode(),
            ROOT.encode(),
            patterns,
            len(grammar.patterns),
            tokens,
            len(ids),
        )
    else:
        chained = llama_cpp.llama_sampler_init_grammar(vocab, grammar.text.encode(), b"forced")
    if not chained:
        raise ValueError("llama.cpp refused the tool-call grammar")
    return chained


_accepted: dict[ToolGrammar, bool] = {}


def grammar_accepted(llama: Any, grammar: ToolGrammar) -> bool:
    """Whether llama.cpp builds a sampler of ``grammar`` (checked once per grammar): it returns
    NULL for a grammar it cannot parse (an empty ``enum`` or ``anyOf``, a back-reference in a
    ``pattern``), and the sampler is built inside the generation, too late to fall back."""
    if grammar not in _accepted:
        import llama_cpp

        if len(_accepted) >= CACHE_SIZE:
            _accepted.clear()
        try:
            llama_cpp.llama_sampler_free(grammar_sampler(llama, grammar))
            _accepted[grammar] = True
        except (ValueError, UnicodeEncodeError):
            _accepted[grammar] = False
    return _accepted[grammar]


def sampler_factory(llama: Any, grammar: ToolGrammar) -> Callable[..., Any]:
    """A replacement for ``Llama._init_sampler`` that puts ``grammar`` in the sampler chain
    (penalties, grammar, then greedy or top-k/top-p/min-p/temperature sampling, as
    llama-cpp-python builds it), lazily when the grammar says so."""
    import llama_cpp
    from llama_cpp import _internals as internals

    def build(
        top_k: int = 40,
        top_p: float = 0.95,
        min_p: float = 0.05,
        typical_p: float = 1.0,
        temp: float = 0.8,
        repeat_penalty: float = 1.0,
        frequency_penalty: float = 0.0,
        presence_penalty: float = 0.0,
        **_: Any,
    ) -> Any:
        sampler = internals.LlamaSampler()
        sampler.add_penalties(
            n_vocab=llama._n_vocab,
            penalty_last_n=llama.last_n_tokens_size,
            penalty_repeat=repeat_penalty,
            penalty_freq=frequency_penalty,
            penalty_present=presence_penalty,
        )
        chained = grammar_sampler(llama, grammar)
        llama_cpp.llama_sampler_chain_add(sampler.sampler, chained)
        if temp <= 0.0:
            sampler.add_greedy()
        else:
            sampler.add_top_k(top_k)
            sampler.add_typical(typical_p, 1)
            sampler.add_top_p(top_p, 1)
            sampler.add_min_p(min_p, 1)
            sampler.add_temp(temp)
            sampler.add_dist(llama._seed)
        return sampler

    return build
