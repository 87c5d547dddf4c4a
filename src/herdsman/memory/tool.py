"""The ``memory`` tool: the agent reads the user's memory, and (mode tool/both) changes their facts.

``action=search`` finds facts; ``action=about`` answers "what do we know about X" from the graph:
the entity, what is true of it now and what used to be (closed relations, with dates). With
``memory.mode: tool`` (or ``both``) the tool also adds, updates and deletes facts; with ``auto``
the lead gets it read-only (the memory model does the writing), and sub-agents never get it. The
user comes from the run (``configurable.user_id``), never from the model; a user who turned their
memory off gets nothing from it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool, StructuredTool, ToolException

from herdsman.memory.audit import Origin
from herdsman.memory.facts import CATEGORIES, Fact
from herdsman.memory.injection import keywords, rank
from herdsman.memory.recall import GraphView, describe, named
from herdsman.memory.retention import within_retention
from herdsman.memory.service import MemoryService, user_id_of

MAX_RESULTS = 20

READ = (
    "Long-term memory about the user, kept across conversations. action=search finds facts "
    "(query: words to look for; empty lists the strongest); action=about tells what is known about a "
    "person, project, repository or service (query: its name), now and before. "
)
WRITE = (
    "action=add stores one self-contained fact (content, category); action=update changes a fact by its "
    f"id; action=delete forgets one. Categories: {', '.join(CATEGORIES)}. Store only lasting things "
    "(preferences, profile, projects), never secrets."
)


def about(service: MemoryService, user: str, query: str) -> str:
    """What the user's graph knows about the entities ``query`` names (or whose names share its words)."""
    _, _, entities, relations = within_retention(service.store, service.config, user)
    view = GraphView(entities, relations)
    found = named(view.entities, query) or [
        e for e in view.entities if keywords(query) & keywords(" ".join((e.name, *e.aliases)))
    ]
    if not found:
        known = ", ".join(e.name for e in view.entities[:MAX_RESULTS]) or "none yet"
        return f"Nothing is known about {query!r}. Known entities: {known}."
    return "\n\n".join(describe(view, e) for e in found[:5])


def make_memory_tool(service: MemoryService, writable: bool = True) -> BaseTool:
    """The ``memory`` tool bound to ``service`` (read-only unless ``writable``)."""

    def memory(
        action: Annotated[Literal["search", "about", "add", "update", "delete"], "What to do."],
        runtime: ToolRuntime[Any, dict[str, Any]],
        query: Annotated[str, "search: words to look for; about: a name."] = "",
        content: Annotated[str, "add/update: the fact, one sentence."] = "",
        category: Annotated[str, "add/update: the kind of fact (update: empty keeps it)."] = "",
        fact_id: Annotated[str, "update/delete: the id shown by search."] = "",
    ) -> str:
        configurable = (runtime.config or {}).get("configurable") or {}
        user = user_id_of(configurable, service.config.user_id)
        origin = Origin("tool", configurable.get("thread_id"), configurable.get("run_id"))
        store = service.store
        if not store.enabled_for(user):
            return "The user turned their memory off: nothing is remembered or looked up."
        if action == "search":
            facts = rank(within_retention(store, service.config, user)[0], query, service.config.embedding_model)[
                :MAX_RESULTS
            ]
            if not facts:
                return "No facts remembered yet." if not query else f"No facts match {query!r}."
            return "\n".join(f"{f.id}: [{f.category}] {f.content} (confidence {f.confidence:.1f})" for f in facts)
        if action == "about":
            if not query.strip():
                raise ToolException("about needs query: the name of a person, project, repository or service")
            return about(service, user, query)
        if not writable:
            raise ToolException(f"{action} is not available: memory is written by the memory model after each turn")
        if action == "add":
            if len(content.strip()) < 3:
                raise ToolException("add needs content: the fact to remember, as one sentence")
            fact = store.put(user, Fact.new(content, category or "other", 0.9, origin.thread_id), origin)
            return f"Remembered {fact.id}: {fact.content}"
        if not fact_id:
            raise ToolException(f"{action} needs fact_id; find it with action=search")
        if action == "update":
            if not content.strip() and not category:
                raise ToolException("update needs the new content or category")
            updated = store.update(
                user, fact_id, content=content.strip() or None, category=category or None, origin=origin
            )
            if updated is None:
                raise ToolException(f"no fact {fact_id!r}; find ids with action=search")
            return f"Updated {fact_id} -> {updated.id}: {updated.content}"
        if not store.delete(user, fact_id, origin):
            raise ToolException(f"no fact {fact_id!r}; find ids with action=search")
        return f"Forgot {fact_id}."

    description = READ + (WRITE if writable else "It is read-only: memory is learned after each turn.")
    return StructuredTool.from_function(func=memory, name="memory", description=description, handle_tool_error=True)
