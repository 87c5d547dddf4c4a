"""Run several middlewares' model-call and tool-call wrappers as ONE LangChain middleware layer.

Why: ``create_agent`` wraps every middleware's ``wrap_model_call`` and ``wrap_tool_call`` in a
LangSmith ``traceable`` before composing them, and that wrapper is most of a layer's cost (about
0.25 ms per layer per agent step here, measured with no-op middlewares). Herdsman has many small
wrappers, each in its own module; folding each run of them into one layer keeps the per-step
cost down while every step stays a small class of its own. Measured with
``benchmarks/step_overhead.py``, three runs with and three without :func:`compose`, interleaved on
a busy 2-core machine: a median 7.9 ms per lead step with it, 9.7 ms without (about 19% less);
so it stays, with LangChain's semantics (below) rather than its own.

Semantics are LangChain's because the composition is LangChain's: the handlers are chained by
``langchain.agents.factory``'s own ``_chain_model_call_handlers`` / ``_chain_tool_call_wrappers``
(and their async twins), which ``create_agent`` uses for its layers; they are private, so a test
imports them by name and a differential test runs scripted conversations through ``compose(mws)``
and through ``mws`` and compares every state, commands and retries included. What a chain adds
is only that the steps inside it are traced as one. State schemas and tools of the steps are
carried by small hook-less middlewares, which add no layer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.factory import (
    _chain_async_model_call_handlers,
    _chain_async_tool_call_wrappers,
    _chain_model_call_handlers,
    _chain_tool_call_wrappers,
)
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse


def overrides(mw: AgentMiddleware, name: str) -> bool:
    """Whether ``mw``'s class implements the hook ``name`` itself."""
    return getattr(type(mw), name, None) is not getattr(AgentMiddleware, name, None)


def _wraps(mw: AgentMiddleware, kind: str) -> bool:
    # as create_agent selects them: either twin counts (the missing one raises NotImplementedError)
    return overrides(mw, f"wrap_{kind}_call") or overrides(mw, f"awrap_{kind}_call")


class ChainedMiddleware(AgentMiddleware):
    """The model- and tool-call wrappers of ``steps``, composed in one layer."""

    def __init__(self, steps: Sequence[AgentMiddleware]) -> None:
        """``steps``: middlewares in order, outermost first."""
        super().__init__()
        self.steps = list(steps)
        model_steps = [s for s in self.steps if _wraps(s, "model")]
        tool_steps = [s for s in self.steps if _wraps(s, "tool")]
        self._model = _chain_model_call_handlers([s.wrap_model_call for s in model_steps])
        self._amodel = _chain_async_model_call_handlers([s.awrap_model_call for s in model_steps])
        self._tool = _chain_tool_call_wrappers([s.wrap_tool_call for s in tool_steps])
        self._atool = _chain_async_tool_call_wrappers([s.awrap_tool_call for s in tool_steps])

    @property
    def name(self) -> str:
        """Names the steps, so traces stay readable."""
        return "Chain(" + ",".join(type(s).__name__ for s in self.steps) + ")"

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        """Run the steps' ``wrap_model_call`` around ``handler``."""
        return handler(request) if self._model is None else self._model(request, handler)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        """Async twin of :meth:`wrap_model_call`."""
        return await (handler(request) if self._amodel is None else self._amodel(request, handler))

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Run the steps' ``wrap_tool_call`` around ``handler``."""
        return handler(request) if self._tool is None else self._tool(request, handler)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """Async twin of :meth:`wrap_tool_call`."""
        return await (handler(request) if self._atool is None else self._atool(request, handler))


class _Carrier(AgentMiddleware):
    """No hooks: only brings a step's state schema and tools into the agent."""

    def __init__(self, step: AgentMiddleware) -> None:
        super().__init__()
        self.state_schema = step.state_schema
        self.tools = list(getattr(step, "tools", []) or [])
        self._name = f"{step.name}State"  # the step's name is unique; its class may not be

    @property
    def name(self) -> str:
        """Unique per carried step (LangChain requires unique middleware names)."""
        return self._name


NODE_HOOKS = (
    "before_agent",
    "abefore_agent",
    "before_model",
    "abefore_model",
    "after_model",
    "aafter_model",
    "after_agent",
    "aafter_agent",
)


def has_node_hooks(mw: AgentMiddleware) -> bool:
    """Whether ``mw`` adds graph nodes (before/after hooks), which a chain cannot carry."""
    return any(overrides(mw, hook) for hook in NODE_HOOKS)


def compose(middlewares: Sequence[AgentMiddleware]) -> list[AgentMiddleware]:
    """``middlewares`` with each run of wrapper-only ones folded into one chained layer.

    Middlewares with node hooks stay as they are and split the runs, so every hook keeps its
    place in LangChain's order: the result behaves exactly like the input, with fewer layers.
    """
    out: list[AgentMiddleware] = []
    carriers: list[AgentMiddleware] = []
    run: list[AgentMiddleware] = []

    def flush() -> None:
        if len(run) == 1:
            out.append(run[0])
        elif run:
            out.append(ChainedMiddleware(run))
            carriers.extend(
                _Carrier(s)
                for s in run
                if s.state_schema is not getattr(AgentMiddleware, "state_schema") or getattr(s, "tools", None)  # noqa: B009  # mypy reads the class attribute as an instance variable
            )
        run.clear()

    for mw in middlewares:
        if has_node_hooks(mw):
            flush()
            out.append(mw)
        else:
            run.append(mw)
    flush()
    return out + carriers
