"""Run several middlewares' model-call and tool-call wrappers as ONE LangChain middleware layer.

Why hand-written: LangChain composes each middleware's ``wrap_model_call`` as its own layer, and
each layer costs about 0.25 ms per agent step here (measured with no-op middlewares: 1.8 ms per
step with none, 2.9 ms with five). Herdsman has half a dozen small wrappers, each in its own
module; composing them with plain closures keeps the per-step cost near a bare LangGraph loop
(see ``benchmarks/step_overhead.py``) while every step stays a small class of its own.

Semantics follow LangChain's composer: the first step is the outermost; a step's handler returns
a ``ModelResponse`` (an ``ExtendedModelResponse`` from an inner step is unwrapped and its command
kept, and commands are cleared when a step calls its handler again, as on a retry). State schemas
and tools of the steps are carried by small hook-less middlewares, which add no layer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage
from langgraph.types import Command


def overrides(mw: AgentMiddleware, name: str) -> bool:
    """Whether ``mw``'s class implements the hook ``name`` itself."""
    return getattr(type(mw), name, None) is not getattr(AgentMiddleware, name, None)


def _as_response(result: Any) -> ModelResponse:
    if isinstance(result, AIMessage):
        return ModelResponse(result=[result])
    return result


def _merge_commands(commands: list[Command]) -> Command | None:
    if not commands:
        return None
    if len(commands) == 1:
        return commands[0]
    update: dict[str, Any] = {}
    for command in commands:
        update.update(command.update or {})
    return Command(update=update)


class _Commands:
    """Commands returned by inner steps during one model call."""

    def __init__(self) -> None:
        self.items: list[Command] = []

    def unwrap(self, result: Any) -> ModelResponse:
        """The model response inside ``result``, keeping any command it carries."""
        if isinstance(result, ExtendedModelResponse):
            if result.command is not None:
                self.items.append(result.command)
            return result.model_response
        return _as_response(result)

    def wrap(self, response: Any) -> Any:
        """``response`` with the commands collected so far merged into one, if any."""
        response = self.unwrap(response)
        command = _merge_commands(self.items)
        return ExtendedModelResponse(model_response=response, command=command) if command else response


class ChainedMiddleware(AgentMiddleware):
    """The model- and tool-call wrappers of ``steps``, composed in one layer."""

    def __init__(self, steps: Sequence[AgentMiddleware]) -> None:
        """``steps``: middlewares in order, outermost first."""
        super().__init__()
        self.steps = list(steps)
        self._model_steps = [s for s in self.steps if overrides(s, "awrap_model_call") or overrides(s, "wrap_model_call")]
        self._tool_steps = [s for s in self.steps if overrides(s, "awrap_tool_call") or overrides(s, "wrap_tool_call")]

    @property
    def name(self) -> str:
        """Names the steps, so traces stay readable."""
        return "Chain(" + ",".join(type(s).__name__ for s in self.steps) + ")"

    # -- model calls ----------------------------------------------------------------------

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        """Run the steps' ``wrap_model_call`` around ``handler``."""
        commands = _Commands()

        def call(index: int, req: ModelRequest) -> ModelResponse:
            if index == len(self._model_steps):
                return _as_response(handler(req))
            step = self._model_steps[index]

            def inner(r: ModelRequest) -> ModelResponse:
                return commands.unwrap(call(index + 1, r))

            return step.wrap_model_call(req, inner)

        return commands.wrap(call(0, request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        """Async twin of :meth:`wrap_model_call`."""
        commands = _Commands()

        async def call(index: int, req: ModelRequest) -> Any:
            if index == len(self._model_steps):
                return _as_response(await handler(req))
            step = self._model_steps[index]

            async def inner(r: ModelRequest) -> ModelResponse:
                return commands.unwrap(await call(index + 1, r))

            return await step.awrap_model_call(req, inner)

        return commands.wrap(await call(0, request))

    # -- tool calls -----------------------------------------------------------------------

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Run the steps' ``wrap_tool_call`` around ``handler``."""

        def call(index: int, req: Any) -> Any:
            if index == len(self._tool_steps):
                return handler(req)
            return self._tool_steps[index].wrap_tool_call(req, lambda r: call(index + 1, r))

        return call(0, request)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """Async twin of :meth:`wrap_tool_call`."""

        async def call(index: int, req: Any) -> Any:
            if index == len(self._tool_steps):
                return await handler(req)

            async def inner(r: Any) -> Any:
                return await call(index + 1, r)

            return await self._tool_steps[index].awrap_tool_call(req, inner)

        return await call(0, request)


class _Carrier(AgentMiddleware):
    """No hooks: only brings a step's state schema and tools into the agent."""

    def __init__(self, step: AgentMiddleware) -> None:
        super().__init__()
        self.state_schema = step.state_schema
        self.tools = list(getattr(step, "tools", []) or [])
        self._name = f"{type(step).__name__}State"

    @property
    def name(self) -> str:
        """Unique per carried step (LangChain requires unique middleware names)."""
        return self._name


NODE_HOOKS = ("before_agent", "abefore_agent", "before_model", "abefore_model", "after_model", "aafter_model",
              "after_agent", "aafter_agent")


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
                _Carrier(s) for s in run if s.state_schema is not AgentMiddleware.state_schema or getattr(s, "tools", None)
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
