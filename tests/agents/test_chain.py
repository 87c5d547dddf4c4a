"""The middleware composer is LangChain's: the same conversations through ``compose(mws)`` and
through ``mws`` give the same states, commands and retries, sync and async."""

from __future__ import annotations

import operator
from typing import Annotated, Any, NotRequired

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, AgentState, ExtendedModelResponse
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from herdsman.middleware.chain import ChainedMiddleware, compose
from herdsman.models.scripted import ScriptedChatModel


class NotesState(AgentState):
    notes: NotRequired[Annotated[list[str], operator.add]]


class Labelled(AgentMiddleware):
    """A middleware named by its class and a label, so one class can be used twice."""

    def __init__(self, label: str) -> None:
        super().__init__()
        self.label = label

    @property
    def name(self) -> str:
        return f"{type(self).__name__}{self.label}"


class Noting(Labelled):
    """Returns a command with each response: a note, added through the list's reducer (two
    commands setting one plain key in a step is an error in LangGraph, composed or not)."""

    state_schema = NotesState

    def wrap_model_call(self, request, handler):
        response = handler(request)
        return ExtendedModelResponse(model_response=response, command=Command(update={"notes": [self.label]}))

    async def awrap_model_call(self, request, handler):
        response = await handler(request)
        return ExtendedModelResponse(model_response=response, command=Command(update={"notes": [self.label]}))


class Retrying(Labelled):
    """Calls the model again when it says "flaky-<label>": the commands of the layers inside it
    from the first call must go."""

    def wrap_model_call(self, request, handler):
        response = handler(request)
        return handler(request) if response.result[0].text == f"flaky-{self.label}" else response

    async def awrap_model_call(self, request, handler):
        response = await handler(request)
        return await handler(request) if response.result[0].text == f"flaky-{self.label}" else response


class Prompting(AgentMiddleware):
    """Changes the request: a system message the model sees."""

    def wrap_model_call(self, request, handler):
        return handler(request.override(system_message=SystemMessage("be brief")))

    async def awrap_model_call(self, request, handler):
        return await handler(request.override(system_message=SystemMessage("be brief")))


class Wrapping(Labelled):
    """Changes tool results."""

    def wrap_tool_call(self, request, handler):
        result = handler(request)
        return ToolMessage(f"{self.label}({result.content})", tool_call_id=result.tool_call_id, name=result.name)

    async def awrap_tool_call(self, request, handler):
        result = await handler(request)
        return ToolMessage(f"{self.label}({result.content})", tool_call_id=result.tool_call_id, name=result.name)


class Hooked(AgentMiddleware):
    """A node hook between the wrappers, which splits them into two chains."""

    def after_model(self, state, runtime):
        return None


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


SCRIPT = ["flaky-outer", {"tool_calls": [{"name": "echo", "args": {"text": "hi"}}]}, "flaky-inner", "done"]


def middlewares() -> list[AgentMiddleware]:
    return [
        Noting("outer"),
        Retrying("outer"),
        Noting("mid"),
        Prompting(),
        Wrapping("a"),
        Hooked(),
        Noting("inner"),
        Wrapping("b"),
        Retrying("inner"),
    ]


async def conversation(mws: list[AgentMiddleware], use_async: bool) -> tuple[list[Any], list[Any]]:
    model = ScriptedChatModel(responses=list(SCRIPT))
    agent = create_agent(model, tools=[echo], middleware=mws, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    request = {"messages": [HumanMessage("go")]}
    if use_async:
        steps = [chunk async for chunk in agent.astream(request, config, stream_mode="updates")]
        state = (await agent.aget_state(config)).values
    else:
        steps = list(agent.stream(request, config, stream_mode="updates"))
        state = agent.get_state(config).values
    seen = [[(type(m).__name__, m.text) for m in call.messages] for call in model.calls]
    return [_plain(steps), _plain(state)], seen


def _plain(value: Any) -> Any:
    """Messages without their generated ids, so two runs compare by content."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (AIMessage, HumanMessage, ToolMessage, SystemMessage)):
        return (type(value).__name__, value.text, [c["name"] for c in getattr(value, "tool_calls", [])])
    if isinstance(value, Command):
        return ("Command", _plain(value.update))
    return value


@pytest.mark.parametrize("use_async", [False, True])
async def test_compose_behaves_exactly_like_langchains_own_layers(use_async: bool) -> None:
    composed = compose(middlewares())
    assert sum(isinstance(m, ChainedMiddleware) for m in composed) == 2  # really folded
    plain_result, plain_seen = await conversation(middlewares(), use_async)
    composed_result, composed_seen = await conversation(composed, use_async)
    assert composed_result == plain_result
    assert composed_seen == plain_seen
    # and what LangChain does, spelled out: each layer's command applied through the reducer,
    # inner first, and a retry drops the commands of the call it retried
    state = plain_result[1]
    assert state["notes"] == ["inner", "mid", "outer"] * 2
    tool_results = [m for m in state["messages"] if m[0] == "ToolMessage"]
    assert tool_results == [("ToolMessage", "a(b(hi))", [])]
    assert all(call[0] == ("SystemMessage", "be brief") for call in plain_seen)
