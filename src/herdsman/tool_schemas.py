"""Tools whose argument schema is built once per function, not once per agent.

``StructuredTool.from_function`` (and LangChain's ``@tool``) builds a pydantic model from the
function's signature every time it is called: about 0.2 s of CPU for the lead agent's sandbox and
task tools, most of the cost of building an agent. Those tools are bound methods or closures made
again for every agent (each sub-agent run, each rebuild of the gateway's agent), yet their
signatures never change. :func:`structured_tool` keeps the schema of each (tool name, function
code) and gives it to the next tool made from the same code.

Only for functions whose annotations are the same for every closure made from that code (they
name module-level types, not values of the enclosing call): the schema is not rebuilt for a new
closure.

The functions' annotations are also resolved once (:func:`resolve_annotations`): LangChain reads a
tool's type hints at every call (to find a ``RunnableConfig`` parameter, twice per call), and the
annotations of a module with ``from __future__ import annotations`` are strings that
``typing.get_type_hints`` parsed and compiled again each time (measured: an ``ls``-like tool's
call through ``ainvoke`` took ~260 µs of CPU, ~225 µs with its annotations resolved).
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Awaitable, Callable
from types import CodeType, FunctionType
from typing import Any, get_type_hints

from langchain_core.tools import StructuredTool

_schemas: dict[tuple[str, CodeType], Any] = {}
_hints: dict[CodeType, dict[str, Any] | None] = {}
_lock = threading.Lock()


def _code(function: Callable[..., Any]) -> CodeType:
    """The code object of ``function`` under its ``functools.wraps`` wrappers (a bound method's too)."""
    return inspect.unwrap(function).__code__


def structured_tool(
    *,
    name: str,
    description: str,
    func: Callable[..., Any] | None = None,
    coroutine: Callable[..., Awaitable[Any]] | None = None,
    **kwargs: Any,
) -> StructuredTool:
    """``StructuredTool.from_function(func=..., coroutine=..., name=..., description=..., **kwargs)``,
    with the argument schema inferred once for this name and the code of ``func`` (else ``coroutine``)."""
    source = func if func is not None else coroutine
    if source is None:
        raise ValueError("structured_tool needs func or coroutine")
    key = (name, _code(source))
    with _lock:
        schema = _schemas.get(key)
    tool = StructuredTool.from_function(
        func=func, coroutine=coroutine, name=name, description=description, args_schema=schema, **kwargs
    )
    if schema is None:
        with _lock:
            _schemas.setdefault(key, tool.args_schema)
    for function in (func, coroutine):
        if function is not None:
            resolve_annotations(function)
    return tool


def resolve_annotations(function: Callable[..., Any]) -> None:
    """Replace the annotations of ``function`` (a plain function, or a ``functools.wraps`` wrapper)
    with the types they name, resolved once per code (see the module docstring); left as they
    are when they cannot be resolved (a name only imported for type checkers) or ``function`` is
    not a plain function (a bound method's annotations cannot be set)."""
    if not isinstance(function, FunctionType) or not any(isinstance(a, str) for a in function.__annotations__.values()):
        return
    code = _code(function)
    with _lock:
        known = code in _hints
        hints = _hints.get(code)
    if not known:
        try:
            hints = get_type_hints(function, include_extras=True)
        except Exception:  # noqa: BLE001 - LangChain resolves them at each call then, as it did
            hints = None
        with _lock:
            _hints.setdefault(code, hints)
    if hints is not None:
        function.__annotations__ = dict(hints)  # a new dict: a wrapper shares its wrapped function's
