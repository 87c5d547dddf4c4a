"""Checks on what a client sends to start a run, before anything of it reaches the graph.

A run's input is written into the thread's checkpoint by the graph's first step; input the
graph cannot read (``{"messages": 5}``) would then fail that run and every later one, and every
read of the thread. So the input is checked against the graph's own input schema first, with
messages coerced by LangChain's ``convert_to_messages`` (what ``add_messages`` does with them),
and a state update (``command.update``, ``POST /threads/{id}/state``) against its state schema.

Everything a client sends is also stored (run records, checkpoint metadata) as JSON by orjson,
which refuses lone surrogates, integers beyond 64 bits and nesting deeper than 255 levels;
:func:`check_json` refuses those up front, naming the field.

``configurable`` keys the run manager sets itself (:data:`RESERVED_CONFIGURABLE`, and every
``__``-prefixed key LangGraph uses internally) are refused rather than silently replaced
(LangGraph's own server overwrites them): a client that sends ``thread_id`` there expects to
act on that thread, and learns at once that the URL decides. The same value the server would
set is accepted, so clients that echo the thread id keep working.

The run's own sub-agent limits (``max_concurrent_subagents``, ``token_budget`` in ``configurable``)
are checked against ``subagents:`` (:func:`check_run_limits`): lower, never higher.

Each check raises :class:`RunInputError` with the field (a dotted path) and what to do; the run
manager turns it into a 422.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import orjson
from langchain_core.messages import convert_to_messages
from pydantic import ValidationError

from herdsman.config.schema import SubagentsConfig
from herdsman.turns.run_scope import RUN_LIMITS, limit_problem

# configurable keys the run manager sets for every run (see RunManager._graph_config)
RESERVED_CONFIGURABLE = (
    "thread_id",
    "run_id",
    "assistant_id",
    "graph_id",
    "checkpoint_id",
    "checkpoint_ns",
    "checkpoint_map",
)
INTERNAL_PREFIX = "__"  # LangGraph's own configurable keys (__pregel_checkpointer, ...)
MESSAGES = "messages"
MESSAGE_HINT = 'send messages as a list of {"role": "user", "content": "..."} objects'


class RunInputError(ValueError):
    """What a client sent cannot start a run: ``field`` (dotted) and why."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class InputTooLargeError(RunInputError):
    """What a client sent is larger than ``runs.max_input_bytes`` (a 413, not a 422)."""


def check_size(field: str, value: Any, limit: int | None, thread_id: str) -> None:
    """Refuse ``value`` whose JSON is over ``limit`` bytes: every later checkpoint of the thread
    would store it again (three 20 MB messages made about 1 GB of SQLite)."""
    if limit is None or value is None:
        return
    try:
        size = len(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS))
    except orjson.JSONEncodeError:
        return  # check_json names what is wrong with it
    if size > limit:
        raise InputTooLargeError(
            field,
            f"is {size:,} bytes as JSON, more than runs.max_input_bytes ({limit:,}); upload large content as a file "
            f"(POST /api/threads/{thread_id or '<thread_id>'}/uploads) and refer to its path in a short message, "
            "or ask the operator to raise runs.max_input_bytes",
        )


def not_unicode(exc: orjson.JSONEncodeError) -> bool:
    """Whether orjson refused a value for text that is not valid Unicode (a lone surrogate)."""
    reason = str(exc)
    return "surrogates" in reason or "UTF-8" in reason


def holds_invalid_unicode(value: Any) -> bool:
    """Whether ``value`` (parsed JSON) holds a string, key or value, that is not valid Unicode."""
    try:
        orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except orjson.JSONEncodeError as exc:
        return not_unicode(exc)
    return False


def check_json(field: str, value: Any) -> None:
    """Refuse values that cannot be stored as JSON (lone surrogates, huge integers, deep nesting)."""
    try:
        orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except orjson.JSONEncodeError as exc:
        reason = str(exc)
        if not_unicode(exc):
            why = "contains text that is not valid Unicode (a lone surrogate such as \\ud800); send valid UTF-8 text"
        elif "64-bit" in reason:
            why = "contains an integer beyond 64 bits; send it as a string"
        elif "ecursion" in reason:
            raise RunInputError(field, "is nested too deeply (more than 255 levels); send a flatter value") from None
        else:
            why = f"cannot be stored as JSON ({reason})"
        raise RunInputError(_bad_path(field, value) or field, why) from None


def _bad_path(field: str, value: Any, depth: int = 0) -> str | None:
    """The dotted path of the first value orjson refuses inside ``value`` (None: ``value`` itself)."""
    if depth > 255:
        return field
    if isinstance(value, str):
        return None if _encodes(value) else field
    if isinstance(value, int) and not isinstance(value, bool):
        return None if -(2**63) <= value < 2**64 else field
    items = value.items() if isinstance(value, Mapping) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(key, str) and not _encodes(key):
            return field
        inner = f"{field}[{key}]" if isinstance(value, list) else f"{field}.{key}"
        found = _bad_path(inner, item, depth + 1)
        if found:
            return found
    return None


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def coerce_messages(field: str, value: Any) -> list[Any]:
    """``value`` as LangChain messages, the way ``add_messages`` reads it (one message or a list)."""
    items = value if isinstance(value, list) else [value]
    for index, item in enumerate(items):
        try:
            convert_to_messages([item])
        except (ValueError, TypeError, KeyError, NotImplementedError) as exc:
            detail = _first_line(exc)
            raise RunInputError(
                f"{field}[{index}]" if isinstance(value, list) else field, f"{detail}; {MESSAGE_HINT}"
            ) from None
    return convert_to_messages(items)


def _first_line(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ()))
        return f"{loc}: {first.get('msg')}" if loc else str(first.get("msg"))
    if isinstance(exc, KeyError):
        return f"missing key {exc}"
    text = str(exc).strip().splitlines()
    return text[0].rstrip(".") if text else type(exc).__name__


def _check_state_dict(field: str, value: Any, schema: Any, *, known: set[str] | None) -> None:
    """``value`` is a dict whose keys ``schema`` (a pydantic model of the graph) accepts."""
    if not isinstance(value, Mapping):
        raise RunInputError(
            field, f'must be a JSON object of state keys, such as {{"messages": [...]}}, not {type(value).__name__}'
        )
    if known is not None:
        unknown = sorted(str(k) for k in value if k not in known)
        if unknown:
            raise RunInputError(
                f"{field}.{unknown[0]}", f"is not a key of the thread's state; use some of {sorted(known)}"
            )
    data = dict(value)
    data[MESSAGES] = coerce_messages(f"{field}.{MESSAGES}", value[MESSAGES]) if MESSAGES in value else []
    try:
        schema.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors():
            loc = [str(p) for p in error.get("loc", ()) if p != "root"]
            if loc and loc[0] not in value:
                continue  # a key the client did not send (input may be partial)
            where = ".".join([field, *loc]) if loc else field
            raise RunInputError(where, str(error.get("msg", "invalid value"))) from None


def check_input(graph: Any, value: Any) -> None:
    """Refuse run input the graph could not read (None, no new input, is fine)."""
    if value is None:
        return
    check_json("input", value)
    if value == {}:
        raise RunInputError(
            "input", 'has no state key; send {"messages": [...]}, or null to continue without new input'
        )
    _check_state_dict("input", value, _input_schema(graph), known=None)


@functools.lru_cache(maxsize=16)
def _input_schema(graph: Any) -> Any:
    """The graph's input schema: LangGraph builds it again on every call (a new model), and it
    does not change for a compiled graph."""
    return graph.get_input_schema()


def check_update(graph: Any, field: str, value: Any) -> None:
    """Refuse a state update (``command.update`` or a state write) the graph could not apply."""
    if value is None:
        return
    check_json(field, value)
    if isinstance(value, list):  # [[key, value], ...] as LangGraph's Command accepts
        if not all(isinstance(p, list | tuple) and len(p) == 2 and isinstance(p[0], str) for p in value):
            raise RunInputError(field, "must be an object of state keys, or a list of [key, value] pairs")
        value = dict(value)
    schema = graph.get_output_schema()
    known = set(getattr(schema, "model_fields", {}) or ()) - {"root"}
    _check_state_dict(field, value, schema, known=known or None)


def check_goto(graph: Any, value: Any) -> None:
    """``command.goto`` names nodes of the graph (a name, a list, or ``{node, input}`` sends)."""
    if value is None or value == [] or value == ():
        return
    check_json("command.goto", value)
    targets = value if isinstance(value, list) else [value]
    nodes = sorted(n for n in graph.nodes if not n.startswith(INTERNAL_PREFIX))
    for index, target in enumerate(targets):
        name = target.get("node") if isinstance(target, Mapping) else target
        if not isinstance(name, str) or name not in nodes:
            raise RunInputError(
                f"command.goto[{index}]" if isinstance(value, list) else "command.goto",
                f"{name!r} is not a node of the graph; use one of {nodes}",
            )


def check_configurable(configurable: Any, owned: Mapping[str, Any]) -> None:
    """Refuse ``configurable`` keys the run manager sets itself, unless equal to ``owned`` values."""
    if not isinstance(configurable, Mapping):
        raise RunInputError("config.configurable", f"must be a JSON object, not {type(configurable).__name__}")
    for key, value in configurable.items():
        if not isinstance(key, str):
            raise RunInputError("config.configurable", "keys must be strings")
        if key.startswith(INTERNAL_PREFIX):
            raise RunInputError(f"config.configurable.{key}", "keys starting with __ are LangGraph's own; remove it")
        if key in RESERVED_CONFIGURABLE and not (key in owned and owned[key] == value):
            raise RunInputError(f"config.configurable.{key}", _reserved_hint(key))


def _reserved_hint(key: str) -> str:
    if key == "thread_id":
        return (
            "is set by the server from the URL; to run on another thread, POST to /threads/<that id>/runs, "
            "and remove this key"
        )
    if key.startswith("checkpoint"):
        return (
            "is set by the server; to start from a checkpoint send checkpoint_id (or checkpoint) in the body, "
            "and remove this key"
        )
    return f"is set by the server for every run; remove this key (the run's {key} comes from the request)"


def check_run_config(config: Any, owned: Mapping[str, Any]) -> None:
    """The run's ``config``: the types LangGraph's ``RunnableConfig`` expects, no reserved keys."""
    if config is None:
        return
    if not isinstance(config, Mapping):
        raise RunInputError("config", f"must be a JSON object, not {type(config).__name__}")
    check_json("config", config)
    expected = {"configurable": Mapping, "metadata": Mapping, "tags": list, "run_name": str, "recursion_limit": int}
    for key, kind in expected.items():
        value = config.get(key)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            raise RunInputError(f"config.{key}", f"must be {_kind_name(kind)}, not {type(value).__name__}")
    if not all(isinstance(t, str) for t in config.get("tags") or ()):
        raise RunInputError("config.tags", "must be a list of strings")
    limit = config.get("recursion_limit")
    if limit is not None and limit < 1:
        raise RunInputError("config.recursion_limit", "must be at least 1")
    check_configurable(config.get("configurable") or {}, owned)


def _kind_name(kind: type) -> str:
    return {Mapping: "a JSON object", list: "a list", str: "a string", int: "an integer"}[kind]


def check_run_limits(config: Any, settings: SubagentsConfig) -> None:
    """The sub-agent limits a run sets in its ``configurable`` (already checked to be a mapping):
    positive integers no higher than ``settings`` (config.yaml's ``subagents:``)."""
    configurable = (config or {}).get("configurable") or {}
    for key in RUN_LIMITS:
        if (problem := limit_problem(settings, key, configurable.get(key))) is not None:
            raise RunInputError(f"config.configurable.{key}", problem)
