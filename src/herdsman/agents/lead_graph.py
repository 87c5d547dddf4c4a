"""The compiled lead graph: LangGraph's ``CompiledStateGraph``, whose every invocation has a run scope.

A run's scope (sub-agent gate, per-run cap, token budget, running sub-agents) travels in the
runtime context (see :mod:`herdsman.turns.run_scope`). The run manager and the embedded
client make one per run and pass it; an invocation that brings none (a test, LangGraph
Studio-style ``invoke``, a script) gets a fresh one here, from ``subagents:`` and the call's
``configurable``. So every invocation has its own, and none is kept anywhere once it ends.

Written as a subclass because LangGraph has no hook that runs once per invocation before the
first node (a node cannot add to a context that is None); only ``stream``/``astream`` are
overridden, and ``invoke``, ``ainvoke`` and ``astream_events`` all go through them.

It also shows only the graph's output schema: the middlewares' bookkeeping keys marked
``PrivateStateAttr`` (LangChain's way, e.g. ``files_read``, ``preexisting``) are checkpointed and
read by the nodes as before, but LangGraph shows every channel in ``get_state``, ``values`` and
``updates`` and leaves them out of ``invoke``'s result only; here they are left out of all of them
(its ``stream_channels`` are its output channels), so API clients never see them. A run from an
earlier checkpoint, or ``update_state`` on one, still starts from all of its channels.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from herdsman.config.schema import SubagentsConfig
from herdsman.turns.run_scope import open_scope, scope_in, with_scope


class LeadGraph(CompiledStateGraph[Any, Any, Any, Any]):
    """The lead agent's graph; gives an invocation without a run scope a fresh one."""

    def __init__(self, *, run_settings: SubagentsConfig, **kwargs: Any) -> None:
        """``run_settings``: the ``subagents:`` section (defaults of a new scope's limits);
        ``kwargs``: those of :class:`CompiledStateGraph`."""
        super().__init__(**kwargs)
        self.run_settings = run_settings

    @classmethod
    def of(cls, graph: CompiledStateGraph[Any, Any, Any, Any], run_settings: SubagentsConfig) -> LeadGraph:
        """``graph`` (as ``create_agent`` compiled it) as a lead graph (built as LangGraph's own
        ``copy`` does, from the graph's attributes)."""
        attrs = {k: v for k, v in graph.__dict__.items() if k not in ("__orig_class__", "run_settings")}
        attrs["stream_channels"] = graph.output_channels  # private keys: kept, not shown (see the module docstring)
        return cls(run_settings=run_settings, **attrs)

    def run_context(self, context: Any, config: Any) -> Any:
        """``context`` when it carries a scope; else a copy with a fresh scope for this invocation."""
        if scope_in(context) is not None:
            return context
        return with_scope(context, open_scope(self.run_settings, config))

    def stream(self, input: Any, config: Any = None, *, context: Any = None, **kwargs: Any) -> Iterator[Any]:
        """LangGraph's ``stream``, with a run scope in ``context``."""
        return super().stream(input, config, context=self.run_context(context, config), **kwargs)

    def astream(self, input: Any, config: Any = None, *, context: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
        """LangGraph's ``astream``, with a run scope in ``context``."""
        return super().astream(input, config, context=self.run_context(context, config), **kwargs)
