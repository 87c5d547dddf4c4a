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
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Awaitable, Callable
from types import CodeType
from typing import Any

from langchain_core.tools import StructuredTool

_schemas: dict[tuple[str, CodeType], Any] = {}
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
    return tool
