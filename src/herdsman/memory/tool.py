"""The ``memory`` tool: the agent searches, adds, updates and deletes the user's facts itself.

Used with ``memory.mode: tool`` (or ``both``), as an alternative to automatic updates. The user
comes from the run (``configurable.user_id``), never from the model.
"""

from __future__ import annotations

from typing import Annotated, Literal

from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool, StructuredTool, ToolException

from herdsman.memory.facts import CATEGORIES, Fact
from herdsman.memory.injection import rank
from herdsman.memory.service import MemoryService, user_id_of

MAX_RESULTS = 20

DESCRIPTION = (
    "Long-term memory about the user, kept across conversations. action=search finds facts "
    "(query: words to look for; empty lists the strongest); action=add stores one self-contained "
    "fact (content, category); action=update changes a fact by its id; action=delete forgets one. "
    f"Categories: {', '.join(CATEGORIES)}. Store only lasting things (preferences, profile, "
    "projects), never secrets."
)


def make_memory_tool(service: MemoryService) -> BaseTool:
    """The ``memory`` tool bound to ``service``."""

    def memory(
        action: Annotated[Literal["search", "add", "update", "delete"], "What to do."],
        runtime: ToolRuntime,
        query: Annotated[str, "search: words to look for."] = "",
        content: Annotated[str, "add/update: the fact, one sentence."] = "",
        category: Annotated[str, "add/update: the kind of fact (update: empty keeps it)."] = "",
        fact_id: Annotated[str, "update/delete: the id shown by search."] = "",
    ) -> str:
        user = user_id_of((runtime.config or {}).get("configurable"), service.config.user_id)
        thread = ((runtime.config or {}).get("configurable") or {}).get("thread_id")
        store = service.store
        if action == "search":
            facts = rank(store.facts(user), query, service.config.embedding_model)[:MAX_RESULTS]
            if not facts:
                return "No facts remembered yet." if not query else f"No facts match {query!r}."
            return "\n".join(f"{f.id}: [{f.category}] {f.content} (confidence {f.confidence:.1f})" for f in facts)
        if action == "add":
            if len(content.strip()) < 3:
                raise ToolException("add needs content: the fact to remember, as one sentence")
            fact = store.put(user, Fact.new(content, category or "other", 0.9, thread))
            return f"Remembered {fact.id}: {fact.content}"
        if not fact_id:
            raise ToolException(f"{action} needs fact_id; find it with action=search")
        if action == "update":
            if not content.strip() and not category:
                raise ToolException("update needs the new content or category")
            fact = store.update(user, fact_id, content=content.strip() or None, category=category or None)
            if fact is None:
                raise ToolException(f"no fact {fact_id!r}; find ids with action=search")
            return f"Updated {fact_id} -> {fact.id}: {fact.content}"
        if not store.delete(user, fact_id):
            raise ToolException(f"no fact {fact_id!r}; find ids with action=search")
        return f"Forgot {fact_id}."

    return StructuredTool.from_function(func=memory, name="memory", description=DESCRIPTION, handle_tool_error=True)
