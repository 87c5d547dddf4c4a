"""JSON for run events and thread state, in the shapes LangGraph servers send.

Messages become their pydantic dump (``{"type": "ai", "content": ..., "tool_calls": ...}``),
``Interrupt`` becomes ``{value, id}``, anything else unknown becomes its ``str``: serializing
an event never fails a run.

A run's events are encoded once (:func:`encoded`): turning a chunk into plain types first
(:func:`to_jsonable`: an encoding and a parse) and encoding that for the stream cost every event
two encodings and a parse, and a ``values`` event carries the whole state at each step.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
import uuid
from typing import Any

import orjson
from langgraph.types import Interrupt


def to_jsonable(obj: Any) -> Any:
    """``obj`` as plain JSON types (dicts, lists, strings, numbers, booleans, None)."""
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return orjson.loads(_encode(obj))


def _default(obj: Any) -> Any:
    """orjson's hook for what it cannot encode itself (messages, pydantic models, sets...)."""
    if isinstance(obj, Interrupt):
        return {"value": obj.value, "id": obj.id}
    if hasattr(obj, "model_dump"):
        try:
            return obj.model_dump()
        except Exception:  # noqa: BLE001 - fall back to the text form below
            return str(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):  # a dict subclass orjson refuses
        return {str(k): v for k, v in obj.items()}
    if isinstance(obj, (dt.datetime, dt.date)):
        return obj.isoformat()
    if isinstance(obj, uuid.UUID):
        return str(obj)
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, bytes):
        return obj.decode("utf-8", errors="replace")
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    return str(obj)


_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS


def _encode(obj: Any) -> bytes:
    try:
        return orjson.dumps(obj, default=_default, option=_OPTIONS)
    except TypeError:
        # orjson refuses integers beyond 64 bits; the standard library does not.
        return json.dumps(obj, default=_default, ensure_ascii=False, separators=(",", ":")).encode()


class JsonText(str):
    """JSON text already encoded by :func:`encoded`; :func:`dumps` gives it back as it is."""


def encoded(obj: Any) -> JsonText:
    """Compact JSON text of ``obj``, as :func:`dumps` writes it, marked so it is not encoded again."""
    return JsonText(_encode(obj).decode())


def dumps(obj: Any) -> str:
    """Compact JSON text of ``obj`` (one line, so it fits one SSE ``data:`` field); text that
    :func:`encoded` made is given back as it is."""
    if isinstance(obj, JsonText):
        return str(obj)
    return _encode(obj).decode()


def loads(text: str | bytes) -> Any:
    """Parse JSON text."""
    return orjson.loads(text)
