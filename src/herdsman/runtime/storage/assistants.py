"""Assistants (custom agents): their records and versions, and the config a run on one gets.

An assistant is the lead agent with settings of its own (see :mod:`herdsman.agents.profile`),
as LangGraph's server keeps them: ``config``, ``context`` (mirrored into
``config.configurable``), ``metadata`` (the owner is ``metadata.owner``, like a thread's), a
name and a description. Every change is a new version; any version can be made the latest
again. Records live in the gateway's record store (``record_store.py``: memory, SQLite or
Postgres), the current one under ``herdsman_assistants`` and each version under
``herdsman_assistant_versions/<assistant_id>``.

The built-in ``lead_agent`` (:func:`builtin_assistant`) is not stored: it is the lead as
config.yaml makes it, read-only, seen by every user.

:func:`run_config_on` is the one place where an assistant's settings meet a run's own config.

Versions are numbered under a lock of this process: two gateway processes changing the same
assistant at the same moment may both write the same version number (the later one wins).
Making a version the latest brings back its context too (LangGraph's in-memory server brings
back only its config, leaving the two out of step).
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from langgraph.store.base import BaseStore

from herdsman.agents.lead import LEAD_AGENT_NAME, recursion_limit
from herdsman.middleware.agent_profile import MAX_STEPS
from herdsman.runtime.storage.threads import SCAN_LIMIT, metadata_contains, utc_now

ASSISTANTS_NS = ("herdsman_assistants",)
VERSIONS_NS = "herdsman_assistant_versions"
BUILTIN_CREATED_AT = "2026-01-01T00:00:00+00:00"
SORT_KEYS = ("assistant_id", "graph_id", "name", "created_at", "updated_at")


class AssistantExistsError(Exception):
    """``POST /assistants`` with the id of an assistant that exists and ``if_exists: raise``."""


class BothConfigurableAndContextError(ValueError):
    """An assistant given both ``config.configurable`` and ``context`` (LangGraph refuses it too)."""

    def __init__(self) -> None:
        super().__init__(
            "Cannot specify both config.configurable and context; send the agent's settings in context alone "
            "(it is mirrored into config.configurable)"
        )


@dataclass
class AssistantRecord:
    """One assistant (or one version of it) as LangGraph's API shows it."""

    assistant_id: str
    graph_id: str
    created_at: str
    updated_at: str
    name: str
    config: dict[str, Any] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    version: int = 1
    description: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The record as a JSON-ready dict."""
        return asdict(self)


def builtin_assistant() -> AssistantRecord:
    """The built-in assistant: the lead agent as config.yaml makes it."""
    return AssistantRecord(
        assistant_id=LEAD_AGENT_NAME,
        graph_id=LEAD_AGENT_NAME,
        created_at=BUILTIN_CREATED_AT,
        updated_at=BUILTIN_CREATED_AT,
        name=LEAD_AGENT_NAME,
        metadata={"created_by": "system"},
        description="Herdsman's lead agent: plans, delegates to sub-agents and works in a sandbox.",
    )


def mirrored(
    config: dict[str, Any] | None, context: dict[str, Any] | None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``config`` and ``context`` kept in step as LangGraph's server keeps them: a
    ``config.configurable`` becomes the context, a context becomes ``config.configurable``."""
    config = dict(config or {})
    if config.get("configurable") and context:
        raise BothConfigurableAndContextError()
    if config.get("configurable"):
        context = dict(config["configurable"])
    elif context:
        config["configurable"] = dict(context)
    return config, context


def run_config_on(
    assistant: AssistantRecord, config: dict[str, Any] | None, context: dict[str, Any] | None
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The ``config`` and ``context`` of a run on ``assistant``: the assistant's config with the
    run's own keys winning (``configurable`` merged key by key, as LangGraph's server does), and
    ``max_steps`` turned into a recursion limit unless the run sets one.

    The assistant's context is its ``configurable`` (they are kept mirrored), which is how its
    settings reach the lead; the graph's context schema (``RunContext``) is a TypedDict, which
    LangGraph does not coerce, so the run's context is passed on as the client sent it (plus the
    run scope the run manager adds), not merged with the assistant's.
    """
    own = dict(config or {})
    if not isinstance(own.get("configurable") or {}, dict):
        return config, context  # left as sent: the run manager refuses it, naming the field
    merged = {**assistant.config, **own}
    configurable = {**(assistant.config.get("configurable") or {}), **(own.get("configurable") or {})}
    if configurable:
        merged["configurable"] = configurable
    steps = configurable.get(MAX_STEPS)
    if "recursion_limit" not in own and isinstance(steps, int) and not isinstance(steps, bool):
        merged["recursion_limit"] = recursion_limit(steps)
    return (merged or config), context


class AssistantStore:
    """Assistants and their versions in a ``BaseStore``."""

    def __init__(self, store: BaseStore) -> None:
        self.store = store
        self._lock = asyncio.Lock()  # one change at a time, so versions are numbered without gaps

    async def get(self, assistant_id: str) -> AssistantRecord | None:
        """The assistant's latest record, or None."""
        item = await self.store.aget(ASSISTANTS_NS, assistant_id)
        return AssistantRecord(**item.value) if item is not None else None

    async def _put(self, record: AssistantRecord, *, new_version: bool = True) -> None:
        await self.store.aput(ASSISTANTS_NS, record.assistant_id, record.to_dict())
        if new_version:
            await self.store.aput((VERSIONS_NS, record.assistant_id), str(record.version), record.to_dict())

    async def create(
        self,
        *,
        graph_id: str,
        name: str,
        assistant_id: str | None = None,
        config: dict[str, Any] | None = None,
        context: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        description: str | None = None,
        if_exists: Literal["raise", "do_nothing"] = "raise",
    ) -> AssistantRecord:
        """A new assistant at version 1 (a fresh id when ``assistant_id`` is None)."""
        config, context = mirrored(config, context)
        assistant_id = assistant_id or str(uuid.uuid4())
        async with self._lock:
            existing = await self.get(assistant_id)
            if existing is not None:
                if if_exists == "do_nothing":
                    return existing
                raise AssistantExistsError(assistant_id)
            now = utc_now()
            record = AssistantRecord(
                assistant_id,
                graph_id,
                now,
                now,
                name,
                config,
                dict(context or {}),
                dict(metadata or {}),
                1,
                description,
            )
            await self._put(record)
        return record

    async def update(
        self,
        assistant_id: str,
        *,
        graph_id: str | None = None,
        config: dict[str, Any] | None = None,
        context: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        name: str | None = None,
        description: str | None = None,
    ) -> AssistantRecord | None:
        """A new version: given fields replace the latest's (``metadata`` is merged into it);
        None when the assistant is unknown."""
        config, context = mirrored(config, context)
        async with self._lock:
            record = await self.get(assistant_id)
            if record is None:
                return None
            versions = await self.store.asearch((VERSIONS_NS, assistant_id), limit=SCAN_LIMIT)
            record.version = max([int(v.key) for v in versions] + [record.version]) + 1
            record.graph_id = graph_id or record.graph_id
            if config:
                record.config = config
            if context is not None:
                record.context = context
            record.metadata = {**record.metadata, **(metadata or {})}
            record.name = name if name is not None else record.name
            record.description = description if description is not None else record.description
            record.updated_at = utc_now()
            await self._put(record)
        return record

    async def versions(
        self, assistant_id: str, *, metadata: dict[str, Any] | None = None, limit: int = 10, offset: int = 0
    ) -> list[AssistantRecord]:
        """The assistant's versions, newest first."""
        items = await self.store.asearch((VERSIONS_NS, assistant_id), limit=SCAN_LIMIT)
        found = [
            AssistantRecord(**i.value) for i in items if metadata_contains(i.value.get("metadata") or {}, metadata)
        ]
        found.sort(key=lambda r: r.version, reverse=True)
        return found[offset : offset + limit]

    async def set_latest(self, assistant_id: str, version: int) -> AssistantRecord | None:
        """Make ``version`` the assistant's current one (None when that version does not exist)."""
        async with self._lock:
            item = await self.store.aget((VERSIONS_NS, assistant_id), str(version))
            current = await self.get(assistant_id)
            if item is None or current is None:
                return None
            record = AssistantRecord(**item.value)
            record.created_at = current.created_at
            record.updated_at = utc_now()
            await self._put(record, new_version=False)
        return record

    async def delete(self, assistant_id: str) -> bool:
        """Forget the assistant and all its versions; False when it did not exist."""
        async with self._lock:
            for item in await self.store.asearch((VERSIONS_NS, assistant_id), limit=SCAN_LIMIT):
                await self.store.adelete((VERSIONS_NS, assistant_id), item.key)
            if await self.get(assistant_id) is None:
                return False
            await self.store.adelete(ASSISTANTS_NS, assistant_id)
        return True

    async def all(self) -> list[AssistantRecord]:
        """Every stored assistant (callers filter by owner and sort)."""
        items = await self.store.asearch(ASSISTANTS_NS, limit=SCAN_LIMIT)
        return [AssistantRecord(**i.value) for i in items]


def search_assistants(
    records: list[AssistantRecord],
    *,
    graph_id: str | None = None,
    name: str | None = None,
    metadata: dict[str, Any] | None = None,
    sort_by: str | None = None,
    sort_order: str | None = None,
) -> list[AssistantRecord]:
    """The records matching the filters, sorted as LangGraph's server sorts them (newest first
    by default; names and graph ids without regard to case)."""
    found = [
        r
        for r in records
        if (not graph_id or r.graph_id == graph_id)
        and (not name or name.lower() in r.name.lower())
        and metadata_contains(r.metadata, metadata)
    ]
    key = sort_by.lower() if sort_by and sort_by.lower() in SORT_KEYS else "created_at"
    reverse = not (sort_order and sort_order.lower() == "asc")
    if key in ("name", "graph_id"):
        found.sort(key=lambda r: str(getattr(r, key)).lower(), reverse=reverse)
    else:
        found.sort(key=lambda r: str(getattr(r, key)), reverse=reverse)
    return found
