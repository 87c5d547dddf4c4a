"""Turn the tool calls a small local model writes as text into LangChain ``tool_calls``.

Qwen2.5 models answer a tool request with ``<tool_call>{"name": ..., "arguments":
{...}}</tool_call>`` blocks, as their chat template teaches them, but a 1.5B model also drifts: it
writes bare JSON, JSON in a ```json fence, ``"parameters"`` instead of ``"arguments"``, arguments as
a JSON string, trailing chatter after the call, or JSON that does not quite parse (mended by
``json-repair``). llama.cpp leaves all of that as plain text, and LangChain's parsers expect
provider-side tool calls, so the recovery is written here, as pure functions:

* :func:`parse_tool_calls` splits a finished reply into content and tool calls, accepting only
  names of tools that are bound; anything that is not a valid call stays content.
* :func:`streamable_prefix` says how much of a reply still being generated is certainly plain
  text, so a streaming caller can pass it on at once and hold back only what may be a call.
"""

from __future__ import annotations

import html
import json
import re
import textwrap
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import json_repair
from langchain_core.messages import ToolCall

from herdsman.models.near_repeat import call_key

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
FENCE = "```"

# A <tool_call> block ends at its closing tag (or a wrong one a small model writes instead, as
# ``</tool_response>``), at the next opening tag, or at the end of the text.
_TAGGED = re.compile(r"<tool_call>(.*?)(?:</tool_call>|</tool_response>|</function>|(?=<tool_call>)|\Z)", re.DOTALL)
_FENCED = re.compile(r"```[ \t]*([A-Za-z_]*)[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_FENCE_LANGS = {"", "json", "json5", "tool_call", "tool_code"}
_ARG_KEYS = ("arguments", "parameters", "args", "input")
_CALL_KEYS = ("name", "type", "id", "function")


@dataclass
class ParsedReply:
    """A model reply split into its text content and the tool calls found in it."""

    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)


def new_call_id() -> str:
    """A fresh tool call id in OpenAI's style, ``call_`` and 24 hex digits."""
    return "call_" + uuid.uuid4().hex[:24]


def _decode_json(text: str, repair: bool = True, whole: bool = False) -> tuple[Any, int] | None:
    """The first JSON object or array in ``text`` and the index where it ends, or None
    (``repair``: mend almost-JSON with json-repair as a last resort; ``whole``: only JSON the
    model closed itself, no closing braces added)."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return None
    start = min(starts)
    decoder = json.JSONDecoder(strict=False)  # a raw newline in a string value, as models write file contents
    try:
        return decoder.raw_decode(text, start)
    except ValueError:
        if whole:
            return None
    # Small models often drop the last closing brace or two: retry with them added at the end.
    rest = text[start:].rstrip()
    for missing in ("}", "}}", "]", "}]"):
        try:
            value, _ = decoder.raw_decode(rest + missing)
        except ValueError:
            continue
        return value, len(text)
    # JSON that almost parses: single quotes, Python literals, an invalid escape such as
    # "rename 's/\.txt$/.md/'" (kept as written). json-repair mends it, but only a block the
    # model closed itself: a reply cut off inside a value (a path, a file's content) must not
    # become a call that writes half a file.
    if not repair or not rest.endswith(("}", "]")):
        return None
    repaired, fixes = cast("tuple[Any, list[dict[str, Any]]]", json_repair.loads(rest, logging=True))
    if any("closing quote" in str(fix.get("text", "")) for fix in fixes):
        return None
    if isinstance(repaired, (dict, list)) and repaired:
        return repaired, len(text)
    return None


def _coerce_arguments(raw: Any) -> dict[str, Any] | None:
    """Arguments as a dict: a dict as is, a JSON string decoded, nothing as ``{}``."""
    if raw is None:
        return {}
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            decoded = json.loads(raw)
        except ValueError:
            return None
        return decoded if isinstance(decoded, dict) else None
    return None


def _resolve_name(name: Any, tool_names: Collection[str]) -> str | None:
    """``name`` if bound; ``functions.x`` is accepted for a bound ``x``."""
    if not isinstance(name, str):
        return None
    bare: str = name.strip()
    if bare in tool_names:
        return bare
    short = bare.rsplit(".", 1)[-1]
    return short if short in tool_names else None


def _tool_by_arguments(args: dict[str, Any] | None, tool_names: Collection[str]) -> str | None:
    """The bound tool an unknown name must mean, by its arguments: they are exactly one
    argument, the only required one of exactly one bound tool (from the benchmark:
    ``{"name": "python3", "arguments": {"command": "python3 -c ..."}}`` is bash)."""
    if not args or len(args) != 1 or not isinstance(tool_names, Mapping):
        return None
    [key] = args
    matches = [name for name, single in tool_names.items() if single == key]
    return matches[0] if len(matches) == 1 else None


def _as_call(value: Any, tool_names: Collection[str]) -> ToolCall | None:
    """One decoded JSON object as a tool call of a bound tool, or None."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):  # OpenAI's {"type": "function", "function": {...}}
        value = value["function"]
    raw = next((value[key] for key in _ARG_KEYS if key in value), None)
    if raw is None and not any(key in value for key in _ARG_KEYS):
        raw = {k: v for k, v in value.items() if k not in _CALL_KEYS}  # arguments beside the name
    args = _coerce_arguments(raw)
    name = _resolve_name(value.get("name"), tool_names)
    if name is None and isinstance(value.get("name"), str):
        name = _tool_by_arguments(args, tool_names)
    if name is None:
        return None
    if args is None and isinstance(raw, str) and isinstance(tool_names, Mapping) and tool_names.get(name):
        args = {tool_names[name]: raw}  # a tool of one required argument given it as a bare string
    if args is None:
        return None
    return ToolCall(name=name, args=args, id=new_call_id(), type="tool_call")


def _as_calls(value: Any, tool_names: Collection[str]) -> list[ToolCall] | None:
    """A decoded object or list of objects as tool calls; None unless every item is a call."""
    items = value if isinstance(value, list) else [value]
    if not items:
        return None
    calls = [_as_call(item, tool_names) for item in items]
    if any(call is None for call in calls):
        return None
    return calls  # type: ignore[return-value]  # the check above returned when any call was None


def _fence_calls(lang: str, body: str, tool_names: Collection[str], repair: bool = True) -> list[ToolCall] | None:
    """Tool calls in a fenced block's body when its language fits JSON and it holds only calls."""
    if lang.lower() not in _FENCE_LANGS:
        return None
    stripped = body.strip()
    if not stripped.startswith(("{", "[")):
        return None
    decoded = _decode_json(stripped, repair)
    if decoded is None or stripped[decoded[1] :].strip():
        return None
    return _as_calls(decoded[0], tool_names)


def _take_bare(
    text: str,
    tool_names: Collection[str],
    repair: bool = True,
    whole: bool = False,
) -> tuple[list[ToolCall], str]:
    """Calls written as bare JSON at the very start of ``text``; returns them and the rest."""
    calls: list[ToolCall] = []
    rest = text.lstrip()
    while rest.startswith(("{", "[")):
        decoded = _decode_json(rest, repair, whole)
        if decoded is None:
            break
        found = _as_calls(decoded[0], tool_names)
        if found is None:
            break
        calls.extend(found)
        rest = rest[decoded[1] :].lstrip()
    return (calls, rest) if calls else ([], text)


_ANCHORED_HEAD = re.compile(
    r'^\s*\{\s*"name"\s*:\s*"([\w.-]+)"\s*,\s*"(?:arguments|parameters|args)"\s*:\s*\{', re.DOTALL
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "/": "/"}


def _unescape(raw: str) -> str:
    """A JSON string's body, tolerantly: the usual escapes decoded, anything else kept as written."""
    return re.sub(r'\\(["\\/ntr])', lambda m: _ESCAPES[m.group(1)], raw)


def _anchored_call(body: str, tool_names: Collection[str], params: Mapping[str, Sequence[str]]) -> ToolCall | None:
    """A call whose JSON does not parse because a string value holds unescaped quotes (a prompt
        that quotes JSON: ``"description": "save as {"a": <sum>}"``, or a value in single quotes around
    JSON: ``"content": '{"a": 296}'``), read by the tool's own argument
        names: each value runs from its ``"key": `` to the ``, "next_key": `` of the next known
        argument, or to the closing braces. None unless every piece fits (from the benchmark)."""
    head = _ANCHORED_HEAD.match(body)
    name = _resolve_name(head.group(1), tool_names) if head else None
    if head is None or name is None or not params.get(name):
        return None
    rest = body[head.end() :].rstrip()
    end = re.search(r"\}\s*\}\s*$", rest)
    if end is None:
        return None
    rest = rest[: end.start()]
    keys = "|".join(re.escape(k) for k in params[name])
    starts = list(re.finditer(rf'(?:^|,)\s*"({keys})"\s*:\s*', rest))
    if not starts or starts[0].start() != 0 or rest[: starts[0].start()].strip():
        return None
    args: dict[str, Any] = {}
    for i, match in enumerate(starts):
        raw = rest[match.end() : starts[i + 1].start() if i + 1 < len(starts) else len(rest)].strip()
        close = raw.rfind(raw[0]) if raw[:1] in ('"', "'") else -1
        if close > 0 and not raw[close + 1 :].strip("}\"' \n"):  # 'x' as Python writes it; stray }" after it
            args[match.group(1)] = _unescape(raw[1:close])
        else:
            try:
                args[match.group(1)] = json.loads(raw)
            except ValueError:
                return None
    return ToolCall(name=name, args=args, id=new_call_id(), type="tool_call")


_LEADING_FENCE = re.compile(r"^\s*```(?:json)?\s*")


def parse_tool_calls(
    text: str,
    tool_names: Collection[str],
    repair: bool = True,
    params: Mapping[str, Sequence[str]] | None = None,
    strict: bool = False,
) -> ParsedReply:
    """Split a model reply into content and tool calls of the tools named in ``tool_names``.

    ``tool_names`` may map each name to the tool's only required argument (or None): then
    ``"arguments": "ls -la"`` for such a tool means that argument, as small models write it.

    Accepted forms, in this order: ``<tool_call>...</tool_call>`` blocks (the closing tag may be
    missing), ```json fenced blocks that hold only a call, and bare JSON at the start of the reply.
    A call is an object with ``name`` and ``arguments`` (or ``parameters``/``args``), where the
    arguments may also be a JSON string; a list of such objects is several calls. Calls to tools
    that are not bound, and JSON that does not parse, stay in the content unchanged. With no tool
    names nothing is ever a call. ``repair`` (on by default) lets json-repair mend a call the
    model closed but wrote as almost-JSON; with ``params`` (each tool's argument names), a
    ``<tool_call>`` block whose string values hold unescaped quotes is read by those names.

    ``strict`` (the reply was generated under the tool-call grammar, see
    :mod:`herdsman.models.local.grammar`): only what the model chose to write as a call is one,
    the ``<tool_call>`` blocks and a call that opens the reply (bare or in a fence); JSON further
    on in the prose stays content, and nothing is mended.
    """
    if not tool_names or not text:
        return ParsedReply(content=text.strip() if text else "")
    if strict:
        return _strict_calls(text, tool_names)
    calls: list[ToolCall] = []

    def tagged(match: re.Match[str]) -> str:
        body = match.group(1)
        decoded = _decode_json(body, repair=False)
        if decoded is None and repair:  # by the tool's argument names first, then json-repair
            anchored = _anchored_call(body, tool_names, params) if params else None
            if anchored is not None:
                calls.append(anchored)
                return ""
            decoded = _decode_json(body, repair)
        if decoded is None:
            return match.group(0)
        found = _as_calls(decoded[0], tool_names)
        if found is None:
            return match.group(0)
        calls.extend(found)
        return ""

    def fenced(match: re.Match[str]) -> str:
        found = _fence_calls(match.group(1), match.group(2), tool_names, repair)
        if found is None:
            return match.group(0)
        calls.extend(found)
        return ""

    content = _TAGGED.sub(tagged, text)
    content = _FENCED.sub(fenced, content)
    bare, content = _take_bare(content, tool_names, repair)
    calls.extend(bare)
    if not calls and repair:
        xml = _xml_calls(content, tool_names)
        if xml:
            return ParsedReply(content="", tool_calls=xml)
    return ParsedReply(content=content.strip(), tool_calls=calls)


def _strict_calls(text: str, tool_names: Collection[str]) -> ParsedReply:
    """:func:`parse_tool_calls` for a reply written under the grammar, which closes every call
    it starts: a call whose JSON is left open was cut off by ``max_tokens`` or a stop string, and
    stays text rather than running with half its arguments (no closing braces added)."""
    calls: list[ToolCall] = []

    def tagged(match: re.Match[str]) -> str:
        decoded = _decode_json(match.group(1), repair=False, whole=True)
        found = _as_calls(decoded[0], tool_names) if decoded is not None else None
        if found is None:
            return match.group(0)
        calls.extend(found)
        return ""

    content = _TAGGED.sub(tagged, text)
    if not calls:
        opening = _LEADING_FENCE.match(content)
        bare, rest = _take_bare(content[opening.end() :] if opening else content, tool_names, repair=False, whole=True)
        if bare:
            calls, content = bare, rest.strip().removesuffix(FENCE)
    return ParsedReply(content=content.strip(), tool_calls=calls)


_XML_WRAPPER = re.compile(r"</?(?:tools|tool_calls?|function_calls)\s*>")
_XML_OPEN = re.compile(r"<([A-Za-z_][\w.-]*)((?:\s+[A-Za-z_]\w*=\".*?\")*)\s*(/?)>", re.DOTALL)
_XML_ATTR = re.compile(r'\s+([A-Za-z_]\w*)="')
_XML_FUNCTION = re.compile(r'<function\s+name="([\w.-]+)"\s+arguments=\s*(\{.*)', re.DOTALL)
_XML_FUNCTION_END = re.compile(r"[\s})>/]|</function>")
_XML_CHILD = re.compile(r"\s*<([A-Za-z_]\w*)>(.*?)</\1>\s*", re.DOTALL)


def _xml_attributes(raw: str) -> dict[str, str]:
    """``key="value"`` pairs; a value runs to the quote before the next ``key="`` (small models
    leave quotes inside values unescaped, as in ``command="mv "$f" x"``)."""
    starts = list(_XML_ATTR.finditer(raw))
    args: dict[str, str] = {}
    for i, match in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(raw)
        value = raw[match.end() : end].rstrip()
        if value.endswith('"'):
            value = value[:-1]
        args[match.group(1)] = html.unescape(value)
    return args


def _xml_body_arguments(name: str, body: str, tool_names: Collection[str]) -> dict[str, str] | None:
    """The arguments an element's body gives: child elements (``<command>ls</command>``) by
    name, or the whole text as the tool's only required argument; None when neither fits."""
    children = list(_XML_CHILD.finditer(body))
    if children and "".join(m.group(0) for m in children) == body:
        return {m.group(1): html.unescape(textwrap.dedent(m.group(2)).strip()) for m in children}
    single = tool_names.get(name) if isinstance(tool_names, Mapping) else None
    return {single: html.unescape(textwrap.dedent(body).strip("\n")).strip()} if single else None


def _xml_calls(text: str, tool_names: Collection[str]) -> list[ToolCall]:
    """Calls written as XML elements named after bound tools, seen from Qwen2.5-Coder-1.5B:
    arguments as attributes (``<tools><bash command="ls -la"/></tools>``), as child elements
    (``<bash><command>ls</command></bash>``) or, for a tool of one required argument, as the
    element's text (``<bash>ls -la</bash>``), or as JSON in a ``function`` element
    (``<function name="bash" arguments={"command": "ls"}}``). Only a reply made of nothing but
    such elements counts; anything else leaves it as text."""
    body = _XML_WRAPPER.sub("", text).strip()
    calls: list[ToolCall] = []
    pos = 0
    function = _XML_FUNCTION.match(body)
    if function is not None:  # <function name="bash" arguments={"command": "..."}}
        decoded = _decode_json(function.group(2))
        name = _resolve_name(function.group(1), tool_names)
        if decoded is None or name is None or not isinstance(decoded[0], dict):
            return []
        if _XML_FUNCTION_END.sub("", function.group(2)[decoded[1] :]).strip():
            return []
        return [ToolCall(name=name, args=decoded[0], id=new_call_id(), type="tool_call")]
    while pos < len(body):
        match = _XML_OPEN.match(body, pos)
        if match is None:
            return []
        name = _resolve_name(match.group(1), tool_names)
        if name is None:
            return []
        args: dict[str, str] | None = _xml_attributes(match.group(2) or "")
        pos = match.end()
        if not match.group(3):  # <name ...>body</name>
            close = body.find(f"</{match.group(1)}>", pos)
            if close < 0:
                return []
            inner = body[pos:close]
            if inner.strip():
                args = None if args else _xml_body_arguments(name, inner, tool_names)
            pos = close + len(match.group(1)) + 3
        if args is None:
            return []
        calls.append(ToolCall(name=name, args=args, id=new_call_id(), type="tool_call"))
        pos = len(body) - len(body[pos:].lstrip())
    return calls


def _partial_marker_at(text: str, start: int) -> int | None:
    """Index where ``text`` ends with an unfinished ``<tool_call>`` or fence, at or after ``start``."""
    best: int | None = None
    for marker in (TOOL_CALL_OPEN, FENCE):
        for k in range(len(marker) - 1, 0, -1):
            if text.endswith(marker[:k]) and len(text) - k >= start:
                pos = len(text) - k
                best = pos if best is None else min(best, pos)
                break
    return best


def streamable_prefix(text: str, tool_names: Collection[str]) -> int:
    """How many leading characters of a reply in progress are certainly plain text.

    Everything before the returned index can be streamed now and will be a prefix of
    ``parse_tool_calls(final_text).content`` (leading whitespace aside: the caller skips it). Held
    back: a reply starting with ``{``, ``[`` (bare JSON) or ``<`` (XML-style calls), anything from a
    ``<tool_call>`` tag or an open fence on, a fence that holds a tool call, a marker that may be
    starting at the end, and trailing whitespace. The index never moves backwards as ``text`` grows.
    """
    lead = len(text) - len(text.lstrip())
    if not tool_names:
        return len(text.rstrip())
    if lead >= len(text) or text[lead] in "{[<":  # bare JSON, or XML-style calls
        return 0
    return len(text[: _hold_point(text, lead, tool_names)].rstrip())


def _hold_point(text: str, pos: int, tool_names: Collection[str]) -> int:
    """Where the text that may be a tool call starts (``len(text)`` if nowhere)."""
    while True:
        tag = text.find(TOOL_CALL_OPEN, pos)
        fence = text.find(FENCE, pos)
        if tag >= 0 and (fence < 0 or tag < fence):
            return tag
        if fence >= 0:
            match = _FENCED.match(text, fence)
            if (
                match is None
                or not (match.group(0).endswith(FENCE) and match.end() > fence + len(FENCE))
                or _fence_calls(match.group(1), match.group(2), tool_names) is not None
            ):
                return fence
            pos = match.end()
            continue
        partial = _partial_marker_at(text, pos)
        return partial if partial is not None else len(text)


_CLOSED_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


def repeated_call_start(text: str) -> int | None:
    """Where the first closed ``<tool_call>`` block that repeats an earlier one of ``text`` starts,
    or None when every closed block is new.

    A small model sometimes writes the same call again and again in one reply (thirty identical
    ``read_file`` calls were seen, about six seconds of generation each, on a task that then ran
    out of time). The same call twice in one reply returns the same result twice, so generation
    can stop at the first repeat: the calls before it are the reply. Blocks are compared on their
    JSON with whitespace outside strings ignored, so a re-indented copy is a repeat too, and their
    arguments by :func:`~herdsman.models.near_repeat.call_key`, so one that differs only in
    spaces or a comment is a repeat as well.
    """
    seen: set[str] = set()
    for match in _CLOSED_CALL.finditer(text):
        body = match.group(1).strip()
        decoded = _decode_json(body, repair=False, whole=True)
        call = decoded[0] if decoded is not None else None
        if isinstance(call, dict) and isinstance(call.get("name"), str):
            key = call_key(call["name"], call.get("arguments", call.get("parameters")))
        else:
            key = json.dumps(call, sort_keys=True) if decoded is not None else body
        if key in seen:
            return match.start()
        seen.add(key)
    return None
