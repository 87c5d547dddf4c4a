"""``herdsman.middleware`` holds middlewares only: each of its modules (and those of its
``context`` subpackage) defines a LangChain ``AgentMiddleware`` subclass, or a function that
builds one of LangChain's own with Herdsman's settings. What several
middlewares share but is not one lives in the packages named for it (``herdsman.turns``,
``herdsman.prompting``, ``herdsman.language``); the completion check's rule modules are its own
subpackage (``herdsman.middleware.completion``), whose middleware is ``check``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import typing

import pytest
from langchain.agents.middleware import AgentMiddleware

import herdsman.middleware
import herdsman.middleware.context


def _modules() -> list[str]:
    names = [m.name for m in pkgutil.iter_modules(herdsman.middleware.__path__, "herdsman.middleware.") if not m.ispkg]
    names += [
        m.name for m in pkgutil.iter_modules(herdsman.middleware.context.__path__, "herdsman.middleware.context.")
    ]
    return [*names, "herdsman.middleware.completion.check"]


@pytest.mark.parametrize("name", _modules())
def test_every_middleware_module_defines_a_middleware(name: str) -> None:
    module = importlib.import_module(name)
    own = [
        c
        for c in vars(module).values()
        if inspect.isclass(c) and c.__module__ == name and issubclass(c, AgentMiddleware)
    ]
    factories = [
        f for f in vars(module).values() if inspect.isfunction(f) and f.__module__ == name and _builds_middleware(f)
    ]
    assert own or factories, f"{name} defines no AgentMiddleware: move it to the package that names what it is"


def _builds_middleware(function: typing.Any) -> bool:
    returns = typing.get_type_hints(function).get("return")
    return inspect.isclass(returns) and issubclass(returns, AgentMiddleware)
