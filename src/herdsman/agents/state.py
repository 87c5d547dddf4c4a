"""The lead agent's thread state schema.

LangChain's ``AgentState`` (messages, jump_to, structured_response) plus what Herdsman keeps
per thread. Middlewares add their own keys through their ``state_schema``; the keys here are the
ones clients read directly.
"""

from __future__ import annotations

from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import AgentState

from herdsman.models.usage import merge_usage


class ThreadState(AgentState):
    """State of one thread: the conversation, its title, and token usage per agent."""

    title: NotRequired[str]
    usage: NotRequired[Annotated[dict[str, Any], merge_usage]]
